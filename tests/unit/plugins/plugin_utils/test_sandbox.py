# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""plugin_utils/sandbox.py: untrusted programs in real bubblewrap, each escape tried and refused, each bound enforced.

The tests that need bwrap are skipped (with the reason) only where bwrap is not installed and CI is not set; in CI
(CI=true) a missing bwrap fails them. The missing and broken bwrap tests need no bwrap.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
import time
import uuid

import pytest

from ansible_collections.specdec.bench.plugins.plugin_utils import answers
from ansible_collections.specdec.bench.plugins.plugin_utils import sandbox
from ansible_collections.specdec.bench.plugins.plugin_utils.sandbox import SandboxError

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
FIXTURES = os.path.join(REPO_ROOT, 'tests', 'fixtures', 'answers')
IN_CI = os.environ.get('CI', '').lower() == 'true'
needs_bwrap = pytest.mark.skipif(shutil.which('bwrap') is None and not IN_CI,
                                 reason='bubblewrap (bwrap) is not installed here (Debian/Ubuntu package bubblewrap); CI is not set')


def _lines(name):
    with open(os.path.join(FIXTURES, name), encoding='utf-8') as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _read(path):
    with open(path, encoding='utf-8', errors='replace') as handle:
        return handle.read()


def _sandbox_processes(python):
    """Pids of processes running the sandboxed interpreter as `python -I -` (only run_program starts those)."""
    pids = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as handle:
                argv = handle.read().split(b'\0')[:-1]
        except OSError:
            continue
        if argv == [python.encode(), b'-I', b'-']:
            pids.append(int(pid))
    return pids


