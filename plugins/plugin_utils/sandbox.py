# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run one untrusted Python program (a model's HumanEval/MBPP answer with its tests) in a bubblewrap sandbox.

Why: openai/human-eval's execution.py warns that model-generated code must be sandboxed (its reliability_guard "is
NOT a security sandbox"), and runs each check program in its own process with a wall-clock limit; this does the same
in Debian's bubblewrap (`bwrap`), one process per program, on the controller.

- find_bwrap() -> str: the path of bwrap; SandboxError when it is missing, or when it cannot create its namespaces
  (probed once per path and user, cached), naming bwrap's own error.
- run_program(source, timeout_s=10.0, memory_mb=1024, cpu_s=10, max_procs=64, max_file_mb=16, python=None)
  -> {'passed', 'returncode', 'timed_out', 'output'}: `python3 -I -` reads ``source`` on stdin inside bwrap.

The sandbox (see _bwrap_args): every namespace unshared (--unshare-all: the network namespace is new, with only a
loopback, so nothing outside is reachable), no further user namespaces (bwrap >= 0.8), --die-with-parent,
--new-session (no terminal injection), the root file system bound read-only, a private tmpfs on /tmp (the working
dir; its size bounded with bwrap >= 0.7), read-only empty tmpfs over /root and /home (the users' files are not
visible), a fresh /dev and /proc, the environment cleared to PATH, HOME=/tmp and LANG. bwrap itself runs as nobody
(65534) when we are root, so the limits apply (root ignores RLIMIT_NPROC). The rlimits are set inside the sandbox by
a launcher (`python3 -I -c LAUNCHER`) that then execs `python3 -I -` on the program: RLIMIT_AS (memory_mb),
RLIMIT_CPU (cpu_s), RLIMIT_NPROC (max_procs tasks, see _nproc_limit), RLIMIT_FSIZE (max_file_mb), RLIMIT_CORE 0.
Not in a preexec_fn, which Python documents as unsafe where threads run (the caller may grade in threads): dropping
to nobody is Popen's user/group, done before exec in C. At the wall-clock timeout the whole process group is killed;
the pid namespace dies with it (its init is bwrap's child, which --die-with-parent ends), taking every process the
program made. Only the last 2 KiB of stdout+stderr are kept, whatever the program prints.

RLIMIT_NPROC counts the tasks of the sandbox's user namespace since Linux 5.14, so runs at once do not share it;
on older kernels it counts all of the user's tasks, and each run allows max_procs over what the user has when it
starts.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import threading
import time

NOBODY = 65534
OUTPUT_BYTES = 2048
SANDBOX_PATH = '/usr/local/bin:/usr/bin:/bin'
SYSTEM_PYTHONS = ('/usr/bin/python3', '/usr/local/bin/python3', '/bin/python3')
MISSING = ('accuracy.execute_code needs bubblewrap (Debian/Ubuntu package `bubblewrap`, command `bwrap`): '
           'not found on PATH')
PROBE_TIMEOUT_S = 20
KILL_GRACE_S = 5

OPTIONAL_OPTIONS = ('--size', '--disable-userns')

_PROBED = {}
_FEATURES = {}
_PROBE_LOCK = threading.RLock()  # find_bwrap holds it while the probe reads _features


class SandboxError(RuntimeError):
    """The sandbox cannot run: bubblewrap is missing or cannot create its namespaces here, or no system python3."""


def _sandbox_user():
    """(uid, gid) that bwrap runs as: nobody when we are root (so RLIMIT_NPROC binds), else None (ourselves)."""
    return (NOBODY, NOBODY) if os.geteuid() == 0 else None


def _features(bwrap):
    """The options of ``bwrap --help`` among OPTIONAL_OPTIONS (cached per path): --size came in bubblewrap 0.7 and
    --disable-userns in 0.8 (Ubuntu 22.04 has 0.6.1), so older versions sandbox without them.
    """
    with _PROBE_LOCK:
        if bwrap not in _FEATURES:
            try:
                done = subprocess.run([bwrap, '--help'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=PROBE_TIMEOUT_S, check=False)
                text = done.stdout.decode('utf-8', 'replace')
            except (OSError, subprocess.SubprocessError):
                text = ''
            _FEATURES[bwrap] = frozenset(option for option in OPTIONAL_OPTIONS if re.search(r'(^|\s)%s(\s|$)' % option, text, re.M))
        return _FEATURES[bwrap]


def _bwrap_args(bwrap, tmp_mb):
    """The bwrap command line up to '--', for a /tmp of at most ``tmp_mb`` MiB where bwrap can bound it."""
    features = _features(bwrap)
    args = [bwrap, '--unshare-all', '--unshare-user']
    if '--disable-userns' in features:
        args.append('--disable-userns')
    args += ['--die-with-parent', '--new-session', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc']
    if '--size' in features:
        args += ['--size', str(tmp_mb << 20)]
    args += ['--tmpfs', '/tmp']
    for hidden in ('/root', '/home'):
        if os.path.isdir(hidden):
            args += ['--tmpfs', hidden, '--remount-ro', hidden]
    args += ['--chdir', '/tmp', '--clearenv', '--setenv', 'PATH', SANDBOX_PATH, '--setenv', 'HOME', '/tmp',
             '--setenv', 'LANG', 'C.UTF-8', '--']
    return args


def _user_tasks(uid):
    """How many tasks (threads count: RLIMIT_NPROC counts them) the real user ``uid`` has now, from /proc."""
    count = 0
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/status' % pid) as status:
                fields = dict(line.split(':', 1) for line in status if ':' in line)
            if int(fields['Uid'].split()[0]) == uid:
                count += int(fields.get('Threads', '1'))
        except (OSError, ValueError, KeyError, IndexError):
            continue
    return count


def _per_namespace_nproc(release=None):
    """True where RLIMIT_NPROC counts the tasks of the user in its own user namespace: Linux 5.14 and later
    ("Reimplement RLIMIT_NPROC on top of ucounts", commit 21d1c5e386bc); before, it counts all of the user's tasks.
    """
    match = re.match(r'(\d+)\.(\d+)', release if release is not None else os.uname().release)
    return bool(match) and (int(match.group(1)), int(match.group(2))) >= (5, 14)


def _nproc_limit(uid, max_procs):
    """RLIMIT_NPROC for the sandbox: ``max_procs`` tasks for the program beyond bwrap's init and the program itself
    (the tasks of the sandbox's user namespace), plus, on kernels that count per user, the tasks ``uid`` has now.
    """
    base = int(max_procs) + 2
    return base if _per_namespace_nproc() else base + _user_tasks(uid)


def _launcher(limits):
    """Python source that sets ``limits`` ([(RLIMIT name, value)], never above a hard limit it has), then execs the
    same interpreter on the program read from stdin (`-I -`): the first process of the sandbox, so every process of
    the program inherits the limits.
    """
    return ('import os, resource, sys\n'
            'for name, value in %r:\n'
            '    which = getattr(resource, name)\n'
            '    hard = resource.getrlimit(which)[1]\n'
            '    value = value if hard == resource.RLIM_INFINITY else min(value, hard)\n'
            '    resource.setrlimit(which, (value, value))\n'
            'os.execv(sys.executable, [sys.executable, "-I", "-"])\n' % (list(limits),))


def _popen(argv, stdin=subprocess.DEVNULL):
    """Start ``argv`` in a new session (its own process group) as the sandbox user (Popen's user/group: no
    preexec_fn), stdout and stderr together on one pipe.
    """
    user = _sandbox_user()
    kwargs = {}
    if user is not None:
        kwargs = {'user': user[0], 'group': user[1], 'extra_groups': []}
    return subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, close_fds=True,
                            start_new_session=True, **kwargs)


def _probe(bwrap):
    """None if ``bwrap`` can build the sandbox here (running `true` in it), else bwrap's error, one line."""
    argv = _bwrap_args(bwrap, 1) + ['true']
    try:
        proc = _popen(argv)
        out = proc.communicate(timeout=PROBE_TIMEOUT_S)[0]
    except subprocess.TimeoutExpired:
        _kill(proc)
        try:
            proc.communicate(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        return 'bwrap did not finish a trivial sandbox in %d s' % PROBE_TIMEOUT_S
    except OSError as exc:
        return 'cannot run %s: %s' % (bwrap, exc)
    if proc.returncode != 0:
        text = out.decode('utf-8', 'replace').strip() or 'no message'
        return '%s (exit status %s)' % (' '.join(text.splitlines())[-400:], proc.returncode)
    return None


def find_bwrap():
    """The path of bubblewrap's `bwrap` on PATH, checked once (per path and user) to create its namespaces here.

    SandboxError when it is not on PATH, or when the probe fails (for example unprivileged user namespaces disabled:
    kernel.unprivileged_userns_clone=0 or an AppArmor restriction), with bwrap's own message.
    """
    bwrap = shutil.which('bwrap')
    if not bwrap:
        raise SandboxError(MISSING)
    key = (os.path.realpath(bwrap), os.geteuid())
    with _PROBE_LOCK:
        if key not in _PROBED:
            _PROBED[key] = _probe(bwrap)
        error = _PROBED[key]
    if error:
        raise SandboxError('accuracy.execute_code: bubblewrap (%s) cannot create its sandbox here: %s' % (bwrap, error))
    return bwrap


def _system_python(python):
    """``python`` if given, else the system python3 (not a virtual environment's, which may live under /root)."""
    if python:
        return python
    for candidate in SYSTEM_PYTHONS:
        if os.access(candidate, os.X_OK):
            return candidate
    raise SandboxError('accuracy.execute_code needs the system python3 (%s): not found' % ', '.join(SYSTEM_PYTHONS))


def _kill(proc):
    """SIGKILL the process group of ``proc`` (bwrap, and through --die-with-parent the sandbox's pid namespace)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except OSError:
        pass


def _feed(pipe, data):
    """Write ``data`` to ``pipe`` and close it; a program that exits without reading is not an error."""
    try:
        pipe.write(data)
    except (BrokenPipeError, OSError, ValueError):
        pass
    finally:
        try:
            pipe.close()
        except (BrokenPipeError, OSError):
            pass


def _read_tail(proc, deadline):
    """Read ``proc``'s stdout until EOF or ``deadline`` (time.monotonic()), keeping its last OUTPUT_BYTES bytes.

    Returns (tail bytes, True if EOF came before the deadline).
    """
    tail = bytearray()
    fd = proc.stdout.fileno()
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return bytes(tail), False
        ready = select.select([fd], [], [], min(remaining, 0.5))[0]
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return bytes(tail), True
        tail += chunk
        if len(tail) > OUTPUT_BYTES:
            del tail[:-OUTPUT_BYTES]


def run_program(source, timeout_s=10.0, memory_mb=1024, cpu_s=10, max_procs=64, max_file_mb=16, python=None):
    """Run Python ``source`` (`python3 -I -`, the program on stdin) in the bwrap sandbox; one process per program.

    Returns {'passed': returncode 0 and not timed out, 'returncode': the program's exit status (None when killed at
    the timeout), 'timed_out': the wall clock passed ``timeout_s``, 'output': the last 2 KiB of stdout+stderr}.
    SandboxError when the sandbox cannot run (find_bwrap(), no system python3).
    """
    bwrap = find_bwrap()
    interpreter = _system_python(python)
    user = _sandbox_user()
    uid = user[0] if user else os.getuid()
    limits = [
        ('RLIMIT_AS', int(memory_mb) << 20),
        ('RLIMIT_CPU', max(1, int(cpu_s))),
        ('RLIMIT_NPROC', _nproc_limit(uid, max_procs)),
        ('RLIMIT_FSIZE', int(max_file_mb) << 20),
        ('RLIMIT_CORE', 0),
    ]
    argv = _bwrap_args(bwrap, max(64, 4 * int(max_file_mb))) + [interpreter, '-I', '-c', _launcher(limits)]
    data = source.encode('utf-8', 'replace') if isinstance(source, str) else bytes(source)
    deadline = time.monotonic() + float(timeout_s)
    proc = _popen(argv, stdin=subprocess.PIPE)
    feeder = threading.Thread(target=_feed, args=(proc.stdin, data), daemon=True)
    feeder.start()
    timed_out = False
    try:
        tail, finished = _read_tail(proc, deadline)
        if finished:  # the output closed: the program ended, or closed it and goes on (the deadline still holds)
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                finished = False
        if not finished:
            timed_out = True
            _kill(proc)
            more = _read_tail(proc, time.monotonic() + KILL_GRACE_S)[0]
            tail = (tail + more)[-OUTPUT_BYTES:]
    finally:
        if proc.poll() is None:
            _kill(proc)
        try:
            proc.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        proc.stdout.close()
        feeder.join(KILL_GRACE_S)
    returncode = None if timed_out else proc.returncode
    return {
        'passed': returncode == 0 and not timed_out,
        'returncode': returncode,
        'timed_out': timed_out,
        'output': tail.decode('utf-8', 'replace'),
    }
