# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""_lease: a stage's lease on its own monotonic clock, and lease and lock files never followed through a link;
lease_keeper: the controller's keeper loop, and its renewal run for real by a Python process as on a host."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from ansible_collections.specdec.bench.plugins.module_utils import _lease
from ansible_collections.specdec.bench.plugins.module_utils._stage import stage_run as _stage_run
from ansible_collections.specdec.bench.plugins.plugin_utils import lease_keeper


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_a_renewal_is_a_change_of_the_file_seen_on_the_stages_own_clock(tmp_path):
    path = tmp_path / 'x.lease'
    path.write_text('')
    clock = Clock()
    lease = _lease.Lease(str(path), 10, clock=clock)
    clock.now += 8
    assert lease.age() == 8 and lease.expired() is None
    assert _lease.renew(str(path))
    clock.now += 1
    assert lease.age() == 0  # seen at this check
    clock.now += 10.5
    assert lease.expired().startswith('no controller polled this stage for 10 s')


@pytest.mark.parametrize('step', [3600 * 24, -3600 * 24], ids=['clock-stepped-back', 'clock-stepped-forward'])
def test_a_step_of_the_wall_clock_neither_extends_nor_cuts_the_lease(tmp_path, step):
    """The renewal's mtime is a wall-clock time: a file stamped a day ahead (the clock stepped back after the renewal)
    kept an mtime-based lease alive for a day, one a day behind ended it at once."""
    path = tmp_path / 'x.lease'
    path.write_text('')
    stamp = os.stat(path).st_mtime + step
    os.utime(path, (stamp, stamp))
    clock = Clock()
    lease = _lease.Lease(str(path), 5, clock=clock)
    clock.now += 4
    assert lease.expired() is None
    clock.now += 2
    assert lease.expired() is not None


def test_a_missing_lease_file_is_as_old_as_the_lease(tmp_path):
    clock = Clock()
    lease = _lease.Lease(str(tmp_path / 'none'), 5, clock=clock)
    clock.now += 6
    assert lease.expired() is not None
    assert _lease.Lease(None, 5).expired() is None and _lease.Lease(str(tmp_path / 'none'), 0).expired() is None


def test_a_lease_file_is_never_touched_through_a_link(tmp_path):
    target = tmp_path / 'target'
    target.write_text('keep')
    os.utime(target, (1, 1))
    link = tmp_path / 'x.lease'
    link.symlink_to(target)
    assert _lease.renew(str(link)) is False
    assert os.stat(target).st_mtime == 1 and target.read_text() == 'keep'
    assert _lease.renew(str(tmp_path / 'new'), create=False) is False and not (tmp_path / 'new').exists()
    assert _lease.renew(str(tmp_path / 'new')) is True and (tmp_path / 'new').exists()


def test_the_stage_lock_refuses_a_link_and_never_truncates_its_target(tmp_path):
    """open(path, 'a+') followed a link planted at the lock's path and wrote the stage's pid over its target."""
    target = tmp_path / 'passwd'
    target.write_text('root:x:0:0::/root:/bin/sh\n')
    link = tmp_path / 'x.lease.lock'
    link.symlink_to(target)
    with pytest.raises(RuntimeError, match='x.lease.lock is a symbolic link or not a regular file; refused'):
        _stage_run.hold_stage_lock(str(link), 0)
    assert target.read_text() == 'root:x:0:0::/root:/bin/sh\n'


def test_held_tells_a_running_stage_from_a_finished_one(tmp_path):
    lock = str(tmp_path / 'x.lease.lock')
    assert _lease.held(lock) is False and not os.path.exists(lock)  # no file: not made
    handle = _stage_run.hold_stage_lock(lock, 0)
    assert _lease.held(lock) is True
    handle.close()
    assert _lease.held(lock) is False
    # the test takes the lock for no longer than itself: the stage can take it at once after
    again = _stage_run.hold_stage_lock(lock, 0)
    again.close()


def test_a_rerun_waits_for_the_lease_the_servers_stop_and_the_record():
    """A killed run's stage stops at its lease's end, then stops its server (up to its stop timeout, 60 s by default),
    then records: the old wait, lease + 30 s, gave up while a slow server was still stopping."""
    assert _stage_run.lock_wait_s(60, 60) == 60 + _stage_run.WATCH_S + 60 + 30
    assert _stage_run.lock_wait_s(0, 90) == 120


