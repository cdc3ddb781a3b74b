# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""fit_tp, model_bytes and campaign_plan on the seeds' two hosts (CT200, the A100 box) and every spec rule."""

from __future__ import annotations

import copy
import json
import os
import re

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible.module_utils import _internal as _module_internal
from ansible_collections.specdec.bench.plugins.plugin_utils.plan import campaign_plan, fit_tp, safetensors_total_size
from ansible_collections.specdec.bench.plugins.module_utils._systemd import normalize_unit_name
from ansible_collections.specdec.bench.plugins.plugin_utils import sglang_build

# Importing controller code (ansible.errors) flips module_utils into controller mode for the whole test process, and
# module tests run later then lose their warnings to Display. Filters run on the controller: only they get that mode.
_module_internal.is_controller = False


@pytest.fixture(autouse=True)
def _controller_mode(monkeypatch):
    monkeypatch.setattr(_module_internal, 'is_controller', True)


REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

# The DDTree build's table: the one of the three methods (the CT200 campaign sweeps all three)
DDTREE_BUILD = 'sglang-ddtree-pr29907'
METHODS = sglang_build.load_builds()[DDTREE_BUILD]['methods']

CT200_UUIDS = [
    'GPU-bc087a02-3415-49ca-a6cd-1c580bad0d02', 'GPU-4447412d-cc78-484c-9c29-ae1f9e2248aa',
    'GPU-04276554-b7f8-467c-aace-4d06b5b9b991', 'GPU-a5f81894-315f-48f7-bb5b-5f1075b572b5',
    'GPU-a633a674-59d7-4fbf-a325-c73eb369649e', 'GPU-7cac8f2c-f236-4614-af87-16d93ad7003b',
    'GPU-dceb3098-23d0-4f17-bc55-bb781f2a462a', 'GPU-62166f4b-3091-431d-9c69-55852919bdd6',
]
DDTREE_QWEN = {'pid': 47028, 'name': '/opt/ddtree/.venv/bin/python3', 'used_memory_mib': 56077, 'unit': 'ddtree-qwen.service'}


def gpu(index, uuid, total_mib, processes=(), unexplained_mib=0):
    used = sum(p['used_memory_mib'] for p in processes) + unexplained_mib
    return {'index': index, 'uuid': uuid, 'name': 'GPU', 'memory_total_mib': total_mib, 'memory_used_mib': used,
            'processes': [dict(p) for p in processes], 'unexplained_memory_mib': unexplained_mib}


def ct200_facts():
    """CT200 as the seed saw it: 8 x RTX PRO 6000 Blackwell, GPU0 held by ddtree-qwen.service (56077 MiB)."""
    return {
        'nvidia_gpus': [gpu(i, uuid, 97887, [DDTREE_QWEN] if i == 0 else []) for i, uuid in enumerate(CT200_UUIDS)],
        'systemd_units': {
            'ddtree-qwen.service': {'load_state': 'loaded', 'active_state': 'active', 'sub_state': 'running', 'main_pid': 47028},
            'sglang-dflash-smoke.service': {'load_state': 'loaded', 'active_state': 'inactive', 'sub_state': 'dead', 'main_pid': None},
            'sglang-ddtree-tree.service': {'load_state': 'loaded', 'active_state': 'inactive', 'sub_state': 'dead', 'main_pid': None},
        },
        'specdec_host': {'listening_ports': [{'port': 22, 'family': 'ipv4'}, {'port': 30000, 'family': 'ipv4'}]},
    }


def a100_facts():
    """The A100 box: a container with 6 x A100-PCIE-40GB, nothing running."""
    return {'nvidia_gpus': [gpu(i, 'GPU-a100-%d' % i, 40960) for i in range(6)], 'systemd_units': {},
            'specdec_host': {'listening_ports': [{'port': 22}]}}


def ct200_spec():
    """The seeds' CT200 campaign, as campaign_plan.yml documents it."""
    return yaml.safe_load('''
campaign: qwen36-ct200
model: {path: /models/Qwen3.6-27B, bytes: 55000000000}
draft: {path: /models/Qwen3.6-27B-DFlash}
tp:
  - {size: 1, gpus: [1]}
  - {size: 4, gpus: [1, 2, 3, 4]}
  - {size: 8}
methods:
  autoregressive: {}
  dflash: {num_draft_tokens: [16]}
  ddtree: {budget: [32, 64, 128], topk: [4]}
workload: {input_len: 512, output_len: 256, num_prompts: 64}
concurrency: [1, 4, 16]
mem_fraction: 0.88
''')


def a100_spec():
    spec = ct200_spec()
    spec.update(campaign='qwen36-a100', tp=[1, 2, 4], mem_fraction=0.9)
    return spec


def plan(facts=None, spec=None, **host):
    """The plan on the CT200 (or facts) of its campaign (or spec), the host's inputs given by name."""
    if 'methods' not in host:
        host.setdefault('build', DDTREE_BUILD)
    return campaign_plan(ct200_facts() if facts is None else facts, ct200_spec() if spec is None else spec, host)


def by_id(stages):
    return dict((stage['id'], stage) for stage in stages)


# --- fit_tp and model_bytes -------------------------------------------------------------------------------------------

