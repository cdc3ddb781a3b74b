# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""campaign_plan's GPU pools and parallel waves: slots, waves on disjoint GPUs, stages that run alone,
disjoint CPU sets within a wave, the interference stage, and their lines in plan_lines. The host is the seeds' CT200
(test_plan.ct200_facts: GPU0 held by ddtree-qwen.service) with the simulated CT200's topology (GPU0-3 on node 0,
GPU4-7 on node 1)."""

from __future__ import annotations

import copy
import json
import re

import pytest

from ansible.errors import AnsibleFilterError
from ansible.module_utils import _internal as _module_internal
from ansible_collections.specdec.bench.plugins.plugin_utils.plan import campaign_plan
from ansible_collections.specdec.bench.plugins.filter.plan_lines import plan_lines
from ansible_collections.specdec.bench.plugins.module_utils._host_probe import parse_cpu_list
from test_plan import CT200_UUIDS, DDTREE_BUILD, ct200_facts, ct200_spec  # noqa: E402  pylint: disable=import-error
from test_plan_pinning import NODE0_CPUS, NODE1_CPUS, ct200_gpus  # noqa: E402  pylint: disable=import-error

_module_internal.is_controller = False


@pytest.fixture(autouse=True)
def _controller_mode(monkeypatch):
    monkeypatch.setattr(_module_internal, 'is_controller', True)


STOPPABLE = ['ddtree-qwen.service']
PER_TP = ['autoregressive', 'dflash-n16', 'ddtree-b32-k4', 'ddtree-b64-k4', 'ddtree-b128-k4']
POOLED_TP = [{'size': 1, 'pool': [1, 2, 3, 4, 5, 6, 7]}, {'size': 4, 'gpus': [1, 2, 3, 4]}, {'size': 8}]


def facts(online='0-191', numa_nodes='0-1', holder=True):
    """The seeds' CT200 facts with each GPU's topology and the host's CPUs (all 192 online unless told)."""
    host = ct200_facts()
    for gpu, layout in zip(host['nvidia_gpus'], ct200_gpus()):
        gpu['topology'] = layout['topology']
        if not holder:
            gpu['processes'] = []
    host['specdec_host']['cpu'] = {'count': 192, 'usable': 192, 'online': online, 'numa_nodes': numa_nodes, 'allowed': online}
    return host


def spec(tp=None, parallel=True, **more):
    result = ct200_spec()
    result['tp'] = copy.deepcopy(POOLED_TP if tp is None else tp)
    if parallel is not None:
        result['parallel'] = parallel
    result.update(more)
    return result


def plan(host=None, campaign_spec=None, **inputs):
    inputs.setdefault('stoppable', STOPPABLE)
    inputs.setdefault('build', DDTREE_BUILD)
    return campaign_plan(facts() if host is None else host, spec() if campaign_spec is None else campaign_spec, inputs)


def by_id(stages):
    return dict((stage['id'], stage) for stage in stages)


def cpus(stage):
    return set(parse_cpu_list(stage['cpu_affinity']))


# --- validation ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('entry, field, allowed', [
    ({'size': 1, 'pool': 3}, r'tp\[0\]\.pool is 3', 'a list of at least 1 distinct GPU indices'),
    ({'size': 1, 'pool': [1, 2, 1]}, r'tp\[0\]\.pool\[2\] lists GPU 1 twice', 'distinct GPU indices'),
    ({'size': 1, 'pool': [1, -2]}, r'tp\[0\]\.pool\[1\] is -2', r'a GPU index \(0, 1, 2, \.\.\.\)'),
    ({'size': 1, 'pool': [1, True]}, r'tp\[0\]\.pool\[1\] is True', 'a GPU index'),
    ({'size': 4, 'pool': [1, 2, 3]}, r'tp\[0\]\.pool lists 3 GPU\(s\) for size 4', r'a list of at least 4 distinct GPU indices \(tp size 4\)'),
    ({'size': 1, 'gpus': [1], 'pool': [1, 2]}, r'tp\[0\]\.pool is given together with tp\[0\]\.gpus', 'either gpus .* or pool'),
    ({'size': 1, 'pool': [1, 2], 'slots': 2}, r'tp\[0\] has unknown key\(s\) slots', 'size, gpus, id, pool'),
])
def test_a_bad_pool_is_refused_naming_the_field_and_what_is_allowed(entry, field, allowed):
    with pytest.raises(AnsibleFilterError, match='campaign_plan: %s.*; allowed: .*%s' % (field, allowed)):
        plan(campaign_spec=spec(tp=[entry]))


