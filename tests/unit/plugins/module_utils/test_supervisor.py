# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""_supervisor: which service a pid belongs to (a fake /proc tree), and a real process under SUPERVISOR_SCRIPT.

Every wait has a deadline; nothing is timed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import sys
import time

import pytest

from ansible_collections.specdec.bench.plugins.module_utils import _supervisor as supervisor
from testhelpers import wait_until  # noqa: E402  pylint: disable=wrong-import-position,import-error

DEADLINE_S = 15.0
SERVICE = 'specdec-train-dflash-sim.service'
OTHER = 'specdec-sglang-tp1.service'


# --- a fake /proc ----------------------------------------------------------------------------------

def fake_process(proc, pid, ppid, pgid, ticks, state='S', comm='python3'):
    """/proc/<pid>/stat as the kernel writes it: state, ppid, pgrp, ... starttime is field 22."""
    fields = [state, ppid, pgid, pgid, 0, -1, 4194560] + [0] * 12 + [ticks] + [0] * 32
    folder = proc / str(pid)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / 'stat').write_text('%d (%s) %s\n' % (pid, comm, ' '.join(str(field) for field in fields)))


def fake_service(state_dir, name, pid, ticks, exited=False, boot_id=None):
    folder = state_dir / name
    folder.mkdir(parents=True)
    (folder / 'service.json').write_text(json.dumps({'name': name, 'argv': ['/usr/bin/python3', 'train.py']}))
    (folder / 'run.json').write_text(json.dumps({'supervisor_pid': 90, 'pid': pid, 'pgid': pid, 'start_ticks': ticks,
                                                 'started': '2026-12-03T10:00:00Z', 'boot_id': boot_id}))
    if exited:
        (folder / 'exit.json').write_text(json.dumps({'exit_code': None, 'signal': 9, 'error': None}))


@pytest.fixture(name='host')
def fake_host(tmp_path):
    """PID 1 (sim-init), a supervisor (90) running a trainer (100, its group) with a worker (101, same group)
    and a helper that made a session of its own (102, child of 101); an ssh shell (200) that is no service's."""
    proc, state_dir = tmp_path / 'proc', tmp_path / 'services'
    fake_process(proc, 1, 0, 1, 5, comm='sim-init')
    fake_process(proc, 90, 1, 90, 900)
    fake_process(proc, 100, 90, 100, 1000)
    fake_process(proc, 101, 100, 100, 1001)
    fake_process(proc, 102, 101, 102, 1002)
    fake_process(proc, 200, 1, 200, 2000, comm='bash')
    fake_service(state_dir, SERVICE, 100, 1000)
    return proc, state_dir


@pytest.mark.parametrize('pid', [100, 101, 102])
def test_main_pid_group_members_and_descendants_belong_to_the_service(host, pid):
    proc, state_dir = host
    assert supervisor.owner_of(pid, str(state_dir), str(proc)) == SERVICE
    assert supervisor.group_pids(supervisor.read_json(str(state_dir / SERVICE / 'run.json')), str(proc)) == [100, 101, 102]


@pytest.mark.parametrize('pid', [1, 90, 200, 4242])
def test_init_the_supervisor_other_and_missing_pids_belong_to_none(host, pid):
    proc, state_dir = host
    assert supervisor.owner_of(pid, str(state_dir), str(proc)) is None


def test_no_state_folder_means_no_owner(host):
    proc, state_dir = host
    assert supervisor.owner_of(100, str(state_dir / 'missing'), str(proc)) is None


def test_a_reused_main_pid_is_not_the_service(host):
    """Pid 100 now is another process (other start ticks), group leader of itself: the old group is gone."""
    proc, state_dir = host
    fake_process(proc, 100, 1, 100, 5000)
    for pid in (101, 102):
        (proc / str(pid) / 'stat').unlink()
        (proc / str(pid)).rmdir()
    assert supervisor.owner_of(100, str(state_dir), str(proc)) is None
    assert supervisor.status(str(state_dir / SERVICE), str(proc))['state'] == 'failed'