def test_fit_tp_a100_box_needs_tp2_giving_three_replicas():
    fit = fit_tp(55 * 10 ** 9, [40960] * 6)
    assert (fit['fits'], fit['min_tp'], fit['dp_replicas']) == (True, 2, 3)
    assert (fit['weights_per_gpu_gib'], fit['kv_headroom_per_gpu_gib']) == (25.61, 10.39)  # 36 GiB usable - 25.61
    assert [(c['tp'], c['fits']) for c in fit['candidates']] == [(1, False), (2, True), (4, True)]
    assert fit['candidates'][0]['kv_headroom_per_gpu_gib'] == -15.22 and fit['reason'] is None


def test_fit_tp_ct200_fits_one_gpu_eight_times_and_takes_gpu_facts():
    fit = fit_tp(55 * 10 ** 9, ct200_facts()['nvidia_gpus'])
    assert (fit['min_tp'], fit['dp_replicas'], fit['gpu_count'], fit['gpu_memory_gib']) == (1, 8, 8, 95.59)
    assert fit == fit_tp(55 * 10 ** 9, [97887] * 8)


def test_fit_tp_headroom_rule_is_the_minimum_kv_left_after_the_weights():
    weights = int((0.9 * 40 - 4) * 1024 ** 3)  # leaves exactly 4 GiB of 36 usable at TP1
    assert fit_tp(weights, [40960])['min_tp'] == 1
    assert fit_tp(weights + 1, [40960])['fits'] is False
    assert fit_tp(weights + 1, [40960], min_kv_headroom_gib=3)['min_tp'] == 1
    assert fit_tp(weights, [40960], mem_fraction=0.8)['fits'] is False


def test_fit_tp_nothing_fits_names_the_memory():
    fit = fit_tp(55 * 10 ** 9, [24576] * 3)  # 3 x 24 GiB: TP2 at most
    assert (fit['fits'], fit['min_tp'], fit['dp_replicas'], fit['weights_per_gpu_gib']) == (False, None, 0, None)
    assert 'at TP2' in fit['reason'] and '21.6 GiB usable' in fit['reason'] and '24.0 GiB GPU memory' in fit['reason']
    assert fit_tp(10, [])['reason'] == 'no GPUs'


def test_fit_tp_uses_the_smallest_gpu():
    assert fit_tp(55 * 10 ** 9, [97887, 40960])['min_tp'] == 2


@pytest.mark.parametrize('args, field', [
    ((0, [40960]), 'model bytes'),
    ((True, [40960]), 'model bytes'),
    ((10, [{'memory_total_mib': None}]), 'gpus[0].memory_total_mib'),
    ((10, 'GPU0'), 'gpus'),
    ((10, [40960], 1.5), 'mem_fraction'),
    ((10, [40960], 0.9, -1), 'min_kv_headroom_gib'),
])
def test_fit_tp_refuses_bad_input(args, field):
    with pytest.raises(AnsibleFilterError, match=re.escape('fit_tp: ' + field)):
        fit_tp(*args)


def test_model_bytes_reads_the_safetensors_index():
    index = {'metadata': {'total_size': 55000000000}, 'weight_map': {'lm_head.weight': 'model-00011-of-00011.safetensors'}}
    assert safetensors_total_size(index) == 55000000000
    assert safetensors_total_size(json.dumps(index)) == 55000000000
    for bad in ({'weight_map': {}}, {'metadata': {'total_size': 0}}, 'not json', None):
        with pytest.raises(AnsibleFilterError, match='metadata.total_size|not JSON'):
            safetensors_total_size(bad)


# --- the seeds' plans -------------------------------------------------------------------------------------------------

def test_ct200_plan_is_the_seed_matrix_in_order():
    stages = plan(stoppable=['ddtree-qwen.service'])
    per_tp = ['autoregressive', 'dflash-n16', 'ddtree-b32-k4', 'ddtree-b64-k4', 'ddtree-b128-k4']
    assert [s['id'] for s in stages] == ['tp%d-%s' % (tp, name) for tp in (1, 4, 8) for name in per_tp]
    assert [s['index'] for s in stages] == list(range(15))
    assert all(s['feasible'] and s['reason'] is None for s in stages)
    assert all(s['concurrency'] == [1, 4, 16] for s in stages)
    # no datasets: today's random prompts, as the one set, with the sampling defaults
    assert stages[0]['workload'] == {
        'input_len': 512, 'output_len': 256, 'num_prompts': 64,
        'datasets': [{'name': 'random', 'kind': 'random', 'input_len': 512, 'output_len': 256, 'num_prompts': 64}],
        'temperature': [0.0], 'top_p': 1.0, 'top_k': -1, 'stop_at_eos': True, 'chat_template_kwargs': {}}