def test_two_entries_with_the_same_pool_are_duplicate_stages_and_different_pools_are_not():
    with pytest.raises(AnsibleFilterError, match=r'tp\[1\] repeats tp\[0\] \(size 1, pool \[1, 2\]: duplicate stages\)'):
        plan(campaign_spec=spec(tp=[{'size': 1, 'pool': [1, 2]}, {'size': 1, 'pool': [1, 2], 'id': 'again'}]))
    stages = plan(campaign_spec=spec(tp=[{'size': 1, 'pool': [1, 2]}, {'size': 1, 'pool': [3, 4], 'id': 'other'}]))
    assert [stage['gpu_indices'] for stage in stages[:2]] == [[1], [2]]
    assert stages[5]['id'] == 'other-autoregressive' and stages[5]['gpu_indices'] == [3]


def test_a_pool_gpu_the_host_does_not_have_fails_when_strict_and_is_infeasible_when_not():
    with pytest.raises(AnsibleFilterError, match=r"tp\[0\]\.pool\[2\] lists GPU 9, which the host does not have; "
                                                 r"allowed: the host's GPU indices 0, 1, 2, 3, 4, 5, 6, 7"):
        plan(campaign_spec=spec(tp=[{'size': 1, 'pool': [1, 2, 9]}]))
    stages = plan(campaign_spec=spec(tp=[{'size': 1, 'pool': [1, 2, 9]}, {'size': 4, 'gpus': [1, 2, 3, 4]}]), strict=False)
    tp1 = [stage for stage in stages if stage['tp'] == 1 and not stage['interference_of']]
    assert len(tp1) == 5
    for stage in tp1:
        assert (stage['feasible'], stage['gpu_indices'], stage['wave'], stage['wave_stages']) == (False, [], None, [])
        assert stage['reason'] == 'pool GPU(s) 9 do not exist on the host (indices 0, 1, 2, 3, 4, 5, 6, 7)'
        assert stage['pool']['slots'] == []
    # infeasible stages take no wave: the TP4 stages are waves 1..5, each on its own
    assert [stage['wave'] for stage in stages if stage['tp'] == 4] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize('value', ['yes', 0, -2, 1.5, [2], {'stages': 2}])
def test_a_bad_parallel_is_refused(value):
    with pytest.raises(AnsibleFilterError, match=r'campaign_plan: parallel is %s; allowed: true, false or a number of stages >= 1'
                       % re.escape(repr(value))):
        plan(campaign_spec=spec(parallel=value))


# --- the CT200 in parallel -----------------------------------------------------------------------------------------

def test_ct200_tp1_stages_run_side_by_side_on_gpus_1_to_5():
    stages = plan()
    tp1 = stages[:5]
    assert [stage['id'] for stage in tp1] == ['tp1-%s' % name for name in PER_TP]
    assert [stage['gpu_indices'] for stage in tp1] == [[1], [2], [3], [4], [5]]
    assert [stage['gpus'] for stage in tp1] == [[uuid] for uuid in CT200_UUIDS[1:6]]
    assert [stage['env']['CUDA_VISIBLE_DEVICES'] for stage in tp1] == CT200_UUIDS[1:6]
    assert all(stage['wave'] == 1 and stage['wave_stages'] == [s['id'] for s in tp1] for stage in tp1)
    assert all(stage['alone'] is None and stage['interference_of'] is None for stage in tp1)
    assert [stage['description'].rsplit(' ', 1)[1] for stage in tp1] == ['1', '2', '3', '4', '5']
    assert tp1[0]['pool'] == {'tp': 'tp1', 'gpus': [1, 2, 3, 4, 5, 6, 7], 'size': 1, 'slots': [[i] for i in range(1, 8)], 'unused': []}


def test_ct200_cpu_sets_in_a_wave_are_disjoint_and_cover_each_nodes_cpus():
    tp1 = plan()[:5]
    # GPUs 1-3 share node 0's 96 CPUs, 32 each in consecutive chunks; GPUs 4-5 node 1's, 48 each
    assert [stage['cpu_affinity'] for stage in tp1] == ['0-31', '32-47,96-111', '112-143', '48-95', '144-191']
    sets = [cpus(stage) for stage in tp1]
    assert all(not a & b for i, a in enumerate(sets) for b in sets[i + 1:])
    assert set().union(*sets[:3]) == set(parse_cpu_list(NODE0_CPUS)) and set().union(*sets[3:]) == set(parse_cpu_list(NODE1_CPUS))
    assert [stage['numa_nodes'] for stage in tp1] == ['0', '0', '0', '1', '1']  # NUMA nodes are not split
    assert all(stage['pin_note'] is None for stage in tp1)


