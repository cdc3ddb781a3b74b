# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""stage_wait: which job is which stage, and the progress lines it prints as a stage goes."""

from __future__ import annotations

from unittest import mock

import pytest

from ansible.errors import AnsibleActionFail
from ansible.playbook.task import Task

from ansible_collections.specdec.bench.plugins.action import stage_wait
from ansible_collections.specdec.bench.plugins.action.stage_wait import job_of, progress_lines


def test_a_started_job_and_a_start_that_failed():
    item = {'status': {'stage': 'tp1-autoregressive'}, 'progress_file': '/r/p.json', 'lease_file': '/r/.lease'}
    assert job_of({'ansible_job_id': 'j1', 'item': item}, 0) == ('tp1-autoregressive', 'j1', '/r/p.json', '/r/.lease', None)
    stage, jid, _progress, _lease, msg = job_of({'failed': True, 'msg': 'no python', 'item': item}, 1)
    assert (stage, jid, msg) == ('tp1-autoregressive', None, 'no python')
    with pytest.raises(AnsibleActionFail, match=r'jobs\[2\]'):
        job_of('j3', 2)


def test_each_event_is_printed_once_as_it_happens():
    seen = {}
    assert progress_lines('s', None, seen) == []
    assert progress_lines('s', {'phase': 'loading'}, seen) == ['s: server started, loading']
    assert progress_lines('s', {'phase': 'loading'}, seen) == []
    ready = {'phase': 'running', 'ready_s': 12.34, 'runs_total': 2, 'runs': []}
    assert progress_lines('s', ready, seen) == ['s: ready after 12.3 s, 2 harness run(s) to go']
    one = dict(ready, runs=[{'label': 'gsm8k t0 c1', 'output_throughput': 412.06, 'accept_length': 3.214, 'elapsed_s': 9.0}])
    assert progress_lines('s', one, seen) == ['s: gsm8k t0 c1 (1 of 2) 412.1 tok/s, tau 3.21 in 9.0 s']
    two = dict(one, runs=one['runs'] + [{'label': 'gsm8k t0 c4', 'failed': True, 'elapsed_s': 1.5}], phase='done')
    assert progress_lines('s', two, seen) == ['s: gsm8k t0 c4 (2 of 2) failed in 1.5 s']
    assert progress_lines('s', two, seen) == []


def test_a_capacity_search_prints_its_capacity_and_why_it_stopped():
    seen = {'phase': 'running'}
    searches = {'phase': 'running', 'runs_total': 2, 'runs': [
        {'label': 'random t0 search concurrency', 'capacity': 12, 'bound_by': 'resolution', 'points': 9, 'elapsed_s': 80.0},
        {'label': 'random t0 search request_rate', 'capacity': None, 'bound_by': 'lowest_fails', 'points': 1, 'elapsed_s': 5.0}]}
    assert progress_lines('s', searches, seen) == [
        's: random t0 search concurrency (1 of 2) capacity 12 (9 point(s), stopped by resolution) in 80.0 s',
        's: random t0 search request_rate (2 of 2) capacity none (1 point(s), stopped by lowest_fails) in 5.0 s']


def test_each_poll_hands_back_what_the_last_answer_saw():
    """The long poll answers at once for a change it did not report yet only if the action passes back each job's
    `seen` stamp; a finished job is polled no more."""
    task = Task()
    item = {'status': {'stage': 's1'}, 'progress_file': '/r/p.json', 'lease_file': '/r/.lease'}
    task.args = {'jobs': [{'ansible_job_id': 'j1', 'item': item}], 'poll': 2.0}
    action = stage_wait.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None,
                                     shared_loader_obj=None)
    replies = [
        {'jobs': [{'jid': 'j1', 'found': True, 'finished': False, 'progress': {'phase': 'done'}, 'seen': '10:20'}]},
        {'jobs': [{'jid': 'j1', 'found': True, 'finished': True, 'result': {'status': {'status': 'ok'}}, 'seen': '11:20'}]},
    ]
    with mock.patch.object(action, '_execute_module', side_effect=replies) as execute, \
            mock.patch.object(action, 'get_shell_option', return_value='~/.ansible_async'), \
            mock.patch.object(action, '_remote_expand_user', return_value='/root/.ansible_async'):
        result = action.run(task_vars={'inventory_hostname': 'ct200'})
    sent = [call.kwargs['module_args'] for call in execute.call_args_list]
    assert [job.get('seen') for args in sent for job in args['jobs']] == [None, '10:20']
    assert sent[0]['async_dir'] == '/root/.ansible_async' and sent[0]['wait'] == 2.0
    assert result['polls'] == 2 and result['stages'][0]['status'] == {'status': 'ok'}