def test_ct200_tp1_and_tp4_use_free_gpus_pinned_by_uuid():
    stages = by_id(plan(stoppable=['ddtree-qwen.service']))
    tp1, tp4 = stages['tp1-autoregressive'], stages['tp4-ddtree-b64-k4']
    assert (tp1['gpu_indices'], tp1['gpus']) == ([1], [CT200_UUIDS[1]])
    assert tp1['env'] == {'CUDA_VISIBLE_DEVICES': CT200_UUIDS[1]}
    assert (tp4['gpu_indices'], tp4['gpus']) == ([1, 2, 3, 4], CT200_UUIDS[1:5])
    assert tp4['env']['CUDA_VISIBLE_DEVICES'] == ','.join(CT200_UUIDS[1:5])
    for stage in stages.values():
        if stage['tp'] in (1, 4):
            assert (stage['holders'], stage['conflicts'], stage['blocked']) == ([], [], False)


def test_ct200_tp8_must_stop_ddtree_qwen_when_it_is_stoppable():
    holder = {'gpu_index': 0, 'uuid': CT200_UUIDS[0], 'pid': 47028, 'process': '/opt/ddtree/.venv/bin/python3',
              'unit': 'ddtree-qwen.service', 'used_memory_mib': 56077, 'cmdline': None, 'stoppable': True, 'stoppable_process': None}
    for stoppable in (['ddtree-qwen.service'], ['ddtree-qwen'], ['ddtree-*']):
        tp8 = [s for s in plan(stoppable=stoppable) if s['tp'] == 8]
        assert len(tp8) == 5
        for stage in tp8:
            assert stage['gpu_indices'] == list(range(8)) and stage['gpus'] == CT200_UUIDS
            assert stage['holders'] == [holder]
            assert (stage['conflicts'], stage['blocked'], stage['feasible']) == (['ddtree-qwen.service'], False, True)


def test_ct200_tp8_holder_not_declared_stoppable_blocks_the_stage():
    for stage in [s for s in plan() if s['tp'] == 8]:
        assert stage['holders'][0]['stoppable'] is False
        assert stage['conflicts'] == ['ddtree-qwen.service'] and stage['blocked'] is True


def test_ct200_sglang_args_and_env_come_from_the_method_table():
    stages = by_id(plan())

    def common(stage):  # the build knows --enable-metrics: on by default
        return [['--model-path', '/models/Qwen3.6-27B'], ['--tp-size', str(stage['tp'])], ['--host', '127.0.0.1'],
                ['--port', str(stage['port'])], ['--mem-fraction-static', '0.88'], '--enable-metrics']
    auto = stages['tp1-autoregressive']
    assert auto['sglang_args'] == common(auto) and auto['draft_path'] is None
    dflash = stages['tp4-dflash-n16']
    assert dflash['sglang_args'] == common(dflash) + [
        ['--speculative-algorithm', 'DFLASH'], ['--speculative-draft-model-path', '/models/Qwen3.6-27B-DFlash'],
        ['--speculative-num-draft-tokens', '16'], ['--speculative-dflash-block-size', '16']]
    assert dflash['env']['SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN'] == '1' and dflash['params'] == {'num_draft_tokens': 16}
    ddtree = stages['tp4-ddtree-b64-k4']
    assert ddtree['sglang_args'] == common(ddtree) + [
        ['--speculative-algorithm', 'DDTREE'], ['--speculative-draft-model-path', '/models/Qwen3.6-27B-DFlash'],
        ['--speculative-ddtree-budget', '64'], ['--page-size', '1']]
    assert ddtree['env'] == {'CUDA_VISIBLE_DEVICES': ','.join(CT200_UUIDS[1:5]), 'SGLANG_DDTREE_MAX_TOPK': '4'}
    assert (ddtree['method'], ddtree['params'], ddtree['tp'], ddtree['draft_path']) == (
        'ddtree', {'budget': 64, 'topk': 4}, 4, '/models/Qwen3.6-27B-DFlash')
    assert ddtree['unit'] == 'specdec-qwen36-ct200-tp4-ddtree-b64-k4.service'


def test_a100_plan_tp1_does_not_fit_tp2_and_tp4_do():
    stages = plan(a100_facts(), a100_spec())
    for stage in stages:
        if stage['tp'] == 1:
            assert stage['feasible'] is False
            assert 'do not fit at TP1' in stage['reason'] and '40.0 GiB GPU memory' in stage['reason']
            assert '51.22 GiB' in stage['reason'] and 'smallest TP that fits is 2' in stage['reason']
        else:
            assert stage['feasible'] is True and stage['reason'] is None
    fits = dict((s['tp'], s['fit']) for s in stages)
    assert (fits[2]['min_tp'], fits[2]['dp_replicas'], fits[2]['weights_per_gpu_gib'], fits[2]['kv_headroom_per_gpu_gib']) == (2, 3, 25.61, 10.39)
    assert (fits[4]['dp_replicas'], fits[1]['fits'], fits[1]['kv_headroom_per_gpu_gib']) == (1, False, -15.22)


def test_draft_bytes_count_for_methods_with_a_draft():
    spec = a100_spec()
    spec['model']['bytes'] = int(31.5 * 1024 ** 3)  # fits TP1 by 0.5 GiB
    spec['draft']['bytes'] = 2 * 1024 ** 3
    stages = by_id(plan(a100_facts(), spec))
    assert stages['tp1-autoregressive']['feasible'] is True
    assert stages['tp1-dflash-n16']['feasible'] is False and stages['tp2-dflash-n16']['feasible'] is True
    assert stages['tp1-dflash-n16']['fit']['model_bytes'] == int(33.5 * 1024 ** 3)