def test_cpus_split_into_chunks_that_differ_by_at_most_one():
    tp1 = plan(facts(online='0-4', numa_nodes='0'))[:5]
    assert [stage['cpu_affinity'] for stage in tp1[:3]] == ['0-1', '2-3', '4']
    assert [stage['cpu_affinity'] for stage in tp1[3:]] == [None, None]  # node 1's CPUs are not online: not pinned
    assert "GPU 4's CPUs 48-95,144-191 are not online on this host (0-4)" in tp1[3]['pin_note']


def test_stages_share_cpus_when_fewer_are_online_than_stages_and_say_so():
    tp1 = plan(facts(online='0-1', numa_nodes='0'))[:5]
    for stage in tp1[:3]:
        assert stage['cpu_affinity'] == '0-1' and stage['numa_nodes'] == '0'
        assert stage['pin_note'] == ('shares CPUs 0-1 with 2 other stage(s) of wave 1: fewer online CPUs local to its GPUs '
                                     'than stages')
    assert all(stage['cpu_affinity'] is None and 'shares' not in stage['pin_note'] for stage in tp1[3:])


def test_ct200_tp4_stages_on_one_slot_each_get_a_wave_and_tp4_over_a_pool_of_two_slots_pairs_them():
    stages = plan()
    tp4 = stages[5:10]
    assert [stage['wave'] for stage in tp4] == [2, 3, 4, 5, 6]
    assert all(stage['wave_stages'] == [stage['id']] and stage['alone'] is None for stage in tp4)
    assert all(stage['gpu_indices'] == [1, 2, 3, 4] and stage['cpu_affinity'] == '0-191' for stage in tp4)
    paired = plan(facts(holder=False), spec(tp=[{'size': 4, 'pool': [0, 1, 2, 3, 4, 5, 6, 7]}]))
    assert [(stage['wave'], stage['gpu_indices']) for stage in paired[:5]] == [
        (1, [0, 1, 2, 3]), (1, [4, 5, 6, 7]), (2, [0, 1, 2, 3]), (2, [4, 5, 6, 7]), (3, [0, 1, 2, 3])]
    # stages on different nodes have no CPUs in common: nothing to split
    assert [stage['cpu_affinity'] for stage in paired[:2]] == [NODE0_CPUS, NODE1_CPUS]


def test_ct200_tp8_stages_stop_ddtree_qwen_and_run_alone():
    tp8 = plan()[10:15]
    assert [stage['wave'] for stage in tp8] == [7, 8, 9, 10, 11]
    for stage in tp8:
        assert stage['gpu_indices'] == list(range(8)) and stage['conflicts'] == STOPPABLE
        assert stage['wave_stages'] == [stage['id']] and stage['alone'] == 'stops ddtree-qwen.service'
        assert stage['cpu_affinity'] == '0-191'


def test_a_blocked_stage_runs_alone_saying_who_holds_its_gpus():
    tp8 = [stage for stage in plan(stoppable=[]) if stage['tp'] == 8]
    assert all(stage['blocked'] for stage in tp8)
    assert tp8[0]['alone'] == 'its GPUs are held by ddtree-qwen.service, which may not be stopped'
    assert [stage['wave_stages'] for stage in tp8] == [[stage['id']] for stage in tp8]


def test_beside_other_stages_a_stage_never_takes_a_slot_where_it_would_stop_a_conflict():
    # pool [1, 0]: GPU1 is free, GPU0 is held by ddtree-qwen: GPU0 is skipped, so each stage waits for GPU1
    stages = plan(campaign_spec=spec(tp=[{'size': 1, 'pool': [1, 0]}]))
    assert [(stage['wave'], stage['gpu_indices'], stage['alone']) for stage in stages[:5]] == [
        (1, [1], None), (2, [1], None), (3, [1], None), (4, [1], None), (5, [1], None)]
    assert all(stage['conflicts'] == [] for stage in stages[:5])
    assert not any(stage['interference_of'] for stage in stages)  # no wave of two


