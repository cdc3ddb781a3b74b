# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""process_stop against real processes started by the test: recorded first, SIGTERM, gone; SIGKILL after the timeout.

Every wait has a deadline; nothing is timed.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

from ansible_collections.specdec.bench.plugins.filter.conflicts import conflicts_restore_processes
from ansible_collections.specdec.bench.plugins.module_utils import _process as process
from ansible_collections.specdec.bench.plugins.module_utils import _supervisor as supervisor
from ansible_collections.specdec.bench.plugins.modules import process_stop, service
from testhelpers import wait_until  # noqa: E402  pylint: disable=wrong-import-position,import-error

DEADLINE_S = 15.0
SECRET = 'hf_do_not_print_me'


@pytest.fixture(name='holder')
def hand_started(tmp_path):
    """A program started by hand, in a session of its own (as setsid starts it), with a child in its group; it writes
    'ready' once its handlers are set. ignore_term: it survives SIGTERM."""
    started = []

    def start(ignore_term=False, port='30100'):
        ready = tmp_path / ('ready-%d' % len(started))
        script = tmp_path / 'wrapper.py'
        script.write_text(
            'import os, signal, subprocess, sys, time\n'
            'if sys.argv[1] == "ignore": signal.signal(signal.SIGTERM, signal.SIG_IGN)\n'
            'child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])\n'
            'open(sys.argv[2], "w").write(str(child.pid))\n'
            'time.sleep(600)\n')
        env = dict(os.environ, CUDA_VISIBLE_DEVICES='GPU-a100-0', HF_TOKEN=SECRET)
        proc = subprocess.Popen([sys.executable, str(script), 'ignore' if ignore_term else 'plain', str(ready),  # pylint: disable=consider-using-with
                                 '--port', port], env=env, cwd=str(tmp_path), start_new_session=True)
        started.append(proc)
        child = int(wait_until(lambda: ready.exists() and ready.read_text(), 'the wrapper to start its child'))
        return proc, child
    yield start
    for proc in started:  # never leave a process behind
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait(timeout=DEADLINE_S)


def call(run_module, tmp_path, pid, **extra):
    args = dict(name='hand-wrapper', pid=pid, match=r'wrapper\.py .*--port 30100',
                record=str(tmp_path / 'conflicts' / 'qwen36.json'), campaign='qwen36', timeout=10)
    args.update(extra)
    return run_module(process_stop, args)


def record(tmp_path):
    with open(tmp_path / 'conflicts' / 'qwen36.json', encoding='utf-8') as handle:
        return json.load(handle)


def test_records_then_terminates_the_process_and_its_group(run_module, tmp_path, holder):
    proc, child = holder()
    ticks = process.start_ticks(proc.pid)
    result = call(run_module, tmp_path, proc.pid)
    assert (result['changed'], result['state'], result['how'], result['recorded']) == (True, 'stopped', 'terminated', True)
    assert process.start_ticks(proc.pid) is None and process.start_ticks(child) is None  # group and child gone
    assert proc.wait(timeout=DEADLINE_S) == -signal.SIGTERM
    entry = record(tmp_path)['processes']['hand-wrapper']
    assert entry['argv'] == [sys.executable, str(tmp_path / 'wrapper.py'), 'plain', str(tmp_path / 'ready-0'),
                             '--port', '30100']
    assert (entry['pid'], entry['start_ticks'], entry['leads_group'], entry['cwd']) == (proc.pid, ticks, True, str(tmp_path))
    assert entry['program'] == sys.executable and entry['match'] == r'wrapper\.py .*--port 30100'
    assert entry['env']['HF_TOKEN'] == SECRET and entry['env']['CUDA_VISIBLE_DEVICES'] == 'GPU-a100-0'
    assert record(tmp_path)['campaign'] == 'qwen36'
    assert stat.S_IMODE(os.stat(tmp_path / 'conflicts' / 'qwen36.json').st_mode) == 0o600
    # the environment's values stay in the record
    assert SECRET not in json.dumps(result)
    assert 'HF_TOKEN' in result['process']['env_names'] and 'env' not in result['process']
    assert result['process']['argv'] == entry['argv']


def test_a_process_that_ignores_sigterm_is_killed_after_the_timeout(run_module, tmp_path, holder):
    proc, child = holder(ignore_term=True)
    started = time.monotonic()
    result = call(run_module, tmp_path, proc.pid, timeout=1)
    assert time.monotonic() - started >= 1
    assert (result['state'], result['how']) == ('stopped', 'killed')
    assert proc.wait(timeout=DEADLINE_S) == -signal.SIGKILL
    assert process.start_ticks(child) is None
    assert record(tmp_path)['processes']['hand-wrapper']['pid'] == proc.pid