def test_model_size_from_the_index_or_unknown():
    spec = a100_spec()
    del spec['model']['bytes']
    with_index = by_id(plan(a100_facts(), spec, model_bytes=55 * 10 ** 9))
    assert with_index['tp1-autoregressive']['feasible'] is False and with_index['tp2-autoregressive']['fit']['dp_replicas'] == 3
    unknown = plan(a100_facts(), spec)
    assert all(s['fit'] is None and s['feasible'] for s in unknown)


# --- ids, units, ports, determinism, holders --------------------------------------------------------------------------

SYSTEMD_UNIT_NAME = re.compile(r'[A-Za-z0-9:_.\\-]+\.service\Z')


def test_stage_ids_and_units_are_unique_and_valid_names():
    stages = plan()
    ids = [s['id'] for s in stages]
    assert len(set(ids)) == len(ids)
    assert all(re.match(r'[a-z0-9][a-z0-9._-]*\Z', stage_id) for stage_id in ids)
    units = [s['unit'] for s in stages]
    assert len(set(units)) == len(units)
    for unit in units:
        assert SYSTEMD_UNIT_NAME.match(unit) and len(unit) <= 255 and normalize_unit_name(unit) == unit


def test_ports_are_unique_and_skip_listening_ones():
    facts = ct200_facts()
    facts['specdec_host']['listening_ports'].append({'port': 31001})
    ports = [s['port'] for s in plan(facts, base_port=31000)]
    assert len(set(ports)) == len(ports) == 15
    assert ports[:3] == [31000, 31002, 31003] and 31001 not in ports
    assert [s['port'] for s in plan(base_port=40000)][:2] == [40000, 40001]
    assert ['--port', str(ports[1])] in plan(facts)[1]['sglang_args']


def test_same_input_same_output_and_inputs_untouched():
    facts, spec = ct200_facts(), ct200_spec()
    before = copy.deepcopy((facts, spec, METHODS))
    first = campaign_plan(facts, spec, {'methods': METHODS, 'stoppable': ['ddtree-qwen.service']})
    second = campaign_plan(copy.deepcopy(facts), copy.deepcopy(spec), {'methods': copy.deepcopy(METHODS), 'stoppable': ['ddtree-qwen.service']})
    assert json.dumps(first, sort_keys=False) == json.dumps(second, sort_keys=False)
    assert (facts, spec, METHODS) == before


def test_undeclared_holder_is_reported_not_stoppable():
    facts = ct200_facts()
    stray = {'pid': 9911, 'name': 'python3', 'used_memory_mib': 2048, 'unit': None}
    facts['nvidia_gpus'][2]['processes'].append(stray)
    facts['nvidia_gpus'][3]['unexplained_memory_mib'] = 1024
    stages = by_id(plan(facts, stoppable=['ddtree-qwen.service', 'sglang-*']))
    assert stages['tp1-autoregressive']['holders'] == []
    tp4 = stages['tp4-autoregressive']
    assert tp4['holders'] == [
        {'gpu_index': 2, 'uuid': CT200_UUIDS[2], 'pid': 9911, 'process': 'python3', 'unit': None, 'used_memory_mib': 2048,
         'cmdline': None, 'stoppable': False, 'stoppable_process': None},
        {'gpu_index': 3, 'uuid': CT200_UUIDS[3], 'pid': None, 'process': None, 'unit': None, 'used_memory_mib': 1024,
         'cmdline': None, 'stoppable': False, 'stoppable_process': None},
    ]
    assert (tp4['conflicts'], tp4['blocked'], tp4['feasible']) == ([], True, True)
    tp8 = stages['tp8-autoregressive']
    assert [h['stoppable'] for h in tp8['holders']] == [True, False, False]
    assert (tp8['conflicts'], tp8['blocked']) == (['ddtree-qwen.service'], True)


def test_unpinned_tp_takes_the_first_gpus_and_tp_may_be_a_bare_size():
    spec = ct200_spec()
    spec['tp'] = [2, {'size': 1, 'gpus': [5], 'id': 'tp1-gpu5'}, {'size': 1, 'gpus': [6], 'id': 'tp1-gpu6'}]
    spec['methods'] = {'autoregressive': None}
    stages = plan(spec=spec)
    assert [(s['id'], s['gpu_indices']) for s in stages] == [
        ('tp2-autoregressive', [0, 1]), ('tp1-gpu5-autoregressive', [5]), ('tp1-gpu6-autoregressive', [6])]
    assert stages[1]['gpus'] == [CT200_UUIDS[5]]


def test_not_strict_turns_host_problems_into_infeasible_stages():
    spec = a100_spec()
    spec['tp'] = [2, 8, {'size': 2, 'gpus': [4, 7], 'id': 'tp2-high'}]
    stages = by_id(plan(a100_facts(), spec, strict=False))
    assert stages['tp2-autoregressive']['feasible'] is True
    assert stages['tp8-autoregressive']['reason'] == 'too few GPUs: TP8 needs 8, the host has 6'
    assert stages['tp8-autoregressive']['gpus'] == [] and stages['tp8-autoregressive']['fit'] is None
    assert stages['tp2-high-autoregressive']['reason'] == 'pinned GPU(s) 7 do not exist on the host (indices 0, 1, 2, 3, 4, 5)'