def test_a_stage_whose_first_slot_stops_a_conflict_runs_alone_there():
    # pool [0, 1]: the first slot is GPU0, held by ddtree-qwen: every stage stops it and runs alone on GPU0
    stages = plan(campaign_spec=spec(tp=[{'size': 1, 'pool': [0, 1]}, {'size': 1, 'pool': [2, 3], 'id': 'free'}]))
    assert [(stage['wave'], stage['gpu_indices'], stage['alone']) for stage in stages[:5]] == [
        (wave, [0], 'stops ddtree-qwen.service') for wave in range(1, 6)]
    # the next entry starts a new wave after the last stage that ran alone
    assert [(stage['wave'], stage['gpu_indices']) for stage in stages[5:10]] == [(6, [2]), (6, [3]), (7, [2]), (7, [3]), (8, [2])]


def test_the_interference_stage_re_runs_the_first_stage_of_the_largest_wave_alone():
    stages = plan()
    assert len(stages) == 16
    alone, original = stages[-1], stages[0]
    assert alone['id'] == 'tp1-autoregressive-alone' and alone['index'] == 15
    assert alone['unit'] == 'specdec-qwen36-ct200-tp1-autoregressive-alone.service'
    assert (alone['wave'], alone['wave_stages']) == (12, ['tp1-autoregressive-alone'])
    assert alone['alone'] == 'measures interference: re-runs tp1-autoregressive alone'
    assert alone['interference_of'] == 'tp1-autoregressive'
    assert alone['concurrency'] == [1] and original['concurrency'] == [1, 4, 16]
    assert (alone['gpu_indices'], alone['gpus'], alone['env']) == (original['gpu_indices'], original['gpus'], original['env'])
    # the whole local CPU set: it runs alone
    assert (alone['cpu_affinity'], alone['numa_nodes'], alone['pin_note']) == (NODE0_CPUS, '0', None)
    assert alone['port'] == 31015 and len(set(stage['port'] for stage in stages)) == 16
    assert ['--port', '31015'] in alone['sglang_args'] and '--port=31015' in alone['argv']
    assert (alone['method'], alone['params'], alone['workload']) == (original['method'], original['params'], original['workload'])
    assert alone['description'].startswith('qwen36-ct200 tp1-autoregressive-alone: autoregressive')


def test_the_interference_stage_skips_a_listening_port():
    host = facts()
    host['specdec_host']['listening_ports'].append({'port': 31015})
    assert plan(host)[-1]['port'] == 31016


def test_no_interference_stage_without_a_wave_of_two():
    stages = plan(campaign_spec=spec(tp=[{'size': 8}]))
    assert len(stages) == 5 and not any(stage['interference_of'] for stage in stages)
    assert [stage['wave'] for stage in stages] == [1, 2, 3, 4, 5]


def test_waves_are_non_decreasing_and_ids_unique():
    stages = plan()
    waves = [stage['wave'] for stage in stages]
    assert waves == sorted(waves) and waves[-1] == max(waves)
    assert len(set(stage['id'] for stage in stages)) == len(stages)
    assert [stage['index'] for stage in stages] == list(range(len(stages)))


def test_parallel_2_limits_each_wave_to_two_stages():
    stages = plan(campaign_spec=spec(parallel=2))
    assert [(stage['wave'], stage['gpu_indices']) for stage in stages[:5]] == [
        (1, [1]), (1, [2]), (2, [1]), (2, [2]), (3, [1])]
    assert max(len(stage['wave_stages']) for stage in stages) == 2
    # TP4 overlaps GPU1 of wave 3: a new wave
    assert [stage['wave'] for stage in stages[5:10]] == [4, 5, 6, 7, 8]
    assert stages[-1]['interference_of'] == 'tp1-autoregressive' and stages[-1]['wave'] == 14


def test_same_input_same_output_and_inputs_untouched():
    host, campaign_spec = facts(), spec()
    before = copy.deepcopy((host, campaign_spec))
    first = plan(host, campaign_spec)
    assert json.dumps(first) == json.dumps(plan(copy.deepcopy(host), copy.deepcopy(campaign_spec)))
    assert (host, campaign_spec) == before


