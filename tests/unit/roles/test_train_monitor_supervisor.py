# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The training monitor where PID 1 is not systemd: the run's state from its folder of specdec's supervisor.

The folders are written here as the supervisor writes them (service.json, run.json, exit.json) and read by the
collection's _supervisor.status(), as the installed service reads them; then the service runs for real against a run
started by the real supervisor script, which the test makes fail or stops.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from test_train_monitor_server import DEADLINE, Service, load_monitor
from testhelpers import wait_until

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, 'plugins', 'module_utils'))
import _supervisor  # noqa: E402  pylint: disable=import-error,wrong-import-position

UNIT = 'specdec-train-dflash-test.service'


def write(folder, name, data):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), 'w', encoding='utf-8') as handle:
        json.dump(data, handle)


def own_ticks():
    with open('/proc/self/stat', encoding='utf-8') as handle:
        return int(handle.read().rsplit(')', 1)[1].split()[19])


def folder_with(tmp_path, run=None, ended=None, defined=True):
    folder = str(tmp_path / UNIT)
    os.makedirs(folder)
    if defined:
        write(folder, 'service.json', {'name': UNIT, 'argv': ['/bin/true'], 'env': {}, 'env_files': [], 'cwd': '/'})
    if run is not None:
        write(folder, 'run.json', dict({'supervisor_pid': 1, 'started': '2026-12-02T10:00:00Z', 'boot_id': None}, **run))
    if ended is not None:
        write(folder, 'exit.json', dict({'finished': '2026-12-02T11:00:00Z', 'exit_code': None, 'signal': None,
                                         'error': None}, **ended))
    return folder


ALIVE = {'pid': os.getpid(), 'pgid': os.getpid(), 'start_ticks': None}
# a pid that is not running: pid_max is at most 2**22
GONE = {'pid': 2 ** 22 + 1, 'pgid': 2 ** 22 + 1, 'start_ticks': 1}


@pytest.mark.parametrize('case, state, detail', [
    (dict(defined=False), 'unknown', {'load_state': 'not-found', 'active_state': None}),
    (dict(), 'not started', {'load_state': 'loaded', 'active_state': 'inactive', 'sub_state': 'dead'}),
    (dict(run=ALIVE), 'running', {'active_state': 'active', 'sub_state': 'running', 'exit_status': None,
                                  'started': '2026-12-02T10:00:00Z', 'exited': None}),
    (dict(run=GONE, ended={'exit_code': 0}), 'succeeded',
     {'active_state': 'inactive', 'result': 'success', 'exit_status': 0, 'exited': '2026-12-02T11:00:00Z'}),
    (dict(run=GONE, ended={'exit_code': 1}), 'failed',
     {'active_state': 'failed', 'sub_state': 'failed', 'result': 'exit-code', 'exit_status': 1}),
    (dict(run=GONE, ended={'signal': 9}), 'failed', {'active_state': 'failed', 'result': 'signal', 'exit_status': 9}),
    # stopped with SIGTERM: as systemd counts it, stopped rather than failed
    (dict(run=GONE, ended={'signal': 15}), 'stopped', {'active_state': 'inactive', 'result': 'success'}),
    (dict(run=GONE, ended={'exit_code': 127, 'error': 'FileNotFoundError: no /opt/nothing'}), 'failed',
     {'result': 'exit-code', 'exit_status': 127, 'error': 'FileNotFoundError: no /opt/nothing'}),
    # the supervisor itself killed (or a reboot): no exit recorded, the process gone
    (dict(run=GONE), 'failed', {'active_state': 'failed', 'result': 'lost', 'exit_status': None}),
])
def test_state_from_a_supervisor_folder(tmp_path, case, state, detail):
    monitor = load_monitor()
    found, details = monitor.service_state(_supervisor.status(folder_with(tmp_path, **case)))
    assert found == state
    assert {key: details[key] for key in detail} == detail
    # the same keys as the unit's details, so the page reads both alike
    assert set(details) == {'load_state', 'active_state', 'sub_state', 'result', 'exit_status', 'started', 'exited',
                            'error'}


def test_a_pid_reused_by_another_process_is_not_the_run(tmp_path):
    monitor = load_monitor()
    run = dict(ALIVE, start_ticks=own_ticks() + 1)
    assert monitor.service_state(_supervisor.status(folder_with(tmp_path, run=run)))[0] == 'failed'


