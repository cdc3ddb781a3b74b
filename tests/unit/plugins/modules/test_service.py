# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""service with the supervisor backend: real processes, started detached, stopped by process group, exits recorded.

Every wait has a deadline (wait_until); nothing is timed.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys

import pytest

from ansible_collections.specdec.bench.plugins.module_utils import _supervisor as supervisor
from ansible_collections.specdec.bench.plugins.modules import service
from testhelpers import wait_until  # noqa: E402  pylint: disable=wrong-import-position,import-error

NAME = 'specdec-test-tp1-autoregressive.service'


@pytest.fixture(name='svc')
def supervised(tmp_path, run_module):
    started = []

    def call(state='status', definition=None, name=NAME, **extra):
        args = dict(name=name, backend='supervisor', state=state, state_dir=str(tmp_path), **extra)
        if definition is not None:
            args['definition'] = definition
        result = run_module(service, args)
        if state == 'started':
            started.append(name)
        return result
    yield call
    for name in started:  # never leave a process behind
        run = supervisor.read_json(str(tmp_path / name / 'run.json'))
        if run and supervisor.alive(run):
            supervisor.signal_group(run, signal.SIGKILL)


def sleeper(tmp_path, *extra):
    """A program that writes a line, starts a child in its group, and waits for SIGTERM."""
    script = tmp_path / 'sleeper.py'
    script.write_text(
        'import os, signal, subprocess, sys, time\n'
        'signal.signal(signal.SIGTERM, lambda *a: (print("terminated", flush=True), sys.exit(3)))\n'
        'print("hello from", os.getpid(), os.environ.get("GREETING"), flush=True)\n'
        'child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])\n'
        'open(sys.argv[1], "w").write(str(child.pid))\n'
        'time.sleep(600)\n')
    return {'argv': [sys.executable, str(script), str(tmp_path / 'child.pid')] + list(extra),
            'env': {'GREETING': 'hi'}, 'cwd': str(tmp_path)}


def test_started_runs_detached_and_never_twice(svc, tmp_path):
    first = svc('started', sleeper(tmp_path))
    assert first['changed'] and first['service']['state'] == 'running'
    pid = first['service']['pid']
    assert os.getsid(pid) != os.getsid(0), 'the service has a session of its own'
    child = int(wait_until(lambda: (tmp_path / 'child.pid').exists() and (tmp_path / 'child.pid').read_text(), 'the child'))
    assert child in svc()['service']['pids'] and pid in svc()['service']['pids']
    assert supervisor.owner_of(child, str(tmp_path)) == NAME
    again = svc('started', sleeper(tmp_path))
    assert not again['changed'] and again['service']['pid'] == pid
    log = wait_until(lambda: [line for line in svc(log_lines=20)['log'] if line.startswith('hello from')], 'the log')
    assert log == ['hello from %d hi' % pid]


def test_stopped_terminates_the_group_and_records_the_exit(svc, tmp_path):
    pid = svc('started', sleeper(tmp_path))['service']['pid']
    child = int(wait_until(lambda: (tmp_path / 'child.pid').exists() and (tmp_path / 'child.pid').read_text(), 'the child'))
    result = svc('stopped', timeout=10)
    assert result['changed'] and result['service']['state'] == 'failed' and result['service']['exit_code'] == 3
    assert supervisor.start_ticks(pid) is None and supervisor.start_ticks(child) is None, 'the whole group is gone'
    assert 'terminated' in svc(log_lines=5)['log'][-2]
    assert not svc('stopped')['changed']


def test_sigkill_after_the_timeout(svc, tmp_path):
    definition = {'argv': [sys.executable, '-c', 'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); '
                                                 'print("up", flush=True); time.sleep(600)']}
    svc('started', definition)
    wait_until(lambda: 'up' in svc(log_lines=5)['log'], 'the program to ignore SIGTERM')
    result = svc('stopped', timeout=1)
    assert result['service']['state'] == 'failed' and result['service']['signal'] == signal.SIGKILL