@pytest.mark.parametrize('parallel', [None, False, 1])
def test_without_parallel_nothing_changes(parallel):
    today = plan(campaign_spec=spec(tp=[{'size': 1, 'gpus': [1]}, {'size': 4, 'gpus': [1, 2, 3, 4]}, {'size': 8}], parallel=None))
    pooled = plan(campaign_spec=spec(parallel=parallel))
    keys = ('index', 'id', 'unit', 'port', 'gpu_indices', 'gpus', 'env', 'argv', 'cpu_affinity', 'numa_nodes', 'pin_note',
            'concurrency', 'feasible', 'conflicts')
    assert [[stage[key] for key in keys] for stage in pooled] == [[stage[key] for key in keys] for stage in today]
    assert len(pooled) == 15 and all(stage['gpu_indices'] == [1] for stage in pooled[:5])
    assert [stage['wave'] for stage in pooled] == list(range(1, 16))
    assert all(stage['wave_stages'] == [stage['id']] and stage['interference_of'] is None for stage in pooled)
    assert [stage['alone'] for stage in pooled] == [None] * 10 + ['stops ddtree-qwen.service'] * 5


def test_infeasible_stages_take_no_wave():
    stages = plan(campaign_spec=spec(tp=[{'size': 16}, {'size': 1, 'pool': [1, 2]}]), strict=False)
    assert all((stage['wave'], stage['wave_stages'], stage['alone']) == (None, [], None) for stage in stages[:5])
    assert [stage['wave'] for stage in stages[5:10]] == [1, 1, 2, 2, 3]
    assert stages[-1]['interference_of'] == 'tp1-autoregressive'


# --- plan_lines ----------------------------------------------------------------------------------------------------

def test_plan_lines_print_the_pool_and_the_waves():
    lines = plan_lines(plan(), 'qwen36-ct200', 'ct200')
    assert lines[0] == 'qwen36-ct200 on ct200: 16 stage(s), 16 feasible, 0 blocked'
    assert 'pool tp1: GPUs 1,2,3,4,5,6,7, 7 slot(s) of 1 GPU' in lines
    assert 'stage 2/16 tp1-dflash-n16: dflash num_draft_tokens=16, TP1 on GPU(s) 2, port 31001, feasible, pinned to CPUs ' \
           '32-47,96-111, NUMA node 0' in lines
    assert lines[-13:] == [
        '12 wave(s), at most 5 stage(s) at once',
        'wave 1 (5 stages at once): tp1-autoregressive on GPU 1, tp1-dflash-n16 on GPU 2, tp1-ddtree-b32-k4 on GPU 3, '
        'tp1-ddtree-b64-k4 on GPU 4, tp1-ddtree-b128-k4 on GPU 5',
        'wave 2: tp4-autoregressive on GPUs 1,2,3,4',
        'wave 3: tp4-dflash-n16 on GPUs 1,2,3,4',
        'wave 4: tp4-ddtree-b32-k4 on GPUs 1,2,3,4',
        'wave 5: tp4-ddtree-b64-k4 on GPUs 1,2,3,4',
        'wave 6: tp4-ddtree-b128-k4 on GPUs 1,2,3,4',
        'wave 7: tp8-autoregressive alone (stops ddtree-qwen.service)',
        'wave 8: tp8-dflash-n16 alone (stops ddtree-qwen.service)',
        'wave 9: tp8-ddtree-b32-k4 alone (stops ddtree-qwen.service)',
        'wave 10: tp8-ddtree-b64-k4 alone (stops ddtree-qwen.service)',
        'wave 11: tp8-ddtree-b128-k4 alone (stops ddtree-qwen.service)',
        'wave 12: tp1-autoregressive-alone alone (measures interference: re-runs tp1-autoregressive alone)',
    ]
    assert lines[-14] == ('stage 16/16 tp1-autoregressive-alone: autoregressive, TP1 on GPU(s) 1, port 31015, feasible, pinned to '
                          'CPUs 0-47,96-143, NUMA node 0, re-runs tp1-autoregressive alone at concurrency 1 (measures interference)')


def test_plan_lines_say_which_gpus_of_a_pool_no_slot_uses():
    lines = plan_lines(plan(facts(holder=False), spec(tp=[{'size': 4, 'pool': [0, 1, 2, 3, 4, 5]}])), 'c', 'ct200')
    assert 'pool tp4: GPUs 0,1,2,3,4,5, 1 slot(s) of 4 GPUs; GPUs 4,5 unused (fewer than 4 left for a slot)' in lines
    assert not any(line.startswith('wave') for line in lines)  # one slot: one stage at a time


def test_plan_lines_without_parallel_print_no_waves():
    today = plan_lines(plan(campaign_spec=spec(tp=[{'size': 1, 'gpus': [1]}, {'size': 8}], parallel=False)), 'c', 'ct200')
    assert len(today) == 2 + 10 and not any('wave' in line for line in today)
