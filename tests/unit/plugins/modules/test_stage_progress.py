# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""stage_progress: the jobs of a wave read in one call, as async_status reads one, and their leases renewed."""

from __future__ import annotations

import json
import os
import time

from ansible_collections.specdec.bench.plugins.modules import stage_progress


def _write(path, data):
    path.write_text(data if isinstance(data, str) else json.dumps(data))


def test_running_finished_and_missing_jobs(run_module, tmp_path):
    jobs = tmp_path / 'async'
    jobs.mkdir()
    _write(jobs / 'j1', {'started': True, 'finished': False, 'ansible_job_id': 'j1'})
    _write(jobs / 'j2', {'changed': True, 'status': {'stage': 'b', 'status': 'ok'}})
    _write(jobs / 'j3', '')  # not written yet: running
    stage = tmp_path / 'a'
    stage.mkdir()
    _write(stage / 'progress.json', {'stage': 'a', 'phase': 'loading'})
    lease = stage / '.lease'
    _write(lease, '')
    old = time.time() - 500
    os.utime(lease, (old, old))
    result = run_module(stage_progress, {'async_dir': str(jobs), 'jobs': [
        {'jid': 'j1', 'progress_file': str(stage / 'progress.json'), 'lease_file': str(lease)},
        {'jid': 'j2'}, {'jid': 'j3'}, {'jid': 'j4'}]})
    assert result['exit_code'] == 0 and not result['changed']
    one, two, three, four = result['jobs']
    assert (one['found'], one['finished'], one['result'], one['progress']) == (True, False, None, {'stage': 'a', 'phase': 'loading'})
    assert time.time() - os.stat(lease).st_mtime < 60  # renewed
    assert two['finished'] and two['result']['status'] == {'stage': 'b', 'status': 'ok'} and two['progress'] is None
    assert not (jobs / 'j2').exists()  # read once, then removed as async_status cleanup does
    assert three['found'] and not three['finished']
    assert not four['found'] and not four['finished']


def test_a_finished_job_keeps_its_file_without_cleanup_and_its_lease_is_left_alone(run_module, tmp_path):
    _write(tmp_path / 'j1', {'failed': True, 'msg': 'Timeout exceeded', 'child_pid': 12})
    lease = tmp_path / '.lease'
    result = run_module(stage_progress, {'async_dir': str(tmp_path), 'cleanup': False,
                                         'jobs': [{'jid': 'j1', 'lease_file': str(lease)}]})
    assert result['jobs'][0]['finished'] and result['jobs'][0]['result']['msg'] == 'Timeout exceeded'
    assert (tmp_path / 'j1').exists() and not lease.exists()


def test_a_long_poll_answers_when_a_file_changes_or_at_its_deadline(tmp_path):
    (tmp_path / 'j1').write_text('{"started": true, "finished": false}')
    progress = tmp_path / 'progress.json'
    jobs = [{'jid': 'j1', 'progress_file': str(progress)}]
    now = [0.0]

    def sleep(seconds):
        now[0] += seconds

    # nothing changes: it waits to its deadline
    assert stage_progress.wait_for_change(str(tmp_path), jobs, 2.0, clock=lambda: now[0], sleep=sleep) is False
    assert now[0] >= 2.0
    # a progress file appearing ends the wait at the next tick

    def sleep_then_write(seconds):
        now[0] += seconds
        progress.write_text('{"phase": "loading"}')

    now[0] = 0.0
    assert stage_progress.wait_for_change(str(tmp_path), jobs, 2.0, clock=lambda: now[0], sleep=sleep_then_write) is True
    assert now[0] <= stage_progress.TICK_S + 1e-9


def test_a_change_between_two_polls_ends_the_next_poll_at_once(run_module, tmp_path):
    """The stage writes its last progress, the poll answers; the wrapper then writes the result before the next poll
    begins. With the stamp the previous answer returned, the next poll answers at once instead of at its deadline."""
    jobfile = tmp_path / 'j1'
    jobfile.write_text('{"started": 1, "finished": 0}')
    progress = tmp_path / 'progress.json'
    progress.write_text('{"phase": "done"}')
    first = run_module(stage_progress, {'async_dir': str(tmp_path), 'jobs': [{'jid': 'j1', 'progress_file': str(progress)}]})
    seen = first['jobs'][0]['seen']
    assert not first['jobs'][0]['finished'] and seen
    os.utime(jobfile, ns=(0, 0))  # the result lands (another modification time), before the next poll starts
    _write(jobfile, {'changed': True, 'status': {'status': 'ok'}})
    os.utime(jobfile, ns=(1, 1))
    jobs = [{'jid': 'j1', 'progress_file': str(progress), 'seen': seen}]
    now = [0.0]

    def sleep(seconds):
        now[0] += seconds

    assert stage_progress.wait_for_change(str(tmp_path), jobs, 5.0, clock=lambda: now[0], sleep=sleep) is True
    assert now[0] == 0.0  # no tick waited
    # without the stamp, the same poll sees nothing new and waits to its deadline
    assert stage_progress.wait_for_change(str(tmp_path), [{'jid': 'j1', 'progress_file': str(progress)}], 5.0,
                                          clock=lambda: now[0], sleep=sleep) is False
    answer = run_module(stage_progress, {'async_dir': str(tmp_path), 'wait': 5.0, 'jobs': jobs})
    assert answer['jobs'][0]['finished'] and answer['jobs'][0]['seen'] != seen


def test_a_rewrite_within_one_tick_of_the_file_clock_is_still_a_change(tmp_path):
    """The progress file is replaced atomically: a rewrite with the very same modification time (two writes within one
    tick of the kernel's coarse clock) is still news, by its new inode."""
    progress = tmp_path / 'progress.json'
    progress.write_text('{"phase": "recording"}')
    job = {'jid': 'j1', 'progress_file': str(progress)}
    before = stage_progress.stamp(str(tmp_path), job)
    stat = progress.stat()
    replacement = tmp_path / 'progress.json.tmp'
    replacement.write_text('{"phase": "done"}    ')
    os.replace(replacement, progress)
    os.utime(progress, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert progress.stat().st_mtime_ns == stat.st_mtime_ns
    assert stage_progress.stamp(str(tmp_path), job) != before
    assert stage_progress.wait_for_change(str(tmp_path), [dict(job, seen=before)], 5.0, clock=lambda: 0.0,
                                          sleep=lambda seconds: None) is True


def test_a_wait_out_of_range_is_refused(run_module, tmp_path):
    result = run_module(stage_progress, {'async_dir': str(tmp_path), 'wait': 601, 'jobs': []})
    assert result['failed'] and 'wait is 601' in result['msg'] and '0 to 600' in result['msg']
