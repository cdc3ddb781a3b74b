# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the conflicts role stops, refuses and records, from the plan's holders."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.specdec.bench.plugins.filter.conflicts import (
    conflicts_holders, conflicts_record, conflicts_restore_processes, conflicts_restore_units)


def holder(gpu, pid, unit, stoppable, process=None, uuid=None):
    return {'gpu_index': gpu, 'uuid': uuid or 'GPU-%d' % gpu, 'pid': pid, 'unit': unit, 'stoppable': stoppable,
            'stoppable_process': process, 'used_memory_mib': 100, 'cmdline': None, 'process': 'python3'}


DDTREE = holder(1, 47, 'ddtree-qwen.service', True)
TRAINER = holder(2, 90, None, True, process='trainer')
TRAINER_GPU3 = holder(3, 90, None, True, process='trainer')
RESTORED = holder(4, 91, 'specdec-restored-trainer.service', True, process='trainer')
STAGES = [
    {'id': 'a', 'unit': 'specdec-c-a.service', 'feasible': True, 'holders': [DDTREE, TRAINER]},
    {'id': 'b', 'unit': 'specdec-c-b.service', 'feasible': True, 'holders': [DDTREE, TRAINER_GPU3, RESTORED]},
    {'id': 'c', 'unit': 'specdec-c-c.service', 'feasible': False, 'holders': [holder(5, 1, 'other.service', False)]},
]
PROCESSES = [{'name': 'trainer', 'match': 'train.py'}]


def test_what_is_stopped_and_waited_for():
    found = conflicts_holders(STAGES, ['ddtree-*'], PROCESSES)
    assert found['refused'] == []
    assert found['holders'] == [DDTREE, TRAINER, TRAINER_GPU3, RESTORED]
    assert found['units'] == ['ddtree-qwen.service', 'specdec-restored-trainer.service']
    assert found['processes'] == [TRAINER] and found['process_pids'] == [90]
    assert found['gpus'] == ['GPU-1', 'GPU-2', 'GPU-3', 'GPU-4']
    assert found['servers'] == ['specdec-c-a.service', 'specdec-c-b.service']
    assert found['repeated'] == {}


@pytest.mark.parametrize(('stoppable', 'processes', 'refused'), [
    # the plan said stoppable, but this host's own lists do not
    ([], PROCESSES, [DDTREE]),
    (['ddtree-qwen'], [], [TRAINER, TRAINER_GPU3, RESTORED]),
    (['ddtree-qwe?.service'], PROCESSES, []),
    (['other'], PROCESSES, [DDTREE]),
])
def test_the_roles_own_lists_must_allow_it_too(stoppable, processes, refused):
    assert conflicts_holders(STAGES, stoppable, processes)['refused'] == refused


def test_what_the_plan_refused_stays_refused():
    blocked = holder(1, 5, 'ddtree-qwen.service', False)
    stages = [{'id': 'a', 'unit': 'u.service', 'feasible': True, 'holders': [blocked]}]
    assert conflicts_holders(stages, ['*'], PROCESSES)['refused'] == [blocked]


def test_one_name_matching_two_processes_is_reported():
    other = holder(2, 95, None, True, process='trainer')
    stages = [{'id': 'a', 'unit': 'u.service', 'feasible': True, 'holders': [TRAINER, other]}]
    assert conflicts_holders(stages, [], PROCESSES)['repeated'] == {'trainer': [90, 95]}


def test_a_bad_unit_pattern_is_refused():
    with pytest.raises(AnsibleFilterError, match='stoppable'):
        conflicts_holders(STAGES, ['-bad name'], [])


SYSTEMD_PRIOR = [{'item': 'ddtree-qwen.service', 'status': {'ActiveState': 'active', 'SubState': 'running',
                                                            'UnitFileState': 'enabled', 'MainPID': '47'}}]