def test_the_monitor_reads_the_supervisor_not_systemctl(tmp_path):
    monitor_module = load_monitor()
    service = Service(str(tmp_path))
    state_dir = str(tmp_path / 'services')
    folder_with(tmp_path / 'services', run=ALIVE)
    # a systemctl that says the opposite: it must not be asked
    service.set_unit(ActiveState='failed', SubState='failed', Result='exit-code', ExecMainStatus='3')
    monitor = monitor_module.Monitor(service.run_dir, UNIT, 'dflash-test', systemctl=service.systemctl,
                                     backend='supervisor', state_dir=state_dir)
    status = monitor.status()
    assert status['backend'] == 'supervisor' and status['state'] == 'running'
    assert status['unit_state']['active_state'] == 'active'


def supervise(state_dir, name, argv, env):
    """Start argv under the real supervisor script, as specdec.bench.service does (a session of its own)."""
    folder = os.path.join(state_dir, name)
    write(folder, 'service.json', {'name': name, 'argv': argv, 'env': env, 'env_files': [], 'cwd': '/'})
    subprocess.Popen([sys.executable, '-c', _supervisor.SUPERVISOR_SCRIPT, folder],  # pylint: disable=consider-using-with
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True)
    return folder


# A run that logs steps to train.log until its fail file appears, then fails as the simulated trainer does.
RUN_SCRIPT = r'''
import json, os, sys, time
log = open(os.path.join(os.environ['RUN_DIR'], 'train.log'), 'a', buffering=1)
for step in range(1, 100000):
    log.write(json.dumps({'step': step, 'total_steps': 100000, 'loss': 3.0}) + '\n')
    if os.path.exists(os.environ['FAIL_FILE']):
        log.write('torch.OutOfMemoryError: CUDA out of memory\n')
        sys.exit(1)
    time.sleep(0.05)
'''


@pytest.fixture(name='supervised')
def supervised_monitor(tmp_path):
    """The installed monitor, run for real with --backend supervisor, and a run started by the real supervisor."""
    service = Service(str(tmp_path))
    state_dir = str(tmp_path / 'services')
    fail_file = str(tmp_path / 'fail')
    folder = supervise(state_dir, UNIT, [sys.executable, '-c', RUN_SCRIPT],
                       {'RUN_DIR': service.run_dir, 'FAIL_FILE': fail_file})
    wait_until(lambda: os.path.exists(os.path.join(folder, 'run.json')), 'the supervisor did not start the run')
    service.process = subprocess.Popen(  # pylint: disable=consider-using-with
        [sys.executable, os.path.join(service.install, 'specdec_train_monitor.py'), '--run-dir', service.run_dir,
         '--unit', UNIT, '--port', str(service.port), '--interval', '0.1', '--backend', 'supervisor',
         '--state-dir', state_dir, '--systemctl', '/nonexistent/systemctl'],
        stderr=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONDONTWRITEBYTECODE='1'))
    deadline = time.monotonic() + DEADLINE
    while not answers(service):
        assert time.monotonic() < deadline and service.process.poll() is None, 'the monitor did not answer'
        time.sleep(0.05)
    yield service, folder, fail_file
    _supervisor.stop(folder, 5)
    service.stop()


def answers(service):
    try:
        return service.status()
    except OSError:
        return None


def progressing(service):
    """The status when the run is running and its progress is read, else None."""
    status = status_in(service, 'running')
    return status if status and status['progress'] else None


def status_in(service, *states):
    """The status when the run's state is one of states, else None."""
    status = service.status()
    return status if status['state'] in states else None


def test_the_page_follows_a_supervised_run_until_it_fails(supervised):
    service, folder, fail_file = supervised
    status = wait_until(lambda: progressing(service), 'the run is not shown running')
    assert status['backend'] == 'supervisor' and status['unit_state']['started']
    first = status['progress']['step']
    wait_until(lambda: service.status()['progress']['step'] > first, 'the step does not advance')
    with open(fail_file, 'w', encoding='utf-8'):
        pass
    status = wait_until(lambda: status_in(service, 'failed'), 'the failed run is not shown failed')
    assert status['unit_state']['active_state'] == 'failed' and status['unit_state']['result'] == 'exit-code'
    assert status['unit_state']['exit_status'] == 1 and status['unit_state']['exited']
    assert status['last_error'] == 'torch.OutOfMemoryError: CUDA out of memory'
    with open(os.path.join(folder, 'exit.json'), encoding='utf-8') as handle:
        assert json.load(handle)['exit_code'] == 1


def test_a_stopped_supervised_run_is_shown_stopped(supervised):
    service, folder, _fail_file = supervised
    wait_until(lambda: service.status()['state'] == 'running', 'the run is not shown running')
    assert _supervisor.stop(folder, 5)[0]
    status = wait_until(lambda: status_in(service, 'stopped', 'failed', 'succeeded'),
                        'the stopped run is still shown running')
    assert status['state'] == 'stopped' and status['unit_state']['exit_status'] == signal.SIGTERM