def test_extra_args_and_env_reach_every_stage():
    spec = ct200_spec()
    spec['extra_args'] = ['--enable-cache-report', ['--context-length', 8192]]
    spec['env'] = {'HF_HUB_OFFLINE': 1}
    for stage in plan(spec=spec):
        assert stage['sglang_args'][-2:] == ['--enable-cache-report', ['--context-length', '8192']]
        assert stage['env']['HF_HUB_OFFLINE'] == '1'


# --- validation: each rule names the field and the allowed values -----------------------------------------------------

def _set(path, value):
    def change(spec):
        node = spec
        for key in path[:-1]:
            node = node[key]
        if value is KeyError:
            del node[path[-1]]
        else:
            node[path[-1]] = value
    return change


INVALID_SPECS = [
    # unknown method: lists the allowed ones
    (_set(['methods', 'medusa'], {}), ['methods.medusa', 'not a known method', 'allowed: autoregressive, ddtree, dflash']),
    # TP size not a power of two
    (_set(['tp', 2], {'size': 6}), ['tp[2].size', 'is 6', 'power of two']),
    (_set(['tp', 0], {'size': 0, 'gpus': []}), ['tp[0].size', 'power of two']),
    # budget / topk / num_draft_tokens not positive integers
    (_set(['methods', 'ddtree', 'budget'], [32, -64]), ['methods.ddtree.budget[1]', 'is -64', 'a positive integer']),
    (_set(['methods', 'ddtree', 'budget'], [32, 'x']), ['methods.ddtree.budget[1]', "is 'x'", 'a positive integer']),
    (_set(['methods', 'ddtree', 'budget'], [1.5]), ['methods.ddtree.budget[0]', 'a positive integer']),
    (_set(['methods', 'ddtree', 'budget'], []), ['methods.ddtree.budget', 'empty list']),
    (_set(['methods', 'ddtree', 'topk'], 0), ['methods.ddtree.topk', 'is 0', 'a positive integer']),
    (_set(['methods', 'ddtree', 'topk'], [True]), ['methods.ddtree.topk[0]', 'is True', 'a positive integer']),
    (_set(['methods', 'dflash', 'num_draft_tokens'], [16, None]), ['methods.dflash.num_draft_tokens[1]', 'a positive integer']),
    # unknown or missing parameters
    (_set(['methods', 'ddtree', 'width'], [2]), ['methods.ddtree.width', 'not a parameter of ddtree', 'allowed: budget, topk']),
    (_set(['methods', 'autoregressive'], {'budget': 4}), ['methods.autoregressive.budget', 'allowed: none']),
    (_set(['methods', 'ddtree', 'budget'], KeyError), ['methods.ddtree.budget', 'is required', 'positive integer']),
    # ids with '/', spaces or shell characters
    (_set(['campaign'], 'qwen/ct200'), ['campaign', "'qwen/ct200'", '[a-z0-9][a-z0-9._-]*']),
    (_set(['campaign'], 'qwen ct200'), ['campaign', '[a-z0-9][a-z0-9._-]*']),
    (_set(['campaign'], 'ct200;reboot'), ['campaign', '[a-z0-9][a-z0-9._-]*']),
    (_set(['campaign'], '$(id)'), ['campaign', '[a-z0-9][a-z0-9._-]*']),
    (_set(['campaign'], 'QWEN'), ['campaign', '[a-z0-9][a-z0-9._-]*']),
    (_set(['campaign'], 'a' * 65), ['campaign', 'at most 64 characters']),
    (_set(['campaign'], KeyError), ['campaign', 'is None', '[a-z0-9][a-z0-9._-]*']),
    (_set(['tp', 0, 'id'], 'tp1 gpu1'), ['tp[0].id', '[a-z0-9][a-z0-9._-]*']),
    (_set(['tp', 0, 'id'], '../x'), ['tp[0].id', '[a-z0-9][a-z0-9._-]*']),
    # duplicate stages: same method + params + tp
    (_set(['methods', 'ddtree', 'budget'], [32, 64, 32]), ['methods.ddtree.budget[2]', 'duplicate stage', 'distinct values']),
    (_set(['tp', 2], {'size': 4, 'gpus': [1, 2, 3, 4]}), ['tp[2]', 'repeats tp[1]', 'duplicate stages', 'distinct TP entries']),
    (_set(['tp', 2], {'size': 1, 'gpus': [2]}), ['tp[2]', "id 'tp1' of tp[0]", 'give one an id matching [a-z0-9][a-z0-9._-]*']),
    (_set(['tp', 2], {'size': 1, 'gpus': [2], 'id': 'tp4'}), ['tp[2]', "id 'tp4' of tp[1]"]),
    # pinned GPUs: not existing (the host's indices listed), count != size, pinned twice
    (_set(['tp', 1, 'gpus'], [1, 9, 3, 4]), ['tp[1].gpus[1]', 'GPU 9', "host's GPU indices 0, 1, 2, 3, 4, 5, 6, 7"]),
    (_set(['tp', 1, 'gpus'], [1, 2, 3]), ['tp[1].gpus', 'lists 3 GPU(s) for size 4', 'exactly 4 GPU indices']),
    (_set(['tp', 1, 'gpus'], [1, 2, 2, 4]), ['tp[1].gpus[2]', 'pins GPU 2 twice', 'distinct GPU indices']),
    (_set(['tp', 1, 'gpus'], [1, 2, 3, -4]), ['tp[1].gpus[3]', 'a GPU index']),
    # TP larger than the host's GPUs (the allowed sizes listed)
    (_set(['tp', 2], {'size': 16}), ['tp[2].size', "larger than the host's 8 GPU(s)", 'allowed: 1, 2, 4, 8']),
    # concurrency
    (_set(['concurrency'], [1, 0, 16]), ['concurrency[1]', 'is 0', 'a positive integer']),
    (_set(['concurrency'], [1, '4']), ['concurrency[1]', "is '4'", 'a positive integer']),
    (_set(['concurrency'], [4, 4]), ['concurrency[1]', 'repeats 4', 'distinct positive integers']),
    (_set(['concurrency'], []), ['concurrency', 'non-empty list of positive integers']),
    (_set(['concurrency'], KeyError), ['concurrency', 'non-empty list of positive integers']),
    # model and draft paths
    (_set(['model', 'path'], KeyError), ['model.path', 'is None', 'an absolute path']),
    (_set(['model'], KeyError), ['model', 'not a mapping', 'path, bytes']),
    (_set(['model', 'path'], 'models/q'), ['model.path', 'an absolute path']),
    (_set(['model', 'bytes'], -1), ['model.bytes', 'a positive integer']),
    (_set(['draft'], KeyError), ['draft.path', 'method dflash needs a draft model', 'an absolute path']),
    # workload, unknown keys, extra args, env
    (_set(['workload', 'num_prompts'], KeyError), ['workload.num_prompts', 'is None', 'a positive integer']),
    (_set(['workload', 'input_length'], 5), ['workload', 'unknown key(s) input_length', 'input_len, output_len, num_prompts']),
    (_set(['workload', 'request_rate'], 0), ['workload.request_rate', '"inf"']),
    (_set(['tps'], []), ['spec', 'unknown key(s) tps', 'campaign, description, model']),
    (_set(['tp', 0, 'gpu'], [1]), ['tp[0]', 'unknown key(s) gpu', 'size, gpus, id']),
    (_set(['tp'], []), ['tp', 'non-empty list']),
    (_set(['mem_fraction'], 1.2), ['mem_fraction', 'is 1.2', '(0, 1]']),
    (_set(['extra_args'], [['--port', 8000]]), ['extra_args[0]', 'repeats --port', 'flags other than']),
    (_set(['extra_args'], ['--page-size']), ['extra_args[0]', 'repeats --page-size']),
    (_set(['extra_args'], ['-x; rm -rf /']), ['extra_args[0]', '--flag']),
    (_set(['env'], {'CUDA_VISIBLE_DEVICES': '0'}), ['env.CUDA_VISIBLE_DEVICES', 'set by the plan']),
    (_set(['env'], {'BAD NAME': '0'}), ['env key', 'not an environment variable name']),
    (_set(['methods'], {}), ['methods', 'allowed: a mapping', 'autoregressive, ddtree, dflash']),
]