SUPERVISOR_PRIOR = [{'item': 'train.service', 'service': {'state': 'running', 'pid': 12}},
                    {'item': 'idle.service', 'service': {'state': 'stopped', 'pid': None}}]


def test_the_record_of_a_first_run():
    record = conflicts_record(SYSTEMD_PRIOR, 'systemd', 'c', ['specdec-c-b.service', 'specdec-c-a.service'])
    assert record == {'campaign': 'c', 'processes': {}, 'servers': ['specdec-c-a.service', 'specdec-c-b.service'],
                      'units': {'ddtree-qwen.service': {'active_state': 'active', 'sub_state': 'running',
                                                        'unit_file_state': 'enabled', 'main_pid': 47}}}


def test_an_interrupted_runs_record_keeps_its_first_state_processes_and_servers():
    old = {'units': {'train.service': {'active_state': 'active', 'sub_state': 'running', 'unit_file_state': 'supervisor',
                                       'main_pid': 3}},
           'processes': {'trainer': {'pid': 90}}, 'servers': ['specdec-c-z.service']}
    record = conflicts_record(SUPERVISOR_PRIOR, 'supervisor', 'c', ['specdec-c-a.service'], old)
    assert record['units']['train.service']['main_pid'] == 3
    assert record['units']['idle.service'] == {'active_state': 'inactive', 'sub_state': 'stopped',
                                               'unit_file_state': 'supervisor', 'main_pid': None}
    assert record['processes'] == {'trainer': {'pid': 90}}
    assert record['servers'] == ['specdec-c-a.service', 'specdec-c-z.service']


def test_a_skipped_read_is_not_recorded_and_the_backend_is_checked():
    assert conflicts_record([{'item': 'x.service', 'skipped': True}], 'systemd', 'c', [])['units'] == {}
    with pytest.raises(AnsibleFilterError, match='backend'):
        conflicts_record([], 'upstart', 'c', [])


def test_restore_starts_what_was_running():
    record = conflicts_record(SUPERVISOR_PRIOR + [{'item': 'rl.service', 'service': {'state': 'running', 'pid': 1}}],
                              'supervisor', 'c', [])
    assert conflicts_restore_units(record) == ['rl.service', 'train.service']
    assert conflicts_restore_units({}) == []


WRAPPER = {'pid': 4242, 'argv': ['python3', 'serve.py', '--tag', ''], 'program': '/usr/bin/python3', 'cwd': '/home/bench',
           'env': {'PATH': '/usr/bin'}, 'uid': 1000, 'gid': 1000, 'groups': [44, 1000], 'start_ticks': 1}


def test_restore_runs_each_stopped_process_as_its_owner():
    restored = conflicts_restore_processes({'processes': {'zz': dict(WRAPPER, pid=7), 'hand-wrapper': WRAPPER}}, 'c')
    assert [item['name'] for item in restored] == ['hand-wrapper', 'zz']
    item = restored[0]
    assert (item['service'], item['pid'], item['argv']) == ('specdec-restored-hand-wrapper.service', 4242, WRAPPER['argv'])
    definition = item['definition']
    assert definition['argv'] == ['/usr/bin/python3', 'serve.py', '--tag', '']
    assert (definition['uid'], definition['gid'], definition['groups'], definition['inherit_env']) == (1000, 1000, [44, 1000], False)
    assert definition['description'] == 'hand-wrapper, started by hand, stopped by campaign c (pid 4242)'
    assert conflicts_restore_processes({}) == [] and conflicts_restore_processes({'processes': {}}) == []


def test_restore_refuses_an_entry_without_its_owner_naming_it():
    old = dict((key, value) for key, value in WRAPPER.items() if key not in ('uid', 'gid', 'groups'))
    with pytest.raises(AnsibleFilterError, match=r'processes.hand-wrapper \(pid 4242\) cannot be restored: has no uid'):
        conflicts_restore_processes({'processes': {'hand-wrapper': old}})