def test_a_worker_that_outlived_the_main_process_is_still_the_services(host):
    """The trainer was killed, its worker ignored SIGTERM and still holds its GPU: systemd would name the unit too."""
    proc, state_dir = host
    (proc / '100' / 'stat').unlink()
    fake_process(proc, 101, 1, 100, 1001)  # re-parented to PID 1, still in the group
    (state_dir / SERVICE / 'exit.json').write_text(json.dumps({'exit_code': None, 'signal': 9, 'error': None}))
    assert supervisor.owner_of(101, str(state_dir), str(proc)) == SERVICE
    assert supervisor.owner_of(102, str(state_dir), str(proc)) is None  # no longer a descendant, not in the group
    assert supervisor.status(str(state_dir / SERVICE), str(proc))['pids'] == [101]


def test_a_zombie_is_not_alive_and_holds_nothing(host):
    """A main process that exited under a PID 1 that never reaps (sleep as a Docker entrypoint) is a zombie."""
    proc, state_dir = host
    fake_process(proc, 100, 1, 100, 1000, state='Z')
    fake_process(proc, 101, 1, 100, 1001, state='Z')
    fake_process(proc, 102, 1, 102, 1002)
    run = supervisor.read_json(str(state_dir / SERVICE / 'run.json'))
    assert not supervisor.alive(run, str(proc))
    assert supervisor.owner_of(100, str(state_dir), str(proc)) is None
    assert supervisor.status(str(state_dir / SERVICE), str(proc))['state'] == 'failed'


def test_another_boot_is_another_process(host):
    proc, state_dir = host
    run = supervisor.read_json(str(state_dir / SERVICE / 'run.json'))
    run['boot_id'] = 'an-earlier-boot'
    assert not supervisor.alive(run, str(proc), boot_id='this-boot')


def test_the_first_service_that_holds_the_pid_names_it(host):
    proc, state_dir = host
    fake_process(proc, 300, 90, 300, 3000)
    fake_service(state_dir, OTHER, 300, 3000)
    assert supervisor.owner_of(300, str(state_dir), str(proc)) == OTHER
    assert supervisor.owner_of(101, str(state_dir), str(proc)) == SERVICE


# --- a real supervised process ---------------------------------------------------------------------

TRAINER = '''
import os, signal, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[2], sys.argv[1] + ".ready"])
with open(sys.argv[1] + ".tmp", "w") as handle:
    handle.write(str(child.pid))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
print("training", os.environ.get("RUN_NAME"), flush=True)
time.sleep(600)
'''


SLEEPER = 'import time; time.sleep(600)'
# a data loader worker that ignores SIGTERM (and would hold its GPU after the trainer exited)
STUBBORN = ('import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); open(sys.argv[1], "w").close(); '
            'time.sleep(600)')