@pytest.mark.parametrize('change, fragments', INVALID_SPECS, ids=[f[1][0] + ':' + f[1][1] for f in INVALID_SPECS])
def test_invalid_spec_names_the_field_and_the_allowed_values(change, fragments):
    spec = ct200_spec()
    change(spec)
    with pytest.raises(AnsibleFilterError) as error:
        plan(spec=spec, stoppable=['ddtree-qwen.service'])
    message = str(error.value)
    assert message.startswith('campaign_plan: ')
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_a100_tp8_is_refused_listing_the_allowed_sizes():
    spec = a100_spec()
    spec['tp'] = [2, 8]
    with pytest.raises(AnsibleFilterError, match=re.escape("tp[1].size is 8, larger than the host's 6 GPU(s); allowed: 1, 2, 4")):
        plan(a100_facts(), spec)


@pytest.mark.parametrize('table, fragments', [
    ({'ddtree': {'args': [['--speculative-ddtree-budget', '{budgett}']], 'params': {'budget': {'type': 'int'}}}},
     ['method table ddtree.args[0] uses {budgett}', 'allowed fields: {model}, {draft}, {tp}, {port}, {budget}']),
    ({'ddtree': {'env': {'SGLANG_DDTREE_MAX_TOPK': '{topk'}, 'params': {'topk': {}}}}, ['method table ddtree.env.SGLANG_DDTREE_MAX_TOPK']),
    ({'ddtree': {'params': {'budget': {'type': 'str'}}}}, ['ddtree.params.budget.type', 'allowed: int']),
    ({'ddtree': {'flags': []}}, ['method table ddtree', 'allowed keys: args, env, params']),
    ({'dd tree': {}}, ['method table key', '[a-z0-9][a-z0-9._-]*']),
    (None, ['no SGLang version was found', 'sglang-0.5.23 (0.5.23)', 'sglang-ddtree-pr29907 (by name only)']),
])
def test_invalid_method_table_is_refused(table, fragments):
    spec = ct200_spec()
    spec['methods'] = {'autoregressive': {}}
    table = dict(table, autoregressive={}) if table else table
    with pytest.raises(AnsibleFilterError) as error:
        plan(spec=spec, methods=table)
    for fragment in fragments:
        assert fragment in str(error.value), (fragment, str(error.value))