def test_exit_status_is_recorded_without_the_controller(svc, tmp_path):
    svc('started', {'argv': [sys.executable, '-c', 'import sys; print("bye"); sys.exit(7)']})
    status = wait_until(lambda: svc()['service']['state'] != 'running' and svc()['service'], 'the exit')
    assert status['state'] == 'failed' and status['exit_code'] == 7
    ended = json.loads((tmp_path / NAME / 'exit.json').read_text())
    assert ended['exit_code'] == 7 and ended['finished']
    svc('started', {'argv': [sys.executable, '-c', 'pass']})
    assert wait_until(lambda: svc()['service']['state'] == 'exited', 'a clean exit')


def test_a_program_that_cannot_run_is_failed_with_why(svc, tmp_path):
    result = svc('started', {'argv': [str(tmp_path / 'nosuch')]})
    assert result['service']['state'] == 'failed'
    assert 'FileNotFoundError' in result['service']['error']
    assert 'could not start' in svc(log_lines=3)['log'][-1]


def test_env_files_and_missing_definition(svc, tmp_path):
    (tmp_path / 'secrets.env').write_text('# a comment\nTOKEN="s3cret"\n')
    definition = {'argv': [sys.executable, '-c', 'import os; print(os.environ["TOKEN"])'],
                  'env_files': [str(tmp_path / 'secrets.env'), '-' + str(tmp_path / 'absent.env')]}
    svc('started', definition)
    assert wait_until(lambda: 's3cret' in svc(log_lines=5)['log'], 'the secret from the env file')
    missing = svc('started', name='specdec-nosuch.service')
    assert missing['failed'] and 'is not defined' in missing['msg']


@pytest.mark.parametrize('definition, fragment', [
    ({'argv': []}, 'definition.argv'),
    ({'argv': ['python3']}, 'an absolute path'),
    ({'argv': ['/bin/true'], 'user': 'x'}, 'allowed: a mapping with keys'),
    ({'argv': ['/bin/true'], 'env': {'A': True}}, 'definition.env.A'),
    ({'argv': ['/bin/true'], 'env': {'A=B': 'x'}}, "definition.env has the name 'A=B'"),
    ({'argv': ['/bin/true'], 'uid': 65534}, 'definition has uid; allowed: uid, gid and groups together'),
    ({'argv': ['/bin/true'], 'uid': 65534, 'gid': 65534, 'groups': ['video']}, "definition.groups[0] is 'video'"),
    ({'argv': ['/bin/true'], 'uid': -1, 'gid': 0, 'groups': []}, 'definition.uid is -1'),
    ({'argv': ['/bin/true'], 'inherit_env': 'no'}, 'definition.inherit_env'),
])
def test_a_bad_definition_names_the_field(svc, definition, fragment):
    result = svc('defined', definition)
    assert result['failed'] and fragment in result['msg']


def test_defined_is_idempotent_and_absent_removes_it(svc, tmp_path):
    definition = {'argv': ['/bin/true']}
    assert svc('defined', definition)['changed']
    assert not svc('defined', definition)['changed']
    assert svc()['service']['state'] == 'inactive'
    assert svc('absent')['changed'] and not (tmp_path / NAME).exists()
    assert svc()['service']['state'] == 'not-found'


def test_a_killed_supervisor_is_seen_as_failed_not_running(svc, tmp_path):
    svc('started', {'argv': [sys.executable, '-c', 'import time; time.sleep(600)']})
    run = json.loads((tmp_path / NAME / 'run.json').read_text())
    os.kill(run['supervisor_pid'], signal.SIGKILL)
    supervisor.signal_group(run, signal.SIGKILL)
    status = wait_until(lambda: svc()['service']['state'] != 'running' and svc()['service'], 'the end')
    assert status['state'] == 'failed' and 'recorded no exit' in status['error']