def test_check_mode_records_and_signals_nothing(run_module, tmp_path, holder):
    proc, _child = holder()
    result = call(run_module, tmp_path, proc.pid, _ansible_check_mode=True)
    assert (result['changed'], result['state'], result['how'], result['recorded']) == (True, 'stopped', None, True)
    assert proc.poll() is None
    assert not (tmp_path / 'conflicts').exists()


def test_a_process_whose_command_line_does_not_match_is_not_touched(run_module, tmp_path, holder):
    proc, _child = holder(port='30000')
    result = call(run_module, tmp_path, proc.pid)
    assert result['failed'] and 'does not match: nothing was signalled' in result['msg']
    assert proc.poll() is None and not (tmp_path / 'conflicts').exists()


def test_a_gone_process_is_no_change(run_module, tmp_path, holder):
    proc, _child = holder()
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=DEADLINE_S)
    result = call(run_module, tmp_path, proc.pid)
    assert (result['changed'], result['state'], result['how']) == (False, 'gone', None)
    assert not (tmp_path / 'conflicts').exists()


def test_an_interrupted_runs_record_keeps_its_first_entry_and_other_keys(run_module, tmp_path, holder):
    path = tmp_path / 'conflicts' / 'qwen36.json'
    path.parent.mkdir()
    first = {'pid': 1234, 'start_ticks': 1, 'argv': [sys.executable, 'first'], 'program': sys.executable,
             'cwd': '/', 'env': {}, 'leads_group': True, 'pgid': 1234, 'name': 'hand-wrapper', 'uid': 0, 'gid': 0,
             'groups': []}
    path.write_text(json.dumps({'campaign': 'qwen36', 'units': {'a.service': {}}, 'servers': ['s.service'],
                                'processes': {'hand-wrapper': first}}))
    proc, _child = holder()
    result = call(run_module, tmp_path, proc.pid)
    assert (result['state'], result['recorded'], result['how']) == ('stopped', False, 'terminated')
    assert record(tmp_path) == {'campaign': 'qwen36', 'units': {'a.service': {}}, 'servers': ['s.service'],
                                'processes': {'hand-wrapper': first}}


def test_an_interrupted_runs_entry_the_restore_would_refuse_is_refused_before_the_stop(run_module, tmp_path, holder):
    """An entry of an older process_stop, without the owner: its restore would refuse it, so nothing is stopped."""
    path = tmp_path / 'conflicts' / 'qwen36.json'
    path.parent.mkdir()
    first = {'pid': 1234, 'start_ticks': 1, 'argv': [sys.executable, 'first'], 'program': sys.executable, 'cwd': '/',
             'env': {}, 'leads_group': True, 'pgid': 1234, 'name': 'hand-wrapper'}
    path.write_text(json.dumps({'campaign': 'qwen36', 'processes': {'hand-wrapper': first}}))
    proc, child = holder()
    result = call(run_module, tmp_path, proc.pid)
    assert result['failed'] and not result['recorded'] and result['how'] is None
    assert 'processes.hand-wrapper (pid 1234) cannot be restored: has no uid, gid, groups' in result['msg']
    assert result['msg'].endswith('nothing was signalled')
    assert proc.poll() is None and process.start_ticks(child) is not None
    assert record(tmp_path) == {'campaign': 'qwen36', 'processes': {'hand-wrapper': first}}


def test_a_second_process_joins_the_record(run_module, tmp_path, holder):
    first, _first_child = holder()
    second, _second_child = holder(port='30101')
    call(run_module, tmp_path, first.pid)
    call(run_module, tmp_path, second.pid, name='other', match='--port 30101')
    assert sorted(record(tmp_path)['processes']) == ['hand-wrapper', 'other']


@pytest.mark.parametrize('args, message', [
    ({'name': 'Hand Wrapper'}, "name is 'Hand Wrapper'; allowed: an id"),
    ({'match': 'wrapper(('}, 'allowed: a Python regular expression'),
    ({'pid': 1}, 'pid is 1; allowed: a process other than PID 1'),
])
def test_bad_arguments_are_refused(run_module, tmp_path, args, message):
    result = call(run_module, tmp_path, **dict({'pid': os.getpid()}, **args))
    assert result['failed'] and message in result['msg']


# --- restored as it ran: as its owner, word for word, with exactly its environment ------------------------------------

NOBODY = 65534
NOBODY_GROUPS = [44, 65534]  # numeric ids, as /proc lists them: no passwd or group entry is needed
as_root = pytest.mark.skipif(os.geteuid() != 0, reason='starting a process as another uid needs root')


@pytest.fixture(name='spawn')
def started_by_hand():
    """Start a program as someone would by hand (a session of its own, no stdio); killed with its group after the test."""
    started = []

    def start(argv, **popen):
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,  # pylint: disable=consider-using-with
                                start_new_session=True, **popen)
        started.append(proc)
        return proc
    yield start
    for proc in started:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait(timeout=DEADLINE_S)