@pytest.mark.parametrize('kwargs, fragment', [
    ({'stoppable': ['-ddtree']}, 'stoppable'),
    ({'stoppable': 'ddtree-qwen.service'}, 'stoppable'),
    ({'base_port': 80}, 'base_port is 80; allowed: a port number in 1024-65535'),
    ({'base_port': 65530}, 'base_port is 65530, too high'),
])
def test_invalid_options_are_refused(kwargs, fragment):
    with pytest.raises(AnsibleFilterError, match=re.escape(fragment)):
        plan(**kwargs)


# --- SGLang build profiles ----------------------------------------------------------------------------------------

def test_the_build_is_picked_from_the_sglang_version_found_local_version_ignored():
    spec = a100_spec_release()
    stages = campaign_plan(a100_facts(), spec, {'sglang_version': '0.5.23+sim', 'sglang_python': '/opt/sglang/bin/python'})
    assert {stage['sglang_build']['name'] for stage in stages} == {'sglang-0.5.23'}
    assert stages[0]['sglang_build']['version'] == '0.5.23+sim'
    assert stages[0]['sglang_build']['python'] == '/opt/sglang/bin/python'
    dflash = [stage for stage in stages if stage['method'] == 'dflash'][0]
    flags = [arg[0] if isinstance(arg, list) else arg for arg in dflash['sglang_args']]
    assert '--mamba-scheduler-strategy' not in flags and '--speculative-dflash-block-size' in flags


def a100_spec_release():
    spec = yaml.safe_load('''
campaign: qwen36-a100
model: {path: /models/Qwen3.6-27B, bytes: 55000000000}
draft: {path: /models/Qwen3.6-27B-DFlash}
tp: [{size: 2}]
methods: {autoregressive: {}, dflash: {num_draft_tokens: [8, 16]}}
workload: {input_len: 128, output_len: 64, num_prompts: 8}
concurrency: [1]
''')
    return spec


@pytest.mark.parametrize('kwargs, fragments', [
    ({'sglang_version': '0.4.9', 'sglang_python': '/opt/sglang/bin/python'},
     ['no SGLang build profile matches SGLang 0.4.9 found in /opt/sglang/bin/python',
      'sglang-0.5.23 (0.5.23)', 'sglang-ddtree-pr29907 (by name only)', 'plan_methods']),
    ({'build': 'sglang-9.9'}, ['sglang_build is \'sglang-9.9\'', 'allowed: sglang-0.5.23 (0.5.23)']),
])
def test_no_matching_build_is_refused_naming_the_version_and_the_profiles(kwargs, fragments):
    with pytest.raises(AnsibleFilterError) as error:
        campaign_plan(a100_facts(), a100_spec_release(), kwargs)
    for fragment in fragments:
        assert fragment in str(error.value), (fragment, str(error.value))


def test_the_release_has_no_ddtree_method():
    with pytest.raises(AnsibleFilterError) as error:
        campaign_plan(ct200_facts(), ct200_spec(), {'sglang_version': '0.5.23', 'stoppable': ['ddtree-qwen.service']})
    assert 'methods.ddtree is not a known method; allowed: autoregressive, dflash' in str(error.value)


def test_a_table_flag_the_build_does_not_know_is_refused_at_plan_time():
    table = {'autoregressive': {}, 'dflash': {'args': [['--speculative-algorithm', 'DFLASH'],
                                                       ['--mamba-scheduler-strategy', 'extra_buffer']]}}
    spec = a100_spec_release()
    spec['methods'] = {'autoregressive': {}, 'dflash': {}}
    with pytest.raises(AnsibleFilterError) as error:
        campaign_plan(a100_facts(), spec, {'methods': table, 'build': 'sglang-0.5.23'})
    assert 'method table dflash.args[1] is --mamba-scheduler-strategy, which SGLang 0.5.23 (build sglang-0.5.23) does not know' \
        in str(error.value)


def test_every_profile_flag_is_an_option_of_its_build():
    for name, profile in sglang_build.load_builds().items():
        for method, entry in profile['methods'].items():
            for item in entry['args']:
                flag = item[0] if isinstance(item, list) else item
                assert sglang_build.resolve_flag(profile['options'], flag)[0] == 'exact', (name, method, flag)


def test_the_stages_record_the_build():
    stages = plan()
    assert stages[0]['sglang_build'] == {
        'name': DDTREE_BUILD, 'release': '0.5.23', 'version': None, 'python': None,
        'description': sglang_build.load_builds()[DDTREE_BUILD]['description']}