def test_an_env_file_in_systemds_quoting_reaches_the_program_exactly(svc, tmp_path):
    """sglang_unit writes its secrets file for EnvironmentFile= (double quotes, backslash escapes); the supervisor
    reads it as systemd does."""
    secret = 'a"b\\c$d`e f'
    quoted = secret.replace('\\', '\\\\').replace('"', '\\"').replace('$', '\\$').replace('`', '\\`')
    (tmp_path / 'secrets.env').write_text('TOKEN="%s"\nPLAIN=x=y\n' % quoted)
    out = tmp_path / 'seen.json'
    definition = {'argv': [sys.executable, '-c', 'import json, os, sys; json.dump([os.environ["TOKEN"], os.environ["PLAIN"]], '
                                                 'open(sys.argv[1], "w"))', str(out)],
                  'env_files': [str(tmp_path / 'secrets.env')]}
    svc('started', definition)
    wait_until(lambda: svc()['service']['state'] == 'exited', 'the program to end')
    assert json.loads(out.read_text()) == [secret, 'x=y']


# ---- state=defined on systemd: render, stage, verify, install ----

UNIT_DEFINITION = {
    'argv': ['/usr/bin/python3', '-m', 'sglang.launch_server', '--host=127.0.0.1'],
    'env': {'CUDA_VISIBLE_DEVICES': 'GPU-1', 'HOME': '/var/lib/specdec'}, 'env_files': ['-/etc/specdec/test.env'],
    'cwd': '/', 'description': 'specdec test', 'cpu_affinity': [0, 1, 2, 3], 'numa_nodes': '0',
    'unit': {'comment': ['# test'], 'exec_lines': [3, 1], 'Unit': ['description'],
             'Service': [{'Type': 'simple'}, 'env', 'cpu_affinity', 'numa_nodes', 'env_files', 'argv', 'cwd', {'Restart': 'no'}]},
}
UNIT_TEXT = ('# test\n[Unit]\nDescription=specdec test\n\n[Service]\nType=simple\n'
             'Environment="CUDA_VISIBLE_DEVICES=GPU-1"\nEnvironment="HOME=/var/lib/specdec"\n'
             'CPUAffinity=0-3\nNUMAPolicy=bind\nNUMAMask=0\nEnvironmentFile=-/etc/specdec/test.env\n'
             "ExecStart='/usr/bin/python3' '-m' 'sglang.launch_server' \\\n    '--host=127.0.0.1'\nWorkingDirectory=/\nRestart=no\n")


@pytest.fixture(name='unit')
def systemd_unit(tmp_path, run_module, monkeypatch):
    """service with backend systemd against folders under tmp_path, a systemctl that logs its calls (every unit loaded
    and inactive) and a systemd-analyze that logs what it verified (and refuses a unit whose text holds REFUSE)."""
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    log = tmp_path / 'calls.log'
    (bin_dir / 'systemctl').write_text(
        '#!/bin/sh\necho "systemctl $*" >> %s\n'
        'case "$1" in show) printf "Id=x.service\\nLoadState=loaded\\nActiveState=inactive\\nSubState=dead\\nMainPID=0\\n";; esac\n' % log)
    (bin_dir / 'systemd-analyze').write_text(
        '#!/bin/sh\necho "systemd-analyze $*" >> %s\n'
        'if /bin/grep -q REFUSE "$2"; then echo "$2:9: Executable path is not absolute" >&2; exit 1; fi\n' % log)
    for name in ('systemctl', 'systemd-analyze'):
        os.chmod(str(bin_dir / name), 0o755)
    monkeypatch.setenv('PATH', str(bin_dir))

    def call(definition=None, state='defined', **extra):
        args = dict(name=NAME, backend='systemd', state=state, unit_dir=str(tmp_path / 'system'),
                    staging_dir=str(tmp_path / 'staging'), **extra)
        args['definition'] = UNIT_DEFINITION if definition is None else definition
        return run_module(service, args)
    call.log = log
    call.installed = tmp_path / 'system' / NAME
    call.staged = tmp_path / 'staging' / NAME
    return call