@pytest.fixture(name='restore')
def restore_as_the_role_does(tmp_path, run_module):
    """The role's restore: conflicts_restore_processes on the record, then specdec.bench.service with each definition
    (the real supervisor); every restored service is killed after the test."""
    state_dir = tmp_path / 'services'
    started = []

    def restore():
        results = []
        for item in conflicts_restore_processes(record(tmp_path), 'qwen36'):
            started.append(item['service'])
            results.append(run_module(service, dict(name=item['service'], backend='supervisor', state='started',
                                                    state_dir=str(state_dir), definition=item['definition'])))
        return results
    yield restore
    for name in started:
        run = supervisor.read_json(str(state_dir / name / 'run.json'))
        if run and supervisor.alive(run):
            supervisor.signal_group(run, signal.SIGKILL)


def proc_ids(pid):
    """(Uid, Gid, Groups) of a process as /proc/<pid>/status lists them."""
    with open('/proc/%d/status' % pid, encoding='utf-8') as handle:
        fields = dict(line.split(':', 1) for line in handle if ':' in line)
    return tuple(fields[name].split() for name in ('Uid', 'Gid', 'Groups'))


def proc_words(pid, name):
    """/proc/<pid>/cmdline or environ as its NUL-terminated words."""
    with open('/proc/%d/%s' % (pid, name), 'rb') as handle:
        return [word.decode() for word in handle.read().split(b'\0')[:-1]]


@as_root
def test_a_holder_of_another_uid_is_restored_as_that_uid_with_its_groups_and_only_its_environment(
        run_module, tmp_path, spawn, restore):
    env = {'PATH': '/usr/bin:/bin', 'HOME': '/nonexistent', 'HF_TOKEN': SECRET}
    proc = spawn(['sleep', '600'], user=NOBODY, group=NOBODY, extra_groups=NOBODY_GROUPS, env=env, cwd='/')
    owner = (['65534'] * 4, ['65534'] * 4, ['44', '65534'])
    assert proc_ids(proc.pid) == owner
    result = call(run_module, tmp_path, proc.pid, match='^sleep 600$')
    assert (result['state'], result['how']) == ('stopped', 'terminated')
    entry = record(tmp_path)['processes']['hand-wrapper']
    assert (entry['uid'], entry['gid'], entry['groups']) == (NOBODY, NOBODY, NOBODY_GROUPS)
    assert result['process']['uid'] == NOBODY and result['process']['groups'] == NOBODY_GROUPS

    [restored] = restore()
    assert restored['service']['state'] == 'running', restored
    pid = restored['service']['pid']
    assert pid != proc.pid and proc_ids(pid) == owner  # never root: uid, gid and groups as recorded
    assert proc_words(pid, 'cmdline') == [entry['program'], '600']
    assert dict(word.split('=', 1) for word in proc_words(pid, 'environ')) == env  # nothing of the supervisor's own


def test_an_empty_argument_is_restored_word_for_word(run_module, tmp_path, spawn, restore):
    argv = [sys.executable, '-c', 'import time; time.sleep(600)', '--tag', '', '--port', '30100']
    proc = spawn(argv, env=dict(os.environ, HF_TOKEN=SECRET), cwd=str(tmp_path))
    wait_until(lambda: proc_words(proc.pid, 'cmdline') == argv, 'the program to run')
    result = call(run_module, tmp_path, proc.pid, match='--tag  --port 30100')
    assert result['state'] == 'stopped' and result['process']['argv'] == argv

    [restored] = restore()
    assert restored['service']['state'] == 'running', restored
    assert proc_words(restored['service']['pid'], 'cmdline') == argv  # the empty word too


# Each stays in its own process after the change (no exec), as a program that changed its ids itself would.
SET_USER_ID = 'import os, time; os.setresuid(65534, 0, 0); time.sleep(600)'  # as a set-user-ID root program runs
KEPT_CAPABILITIES = ('import ctypes, os, time; ctypes.CDLL(None).prctl(8, 1, 0, 0, 0); '  # PR_SET_KEEPCAPS
                     'os.setgroups([]); os.setgid(65534); os.setuid(65534); time.sleep(600)')


@as_root
@pytest.mark.parametrize('code, field', [(SET_USER_ID, 'Uid is 65534 0 0 0'), (KEPT_CAPABILITIES, 'CapPrm is ')])
def test_a_holder_its_restore_could_not_run_as_it_ran_is_refused_before_anything_is_stopped(
        run_module, tmp_path, spawn, code, field):
    proc = spawn([sys.executable, '-c', code, '--port', '30100'], cwd='/')
    wait_until(lambda: proc_ids(proc.pid)[0][0] == '65534', 'the program to change its ids')
    result = call(run_module, tmp_path, proc.pid, match='--port 30100')
    assert result['failed'] and ('process %d: %s' % (proc.pid, field)) in result['msg'], result['msg']
    assert result['msg'].endswith('nothing was signalled') and not result['recorded']
    assert proc.poll() is None and not (tmp_path / 'conflicts').exists()