def _wait_until(condition, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@needs_bwrap
def test_bwrap_is_installed_and_can_build_the_sandbox():
    assert os.path.isabs(sandbox.find_bwrap())


@needs_bwrap
def test_a_passing_program_passes_and_its_output_comes_back():
    result = sandbox.run_program('import os\nprint("uid", os.getuid(), "cwd", os.getcwd(), sorted(os.environ))\n')
    assert result['passed'] is True and result['returncode'] == 0 and result['timed_out'] is False
    assert "cwd /tmp ['HOME', 'LANG', 'PATH', 'PWD']" in result['output']  # the environment is cleared
    if os.geteuid() == 0:
        assert 'uid 65534 ' in result['output']  # not root inside


@needs_bwrap
def test_a_failing_assert_fails():
    result = sandbox.run_program('assert 1 + 1 == 3, "arithmetic"\n')
    assert result['passed'] is False and result['returncode'] == 1 and result['timed_out'] is False
    assert 'AssertionError: arithmetic' in result['output']


@needs_bwrap
def test_the_network_is_unreachable_even_the_hosts_loopback():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(('127.0.0.1', 0))
    server.listen(1)
    server.setblocking(False)
    port = server.getsockname()[1]
    try:
        program = ('import socket\n'
                   'print("interfaces", [name for _, name in socket.if_nameindex()])\n'
                   'try:\n'
                   '    socket.create_connection(("127.0.0.1", %d), timeout=2)\n'
                   '    print("connected")\n'
                   'except OSError as exc:\n'
                   '    print("refused", type(exc).__name__)\n' % port)
        result = sandbox.run_program(program)
        assert result['passed'], result['output']
        assert "interfaces ['lo']" in result['output']
        assert 'refused ConnectionRefusedError' in result['output']
        with pytest.raises(BlockingIOError):
            server.accept()  # nothing reached the host's listening socket
    finally:
        server.close()


@needs_bwrap
def test_writes_outside_tmp_fail_and_tmp_is_private():
    target = os.path.join(REPO_ROOT, 'sandbox-write-%s' % uuid.uuid4().hex)
    program = ('import sys\n'
               'bad = []\n'
               'for path in ("/etc/sandbox-x", "/root/x", "/home/x", "/usr/x", %r):\n'
               '    try:\n'
               '        open(path, "w").write("x")\n'
               '        bad.append(path)\n'
               '    except OSError as exc:\n'
               '        print(path, exc.strerror)\n'
               'open("/tmp/mine", "w").write("ok")\n'
               'print("tmp", open("/tmp/mine").read())\n'
               'sys.exit(len(bad))\n' % target)
    result = sandbox.run_program(program)
    assert result['passed'], result['output']
    assert 'tmp ok' in result['output'] and 'Read-only file system' in result['output']
    assert not os.path.exists(target) and not os.path.exists('/etc/sandbox-x')
    assert not os.path.exists('/tmp/mine') or _read('/tmp/mine') != 'ok'  # the sandbox's /tmp is its own


@needs_bwrap
def test_files_under_root_and_home_are_invisible():
    home = '/root' if os.access('/root', os.W_OK) else os.path.expanduser('~')
    if not (home == '/root' or home.startswith('/home/')):
        pytest.skip('no writable /root or /home/<user> to put a secret in')
    handle, secret = tempfile.mkstemp(dir=home, prefix='sandbox-secret-')
    os.write(handle, b'secret')
    os.close(handle)
    try:
        program = ('import os\n'
                   'assert not os.path.exists(%r)\n'
                   'assert os.listdir("/root") == [], os.listdir("/root")\n'
                   'assert not os.path.isdir("/home") or os.listdir("/home") == []\n' % secret)
        result = sandbox.run_program(program)
        assert result['passed'], result['output']
    finally:
        os.unlink(secret)


@needs_bwrap
def test_the_process_count_is_bounded():
    program = ('import os, time\n'
               'n = 0\n'
               'while n < 1000:\n'
               '    try:\n'
               '        pid = os.fork()\n'
               '    except OSError:\n'
               '        break\n'
               '    if pid == 0:\n'
               '        time.sleep(60)\n'
               '        os._exit(0)\n'
               '    n += 1\n'
               'print("forks", n)\n')
    result = sandbox.run_program(program, max_procs=16, timeout_s=20)
    assert result['passed'], result['output']
    forks = int(result['output'].split('forks', 1)[1])
    assert 1 <= forks <= 16  # max_procs tasks beyond bwrap's init and the program itself, not the 1000 it asked for


@needs_bwrap
def test_a_fork_bomb_is_contained_and_cleaned_up():
    python = sandbox._system_python(None)  # pylint: disable=protected-access
    bomb = 'import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n'
    started = time.monotonic()
    result = sandbox.run_program(bomb, timeout_s=2)
    elapsed = time.monotonic() - started
    assert result['passed'] is False and result['timed_out'] is True and result['returncode'] is None
    assert elapsed < 2 + 6
    assert _wait_until(lambda: not _sandbox_processes(python), 10), 'sandbox processes left behind'
    assert subprocess.run(['true'], check=False).returncode == 0  # the host still forks
    assert sandbox.run_program('print(1)')['passed']


@needs_bwrap
def test_a_memory_hog_is_stopped():
    result = sandbox.run_program('chunks = []\nwhile True:\n    chunks.append(bytearray(64 << 20))\n', memory_mb=512, timeout_s=20)
    assert result['passed'] is False and result['timed_out'] is False
    assert 'MemoryError' in result['output']


@needs_bwrap
def test_an_infinite_loop_is_timed_out_and_the_cpu_limit_ends_a_spinner():
    python = sandbox._system_python(None)  # pylint: disable=protected-access
    results = []
    started = time.monotonic()
    runner = threading.Thread(target=lambda: results.append(sandbox.run_program('while True:\n    pass\n', timeout_s=1.5)))
    runner.start()
    assert _wait_until(lambda: _sandbox_processes(python), 1.5), 'the spinner is not seen (the leftover check would be vacuous)'
    runner.join(1.5 + 6)
    assert results == [{'passed': False, 'returncode': None, 'timed_out': True, 'output': ''}]
    assert time.monotonic() - started < 1.5 + 6
    assert _wait_until(lambda: not _sandbox_processes(python), 10)
    started = time.monotonic()
    result = sandbox.run_program('import os\nos.close(1)\nos.close(2)\nwhile True:\n    pass\n', timeout_s=1)
    assert result['timed_out'] is True and time.monotonic() - started < 1 + 6  # closing its output does not stop the clock
    started = time.monotonic()
    result = sandbox.run_program('while True:\n    pass\n', timeout_s=30, cpu_s=1)
    assert result['passed'] is False and result['timed_out'] is False and result['returncode'] != 0
    assert time.monotonic() - started < 10


@needs_bwrap
def test_output_is_bounded_and_a_big_file_is_refused():
    result = sandbox.run_program('import sys\nfor _ in range(10000):\n    sys.stdout.write("x" * 1000)\nprint("END")\n')
    assert result['passed'] and len(result['output'].encode()) <= 2048 and result['output'].endswith('END\n')
    result = sandbox.run_program('open("/tmp/big", "wb").write(b"x" * (2 << 20))\n', max_file_mb=1)
    assert result['passed'] is False and 'File too large' in result['output']


@needs_bwrap
def test_upstream_canonical_solutions_pass_in_the_sandbox_and_wrong_ones_fail():
    def execute(program):
        return sandbox.run_program(program)
    for record in _lines('HumanEval.jsonl'):
        reference = {'kind': 'humaneval', 'prompt': record['prompt'], 'test': record['test'], 'entry_point': record['entry_point']}
        assert answers.grade(reference, record['canonical_solution'], execute=execute) is True, record['task_id']
        assert answers.grade(reference, '    return None\n', execute=execute) is False, record['task_id']
    for record in _lines('mbpp.jsonl'):
        reference = {'kind': 'mbpp', 'test_list': record['test_list'], 'test_setup_code': record['test_setup_code'],
                     'challenge_test_list': record['challenge_test_list']}
        assert answers.grade(reference, '```python\n%s\n```' % record['code'], execute=execute) is True, record['task_id']
        assert answers.grade(reference, 'def nothing():\n    pass\n', execute=execute) is False, record['task_id']


def test_options_of_newer_bubblewraps_are_used_only_where_bwrap_has_them(monkeypatch):
    monkeypatch.setattr(sandbox, '_FEATURES', {'/old/bwrap': frozenset(), '/new/bwrap': frozenset(sandbox.OPTIONAL_OPTIONS)})
    old = sandbox._bwrap_args('/old/bwrap', 64)  # pylint: disable=protected-access
    new = sandbox._bwrap_args('/new/bwrap', 64)  # pylint: disable=protected-access
    assert '--size' not in old and '--disable-userns' not in old
    assert new[new.index('--size') + 1] == str(64 << 20) and new[new.index('--size') + 2:new.index('--size') + 4] == ['--tmpfs', '/tmp']
    assert '--disable-userns' in new
    for args in (old, new):
        assert args[1:3] == ['--unshare-all', '--unshare-user'] and args[-1] == '--'
        assert args[args.index('--ro-bind'):args.index('--ro-bind') + 3] == ['--ro-bind', '/', '/']


@needs_bwrap
def test_the_installed_bwrap_options_are_detected():
    bwrap = sandbox.find_bwrap()
    version = subprocess.run([bwrap, '--version'], stdout=subprocess.PIPE, check=False).stdout.decode().split()[-1]
    expected = {'--size'} if tuple(int(x) for x in version.split('.')[:2]) >= (0, 7) else set()
    expected |= {'--disable-userns'} if tuple(int(x) for x in version.split('.')[:2]) >= (0, 8) else set()
    assert sandbox._features(bwrap) == expected  # pylint: disable=protected-access


def test_rlimit_nproc_counts_per_user_namespace_from_linux_5_14():
    assert sandbox._per_namespace_nproc('5.14.0-1-amd64') and sandbox._per_namespace_nproc('6.18.44-fc')  # pylint: disable=protected-access
    assert not sandbox._per_namespace_nproc('5.10.0-28-amd64') and not sandbox._per_namespace_nproc('4.19.0')  # pylint: disable=protected-access
    assert not sandbox._per_namespace_nproc('unknown')  # pylint: disable=protected-access


def test_a_missing_bwrap_is_a_sandbox_error_that_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv('PATH', str(tmp_path))
    with pytest.raises(SandboxError) as caught:
        sandbox.find_bwrap()
    assert str(caught.value) == ('accuracy.execute_code needs bubblewrap (Debian/Ubuntu package `bubblewrap`, command `bwrap`): '
                                 'not found on PATH')
    with pytest.raises(SandboxError):
        sandbox.run_program('print(1)')


def test_a_bwrap_that_cannot_make_namespaces_is_a_sandbox_error_naming_its_message(monkeypatch):
    folder = tempfile.mkdtemp(prefix='fake-bwrap-')  # not under pytest's 0700 tmp: nobody must run it
    try:
        os.chmod(folder, 0o755)
        fake = os.path.join(folder, 'bwrap')
        with open(fake, 'w') as handle:
            handle.write('#!/bin/sh\necho "bwrap: No permissions to create new namespace, likely because the kernel does '
                         'not allow non-privileged user namespaces." >&2\nexit 1\n')
        os.chmod(fake, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
        monkeypatch.setenv('PATH', folder + os.pathsep + '/usr/bin:/bin')
        for _attempt in range(2):  # the second answer comes from the cached probe
            with pytest.raises(SandboxError) as caught:
                sandbox.find_bwrap()
            assert 'No permissions to create new namespace' in str(caught.value) and fake in str(caught.value)
        with pytest.raises(SandboxError):
            sandbox.run_program('print(1)')
    finally:
        shutil.rmtree(folder)
