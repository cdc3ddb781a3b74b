# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""stage_wait: which job is which stage, and the progress lines it prints as a stage goes."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleActionFail

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