@pytest.fixture(name='supervised')
def supervised_service(tmp_path, request):
    """A service folder with service.json, started as the module starts it: SUPERVISOR_SCRIPT in a session of its own.

    The trainer's child runs the code of the test's parameter (SLEEPER unless it has one).
    """
    child_code = getattr(request, 'param', SLEEPER)
    state_dir = tmp_path / 'services'
    folder = state_dir / SERVICE
    folder.mkdir(parents=True)
    script = tmp_path / 'trainer.py'
    script.write_text(TRAINER)
    child_file = tmp_path / 'child.pid'
    (folder / 'service.json').write_text(json.dumps({
        'name': SERVICE, 'argv': [sys.executable, str(script), str(child_file), child_code], 'env': {'RUN_NAME': 'dflash-sim'},
        'env_files': ['-' + str(tmp_path / 'no-such.env')], 'cwd': str(tmp_path), 'timeout_stop_sec': 5}))
    supervisor_process = subprocess.Popen(  # pylint: disable=consider-using-with
        [sys.executable, '-c', supervisor.SUPERVISOR_SCRIPT, str(folder)], stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    yield state_dir, folder, child_file
    run = supervisor.read_json(str(folder / 'run.json'))
    if run:  # never leave a process behind
        supervisor.signal_group(run, signal.SIGKILL)
    if supervisor_process.poll() is None:
        supervisor_process.kill()
    supervisor_process.wait(DEADLINE_S)


def test_a_supervised_process_is_found_and_stopped(supervised):
    state_dir, folder, child_file = supervised
    run = wait_until(lambda: supervisor.read_json(str(folder / 'run.json')), 'run.json')
    assert run['pid'] == run['pgid'] and run['start_ticks'] == supervisor.start_ticks(run['pid'])
    assert os.getpgid(run['pid']) == run['pid'] and os.getsid(run['pid']) != os.getsid(0)
    status = supervisor.status(str(folder))
    assert status['state'] == 'running' and status['pid'] == run['pid']

    child = int(wait_until(lambda: child_file.exists() and child_file.read_text(), 'the trainer to start its child'))
    assert supervisor.owner_of(child, str(state_dir)) == SERVICE
    assert supervisor.owner_of(run['pid'], str(state_dir)) == SERVICE
    assert supervisor.owner_of(os.getpid(), str(state_dir)) is None
    assert supervisor.owner_of(run['supervisor_pid'], str(state_dir)) is None
    assert set(supervisor.group_pids(run)) == {run['pid'], child}
    wait_until(lambda: any(line == 'training dflash-sim' for line in supervisor.log_tail(str(folder))), 'the log')

    assert supervisor.stop(str(folder), 5) == (True, 'terminated')
    ended = supervisor.read_json(str(folder / 'exit.json'))
    assert ended['signal'] == signal.SIGTERM and ended['exit_code'] is None and ended['error'] is None
    status = supervisor.status(str(folder))
    assert status['state'] == 'failed' and status['signal'] == signal.SIGTERM and status['pids'] == []
    assert supervisor.owner_of(child, str(state_dir)) is None
    assert supervisor.stop(str(folder), 5) == (False, 'not running')
    assert supervisor.log_tail(str(folder))[-1].startswith('-- specdec supervisor: %s killed by signal 15' % SERVICE)


@pytest.mark.parametrize('supervised', [STUBBORN], indirect=True)
def test_a_member_that_ignores_sigterm_is_killed_after_the_timeout(supervised):
    state_dir, folder, child_file = supervised
    run = wait_until(lambda: supervisor.read_json(str(folder / 'run.json')), 'run.json')
    child = int(wait_until(lambda: child_file.exists() and child_file.read_text(), 'the trainer to start its child'))
    wait_until(lambda: os.path.exists(str(child_file) + '.ready'), 'the child to ignore SIGTERM')
    assert supervisor.stop(str(folder), 1) == (True, 'killed')
    assert supervisor.group_pids(run) == [] and supervisor.start_ticks(child) is None
    assert supervisor.owner_of(child, str(state_dir)) is None
    assert supervisor.status(str(folder))['signal'] == signal.SIGTERM  # the trainer itself went on SIGTERM


# --- the moment between the program's end and its exit record -------------------------------------------------------

def test_an_exit_being_recorded_is_waited_for_while_the_supervisor_lives(tmp_path):
    """The program is gone (a zombie), its supervisor (90) lives and writes exit.json a moment later: the status is
    the recorded exit, not 'gone without a recorded exit'."""
    proc, state_dir = tmp_path / 'proc', tmp_path / 'services'
    fake_process(proc, 90, 1, 90, 900)
    fake_process(proc, 100, 90, 100, 1000, state='Z')
    fake_service(state_dir, SERVICE, 100, 1000)
    folder = state_dir / SERVICE
    writer = threading.Timer(0.3, lambda: (folder / 'exit.json').write_text(json.dumps(
        {'exit_code': 7, 'signal': None, 'error': None, 'finished': '2026-12-03T10:01:00Z'})))
    writer.start()
    try:
        found = supervisor.status(str(folder), proc_root=str(proc))
    finally:
        writer.join()
    assert found['state'] == 'failed' and found['exit_code'] == 7 and found['error'] is None


def test_without_a_living_supervisor_a_gone_program_is_failed_unrecorded_at_once(tmp_path):
    proc, state_dir = tmp_path / 'proc', tmp_path / 'services'
    fake_process(proc, 100, 1, 100, 1000, state='Z')
    fake_service(state_dir, SERVICE, 100, 1000)
    started = time.monotonic()
    found = supervisor.status(str(state_dir / SERVICE), proc_root=str(proc))
    assert found['state'] == 'failed' and 'recorded no exit' in found['error']
    assert time.monotonic() - started < supervisor.EXIT_RECORD_WAIT_S


def test_a_supervisor_that_never_records_is_waited_for_only_so_long(tmp_path, monkeypatch):
    proc, state_dir = tmp_path / 'proc', tmp_path / 'services'
    fake_process(proc, 90, 1, 90, 900)
    fake_service(state_dir, SERVICE, 100, 1000)
    monkeypatch.setattr(supervisor, 'EXIT_RECORD_WAIT_S', 0.2)
    found = supervisor.status(str(state_dir / SERVICE), proc_root=str(proc))
    assert found['state'] == 'failed' and 'recorded no exit' in found['error']
