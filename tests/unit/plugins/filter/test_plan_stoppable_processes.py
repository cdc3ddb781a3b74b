# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""campaign_plan's stoppable_processes: a GPU holder no unit names, matched by its command line (hosts without systemd)."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.specdec.bench.plugins.plugin_utils.plan import campaign_plan


DDTREE_BUILD = 'sglang-ddtree-pr29907'
WRAPPER_CMDLINE = 'python3 -m sglang.launch_server --model-path /data/models/Qwen3.6-27B --port 30100 --tp-size 1'
HAND_WRAPPER = [{'name': 'hand-wrapper', 'match': r'sglang.launch_server.*--port 30100'}]


def a100_facts():
    """The A100 box: 6 x A100-PCIE-40GB, nothing running."""
    return {'nvidia_gpus': [{'index': i, 'uuid': 'GPU-a100-%d' % i, 'memory_total_mib': 40960, 'memory_used_mib': 0,
                             'processes': [], 'unexplained_memory_mib': 0} for i in range(6)],
            'systemd_units': {}, 'specdec_host': {'listening_ports': [{'port': 22}]}}


def a100_spec():
    return {'campaign': 'qwen36-a100', 'model': {'path': '/data/models/Qwen3.6-27B', 'bytes': 55000000000},
            'tp': [2, 4], 'methods': {'autoregressive': {}}, 'workload': {'input_len': 32, 'output_len': 32, 'num_prompts': 8},
            'concurrency': [1]}


def facts_with(holder, gpu=0):
    facts = a100_facts()
    process = {'pid': 4242, 'name': 'python3', 'used_memory_mib': 20000, 'unit': None, 'cmdline': WRAPPER_CMDLINE}
    facts['nvidia_gpus'][gpu]['processes'] = [dict(process, **holder)]
    return facts


def plan(facts, **host):
    return dict((stage['id'], stage) for stage in campaign_plan(facts, a100_spec(), dict(host, build=DDTREE_BUILD)))


def test_hand_started_holder_matched_by_its_command_line_is_stoppable():
    stages = plan(facts_with({}), stoppable_processes=HAND_WRAPPER)
    tp2 = stages['tp2-autoregressive']
    assert tp2['gpu_indices'] == [0, 1]
    assert tp2['holders'] == [{'gpu_index': 0, 'uuid': 'GPU-a100-0', 'pid': 4242, 'process': 'python3', 'unit': None,
                               'used_memory_mib': 20000, 'cmdline': WRAPPER_CMDLINE, 'stoppable': True,
                               'stoppable_process': 'hand-wrapper'}]
    assert (tp2['conflicts'], tp2['blocked']) == (['process hand-wrapper'], False)


def test_without_the_variable_the_hand_started_holder_blocks_as_before():
    for processes in (None, []):
        tp2 = plan(facts_with({}), stoppable_processes=processes)['tp2-autoregressive']
        assert [(h['stoppable'], h['stoppable_process']) for h in tp2['holders']] == [(False, None)]
        assert (tp2['conflicts'], tp2['blocked']) == ([], True)


@pytest.mark.parametrize('holder', [
    {'cmdline': 'python3 -m sglang.launch_server --model-path /data/models/Qwen3.6-27B --port 30000'},  # another port
    {'cmdline': None},  # unreadable: nothing to match
    {'unit': 'session-3.scope'},  # a unit names it: units are declared by name, as on systemd hosts
    {'unit': 'specdec-train-dflash.service'},
])
def test_no_match_or_a_unit_keeps_the_holder_blocked(holder):
    tp2 = plan(facts_with(holder), stoppable_processes=HAND_WRAPPER)['tp2-autoregressive']
    assert [(h['stoppable'], h['stoppable_process']) for h in tp2['holders']] == [(False, None)]
    assert tp2['blocked'] is True


def test_the_first_matching_entry_names_the_holder_and_the_search_is_unanchored():
    rules = [{'name': 'other', 'match': '^nvidia-cuda-mps'}, {'name': 'first', 'match': 'launch_server'},
             {'name': 'second', 'match': '--tp-size 1$'}]
    tp2 = plan(facts_with({}), stoppable_processes=rules)['tp2-autoregressive']
    assert tp2['holders'][0]['stoppable_process'] == 'first'


def test_the_restored_service_stays_covered_by_its_entry():
    facts = facts_with({'unit': 'specdec-restored-hand-wrapper.service', 'cmdline': 'anything'})
    tp2 = plan(facts, stoppable_processes=HAND_WRAPPER)['tp2-autoregressive']
    assert [(h['stoppable'], h['stoppable_process']) for h in tp2['holders']] == [(True, 'hand-wrapper')]
    assert (tp2['conflicts'], tp2['blocked']) == (['specdec-restored-hand-wrapper.service'], False)


def test_units_and_processes_together():
    facts = facts_with({})
    facts['nvidia_gpus'][1]['processes'] = [{'pid': 77, 'name': 'python3', 'used_memory_mib': 30000,
                                             'unit': 'specdec-train-dflash.service', 'cmdline': 'python3 run.py'}]
    tp2 = plan(facts, stoppable=['specdec-train-*'], stoppable_processes=HAND_WRAPPER)['tp2-autoregressive']
    assert tp2['conflicts'] == ['process hand-wrapper', 'specdec-train-dflash.service']
    assert tp2['blocked'] is False


def test_stages_on_other_gpus_do_not_see_the_holder():
    stages = plan(facts_with({}, gpu=5), stoppable_processes=HAND_WRAPPER)
    assert stages['tp2-autoregressive']['holders'] == []
    assert stages['tp4-autoregressive']['holders'] == []


@pytest.mark.parametrize('processes, field, allowed', [
    ('hand-wrapper', 'stoppable_processes', 'a list of {name'),
    ([{'name': 'x'}], r'stoppable_processes\[0\]', 'exactly the keys name, match'),
    ([{'name': 'x', 'match': 'y', 'unit': 'z'}], r'stoppable_processes\[0\]', 'exactly the keys name, match'),
    (['x'], r'stoppable_processes\[0\]', 'exactly the keys name, match'),
    ([{'name': 'Hand Wrapper', 'match': 'y'}], r'stoppable_processes\[0\]\.name', r'\[a-z0-9\]\[a-z0-9._-\]\*'),
    ([{'name': '../x', 'match': 'y'}], r'stoppable_processes\[0\]\.name', 'an id matching'),
    ([{'name': 'x', 'match': 'a'}, {'name': 'x', 'match': 'b'}], r'stoppable_processes\[1\]\.name repeats', 'distinct names'),
    ([{'name': 'x', 'match': ''}], r'stoppable_processes\[0\]\.match', 'a non-empty Python regular expression'),
    ([{'name': 'x', 'match': 3}], r'stoppable_processes\[0\]\.match', 'a non-empty Python regular expression'),
    ([{'name': 'x', 'match': 'launch_server(--port'}], r'stoppable_processes\[0\]\.match .*not a regular expression',
     'a Python regular expression'),
])
def test_bad_entries_are_refused_naming_the_field_and_what_is_allowed(processes, field, allowed):
    with pytest.raises(AnsibleFilterError, match=r'campaign_plan: %s.*; allowed: .*%s' % (field, allowed)):
        plan(a100_facts(), stoppable_processes=processes)