def test_the_keepers_renewal_runs_as_it_does_on_a_host(tmp_path):
    """renew_command is _lease.py itself run by a Python with the lease files as JSON: run it for real."""
    lease = tmp_path / 'a.lease'
    lease.write_text('')
    os.utime(lease, (1, 1))
    held = _stage_run.hold_stage_lock(str(lease) + '.lock', 0)
    command = lease_keeper.renew_command(sys.executable, [str(lease), str(tmp_path / 'b.lease')])
    out = subprocess.run(['/bin/sh', '-c', command], capture_output=True, text=True, check=True, timeout=60).stdout
    held.close()
    assert lease_keeper.parse_renewal(out) == [
        {'path': str(lease), 'renewed': True, 'running': True},
        {'path': str(tmp_path / 'b.lease'), 'renewed': False, 'running': False}]
    assert os.stat(lease).st_mtime > 1 and not (tmp_path / 'b.lease').exists()
    with pytest.raises(ValueError):
        lease_keeper.parse_renewal('Traceback ...')


class Host:
    """The stages as the keeper sees them through renew(): running or not, and failures on demand."""

    def __init__(self, clock, paths):
        self.clock = clock
        self.running = dict((path, False) for path in paths)
        self.calls = []
        self.fail = False

    def renew(self):
        self.calls.append(self.clock.now)
        self.clock.now += 0.3  # a round trip
        if self.fail:
            raise OSError('connection lost')
        return [{'path': path, 'renewed': True, 'running': running} for path, running in self.running.items()]


def keeper(tmp_path, host, clock, alive=lambda: True, lifetime=3600):
    sleeps = []

    def sleep(seconds):
        sleeps.append(seconds)
        clock.now += seconds
        for action_at, action in list(host.plan):
            if clock.now >= action_at:
                host.plan.remove((action_at, action))
                action()

    return lease_keeper.Keeper(str(tmp_path), host.renew, 2.0, lifetime, alive, clock=clock, sleep=sleep)


def test_the_keeper_renews_every_interval_until_released(tmp_path):
    clock = Clock()
    host = Host(clock, ['/s/a.lease'])
    host.plan = [(1010.0, lambda: (tmp_path / lease_keeper.STOP).write_text(''))]
    assert keeper(tmp_path, host, clock).run() == 'released'
    gaps = [b - a for a, b in zip(host.calls, host.calls[1:])]
    assert len(host.calls) >= 4 and max(gaps) < 2.0 + 0.3 + lease_keeper.TICK_S + 1e-6
    state = lease_keeper.read_state(str(tmp_path))
    assert state['stopped'] == 'released' and state['renewals'] == len(host.calls) and state['failures'] == 0


def test_the_keeper_stops_when_every_stage_it_saw_running_has_ended(tmp_path):
    clock = Clock()
    host = Host(clock, ['/s/a.lease', '/s/b.lease'])

    def start_a():
        host.running['/s/a.lease'] = True

    def start_b():
        host.running['/s/b.lease'] = True

    def end_a():
        host.running['/s/a.lease'] = False

    def end_b():
        host.running['/s/b.lease'] = False

    # b starts late (its host waited for a worker): a's end alone is not the end
    host.plan = [(1003.0, start_a), (1007.0, end_a), (1009.0, start_b), (1015.0, end_b)]
    assert keeper(tmp_path, host, clock).run() == 'every stage it kept has ended'
    assert 1015.0 <= clock.now < 1018.0


def test_the_keeper_stops_when_ansible_playbook_is_gone_and_counts_what_failed(tmp_path):
    clock = Clock()
    host = Host(clock, ['/s/a.lease'])
    host.fail = True
    gone = []
    host.plan = [(1005.0, lambda: gone.append(True))]
    assert keeper(tmp_path, host, clock, alive=lambda: not gone).run() == 'ansible-playbook is gone'
    state = lease_keeper.read_state(str(tmp_path))
    assert state['failures'] >= 2 and state['renewals'] == 0 and 'connection lost' in state['last_error']


def test_the_keeper_stops_at_its_lifetime_and_when_its_folder_is_gone(tmp_path):
    clock = Clock()
    host = Host(clock, ['/s/a.lease'])
    host.plan = []
    assert keeper(tmp_path / 'none', host, clock).run() == 'its state folder is gone'
    assert keeper(tmp_path, host, clock, lifetime=5).run() == 'lifetime of 5 s passed'


def test_a_keeper_started_for_real_renews_and_is_released(tmp_path):
    """start() forks a daemon of this process; release() stops it and hands back what it did."""
    lease = tmp_path / 'a.lease'
    lease.write_text('')
    seen = tmp_path / 'renewed'

    def renew():
        with open(seen, 'a', encoding='utf-8') as handle:
            handle.write('x')
        return [{'path': str(lease), 'renewed': True, 'running': True}]

    started = lease_keeper.start(renew, 0.05, 60, tmp_root=str(tmp_path))
    assert started['pid'] and lease_keeper.proc_start(started['pid'])
    deadline = time.monotonic() + 30
    while (not seen.exists() or len(seen.read_text()) < 3) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(seen.read_text()) >= 3
    state = lease_keeper.release(started)
    assert state['stopped'] == 'released' and state['renewals'] >= 3
    assert not os.path.exists(started['folder'])