@pytest.mark.parametrize('extra, fragments', [
    ([['--hos', '0.0.0.0']], ['extra_args[0] is --hos', 'reads as --host (an abbreviation of it), which the plan sets']),
    ([['--tensor-parallel-size', '8']], ['extra_args[0] is --tensor-parallel-size', 'reads as --tp-size (an alias of it)']),
    ([['--model', '/other']], ['reads as --model-path (an alias of it)']),
    ([['--speculative-draft-model', '/x']], ['reads as --speculative-draft-model-path (an alias of it)']),
    ([['--mem-frac', '0.5']], ['reads as --mem-fraction-static (an abbreviation of it)']),
    ([['--mamba-scheduler-strategy', 'extra_buffer']],
     ['extra_args[0] is --mamba-scheduler-strategy, which SGLang 0.5.23 (build sglang-ddtree-pr29907) does not know']),
    ([['--speculative-d', 'x']], ['finds ambiguous (it could match']),
])
def test_extra_args_cannot_set_what_the_plan_sets_by_alias_or_abbreviation(extra, fragments):
    spec = ct200_spec()
    spec['extra_args'] = extra
    with pytest.raises(AnsibleFilterError) as error:
        plan(spec=spec)
    for fragment in fragments:
        assert fragment in str(error.value), (fragment, str(error.value))


def test_extra_args_of_other_options_pass():
    spec = ct200_spec()
    spec['extra_args'] = [['--mamba-radix-cache-strategy', 'extra_buffer'], '--disable-radix-cache', ['--watchdog-timeout', 600]]
    stage = by_id(plan(spec=spec))['tp1-autoregressive']
    assert stage['sglang_args'][-3:] == [['--mamba-radix-cache-strategy', 'extra_buffer'], '--disable-radix-cache',
                                         ['--watchdog-timeout', '600']]


def test_without_a_build_abbreviations_of_planned_flags_are_still_refused():
    spec = ct200_spec()
    spec['methods'] = {'autoregressive': {}}
    spec['extra_args'] = [['--hos', '0.0.0.0']]
    with pytest.raises(AnsibleFilterError) as error:
        campaign_plan(ct200_facts(), spec, {'methods': {'autoregressive': {}}, 'stoppable': ['ddtree-qwen.service']})
    assert 'an abbreviation of --host, which the plan sets' in str(error.value)


# --- what reaches a unit file, and numbers that mean nothing ---------------------------------------------------------

@pytest.mark.parametrize('path, value', [
    (('env', 'X'), 'x\rExecStartPre=/usr/bin/touch /tmp/PWNED\r#'),
    (('env', 'X'), 'a\x00b'),
    (('env', 'X'), 'a\u2028b'),
    (('model', 'path'), '/models/q\rExecStartPre=/bin/true'),
    (('draft', 'path'), '/models/d\x0bx'),
    (('description',), 'two\rlines'),
])
def test_control_characters_never_reach_a_unit(path, value):
    spec = ct200_spec()
    target = spec
    for key in path[:-1]:
        target = target.setdefault(key, {}) if isinstance(target.get(key), dict) or key not in target else target[key]
    target[path[-1]] = value
    with pytest.raises(AnsibleFilterError) as error:
        plan(spec=spec)
    assert 'no control characters' in str(error.value), str(error.value)


def test_a_control_character_in_an_extra_arg_value_is_refused():
    spec = ct200_spec()
    spec['extra_args'] = [['--cuda-graph-max-bs', '16\r--host=0.0.0.0']]
    with pytest.raises(AnsibleFilterError) as error:
        plan(spec=spec)
    assert 'extra_args[0][1]' in str(error.value) and 'no control characters' in str(error.value)


@pytest.mark.parametrize('path, value', [
    (('min_kv_headroom_gib',), float('nan')),
    (('mem_fraction',), float('nan')),
    (('workload', 'request_rate'), float('nan')),
    (('min_kv_headroom_gib',), float('inf')),
    (('model', 'bytes'), float('inf')),
])
def test_non_finite_numbers_are_refused_by_one_check(path, value):
    spec = ct200_spec()
    target = spec
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(AnsibleFilterError) as error:
        plan(spec=spec)
    assert "%s is %r; allowed: a finite number" % ('.'.join(path), value) in str(error.value)


def test_an_infinite_request_rate_means_all_at_once():
    spec = ct200_spec()
    spec['workload']['request_rate'] = float('inf')
    assert {stage['workload']['request_rate'] for stage in plan(spec=spec)} == {'inf'}


# --- repeats --------------------------------------------------------------------------------------------------------

def test_every_stage_carries_the_specs_repeats_one_unless_given():
    assert {stage['repeats'] for stage in plan()} == {1}
    spec = ct200_spec()
    spec['repeats'] = 3
    assert {stage['repeats'] for stage in plan(spec=spec)} == {3}
    spec['repeats'] = 100
    assert {stage['repeats'] for stage in plan(spec=spec)} == {100}


@pytest.mark.parametrize('value', [True, False, 0, -1, 101, '3', 2.0, [3]])
def test_bad_repeats_are_refused_naming_the_field_and_the_allowed_values(value):
    spec = ct200_spec()
    spec['repeats'] = value
    with pytest.raises(AnsibleFilterError, match=re.escape(
            'campaign_plan: spec.repeats is %r; allowed: an integer from 1 to 100 (default 1)' % (value,))):
        plan(spec=spec)