def test_systemd_defined_stages_verifies_then_installs(unit):
    result = unit()
    assert not result.get('failed') and result['changed']
    assert unit.installed.read_text() == UNIT_TEXT and unit.staged.read_text() == UNIT_TEXT
    assert os.stat(str(unit.installed)).st_mode & 0o777 == 0o644
    assert os.stat(os.path.dirname(str(unit.staged))).st_mode & 0o777 == 0o700
    assert 'systemd-analyze verify %s' % unit.staged in unit.log.read_text()
    again = unit()
    assert not again['changed']  # the same bytes: unchanged, though verified again
    assert unit.log.read_text().count('systemd-analyze verify') == 2


def test_systemd_defined_reports_a_changed_mode_and_byte(unit):
    unit()
    os.chmod(str(unit.installed), 0o600)
    assert unit()['changed'] and os.stat(str(unit.installed)).st_mode & 0o777 == 0o644
    assert unit(dict(UNIT_DEFINITION, description='specdec test 2'))['changed']
    assert 'Description=specdec test 2\n' in unit.installed.read_text()


def test_a_unit_systemd_analyze_refuses_stays_in_staging(unit):
    result = unit(dict(UNIT_DEFINITION, description='REFUSE'))
    assert result['failed'] and 'systemd-analyze verify refused' in result['msg'] and 'not absolute' in result['msg']
    assert unit.staged.exists() and not unit.installed.exists()


def test_check_mode_writes_and_verifies_nothing(unit):
    result = unit(_ansible_check_mode=True)
    assert result['changed'] and not unit.installed.exists() and not unit.staged.exists()
    assert 'systemd-analyze' not in (unit.log.read_text() if unit.log.exists() else '')
    unit()
    assert not unit(_ansible_check_mode=True)['changed']


def test_without_systemd_analyze_the_unit_is_installed_unverified(unit, tmp_path):
    os.remove(str(tmp_path / 'bin' / 'systemd-analyze'))
    assert unit()['changed'] and unit.installed.read_text() == UNIT_TEXT


def test_a_started_unit_is_reloaded_first(unit):
    result = unit(state='started')
    calls = unit.log.read_text().splitlines()
    assert 'systemctl daemon-reload' in calls
    assert calls.index('systemctl daemon-reload') < calls.index('systemctl start -- %s' % NAME)
    assert result['changed'] and not result.get('failed')


@pytest.mark.parametrize(('changes', 'fragment'), [
    ({'argv': ['/usr/bin/python3', 'x\nExecStartPre=/bin/true']}, r'definition\.argv\[1\] holds the control character'),
    ({'env': {'A': 'x\r'}}, r'definition\.env\.A holds the control character'),
    ({'unit': None}, 'definition.unit is None'),
    ({'argv': ['python3']}, 'definition.argv.0. is .python3.; allowed: an absolute path'),
])
def test_a_bad_systemd_definition_names_the_field(unit, changes, fragment):
    result = unit(dict(UNIT_DEFINITION, **changes))
    assert result['failed'] and re.search(fragment, result['msg']), result['msg']
    assert not unit.staged.exists() and not unit.installed.exists()


def test_secrets_file_is_0600_and_never_logged(unit, tmp_path):
    secret = 'hf_"s3cr3t"\\$x'
    path = tmp_path / 'etc' / 'specdec' / 'test.env'
    result = unit(secrets={'path': str(path), 'env': {'HF_TOKEN': secret}, 'comment': ['# secrets']})
    assert result['changed'] and secret not in json.dumps(result)
    assert path.read_text() == '# secrets\nHF_TOKEN="hf_\\"s3cr3t\\"\\\\\\$x"\n'
    assert os.stat(str(path)).st_mode & 0o777 == 0o600 and os.stat(str(path.parent)).st_mode & 0o777 == 0o700
    assert not unit(secrets={'path': str(path), 'env': {'HF_TOKEN': secret}, 'comment': ['# secrets']})['changed']


def test_the_supervisor_keeps_no_unit_layout(svc, tmp_path):
    assert svc('defined', dict(UNIT_DEFINITION, argv=[sys.executable, '-c', 'pass']))['changed']
    kept = json.loads((tmp_path / NAME / 'service.json').read_text())
    assert 'unit' not in kept and 'numa_nodes' not in kept and kept['cpu_affinity'] == '0-3'
