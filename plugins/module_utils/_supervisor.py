# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A long-lived process without systemd: the supervisor backend of specdec.bench.service. Standard library only.

On a host whose PID 1 is not systemd (a Docker container whose entrypoint is a shell, sleep, sshd or tini), each
service has a state folder <state_dir>/<name>/:

    service.json  the definition: argv, env, env_files, cwd, description, timeout_stop_sec, cpu_affinity (a
                  cpulist the program is pinned to with sched_setaffinity before exec; absent: not pinned; there is
                  no memory policy: the standard library has no set_mempolicy), inherit_env (false: the program gets
                  env_files and env only, nothing of the supervisor's own environment), and uid, gid, groups (the ids
                  the program runs as: the child sets groups, gid, uid in that order before exec and checks they
                  took; absent: as the supervisor) (written by the role)
    run.json      written by the supervisor when it started the process: supervisor_pid, pid, pgid, start_ticks
                  (field 22 of /proc/<pid>/stat: a pid reused by another process has other ticks), started, boot_id
    exit.json     written by the supervisor when the process ended: exit_code or signal, finished; or error when it
                  could not be started (no such program, a cwd that is not there)
    log           the process's stdout and stderr, appended; each start writes a marker line first

SUPERVISOR_SCRIPT runs as its own process in a session of its own (started detached by the module, so it outlives
the SSH connection and the controller): it starts the service in a process group of its own, waits for it and
records its exit status; it is the reaper, whatever happens to the controller. Stopping is SIGTERM to the
service's process group, SIGKILL after the timeout. The functions below only read and signal; they are what the
module, the probe (which GPU process belongs to which service) and the tests use.
"""

from __future__ import annotations

import json
import os
import signal
import time

DEFAULT_STATE_DIR = '/var/lib/specdec/services'
DEFINITION = 'service.json'
RUN = 'run.json'
EXIT = 'exit.json'
LOG = 'log'
BOOT_ID = '/proc/sys/kernel/random/boot_id'
TIME_FORMAT = '%Y-%m-%dT%H:%M:%SZ'
# The moment between the program's end and exit.json: the supervisor reaps it, then writes; status() waits this long
# at most for the record while the supervisor still lives, instead of calling the program gone unrecorded.
EXIT_RECORD_WAIT_S = 5.0

# Run by the module as [python3, -c, SUPERVISOR_SCRIPT, <service folder>], detached (a new session, no stdio).
# It outlives the module, so it cannot import module_utils: its write() is its own, not _common.atomic_write.
SUPERVISOR_SCRIPT = r'''
import json, os, signal, sys, time
folder = sys.argv[1]
def path(name):
    return os.path.join(folder, name)
def write(name, data):
    tmp = path(name + '.tmp')
    with open(tmp, 'w') as handle:
        json.dump(data, handle, sort_keys=True)
    os.replace(tmp, path(name))
def now():
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
with open(path('service.json')) as handle:
    service = json.load(handle)
def unquote(value):
    # as systemd reads an EnvironmentFile value: quotes removed, backslash escapes undone inside double quotes
    if len(value) >= 2 and value[0] == value[-1] and value[0] in '"' + "'":
        quote, value = value[0], value[1:-1]
        if quote == '"':
            out, i = [], 0
            while i < len(value):
                if value[i] == '\\' and i + 1 < len(value):
                    out.append(value[i + 1])
                    i += 2
                else:
                    out.append(value[i])
                    i += 1
            value = ''.join(out)
    return value
env = {}
for env_file in service.get('env_files') or []:
    optional = env_file.startswith('-')
    try:
        with open(env_file.lstrip('-')) as handle:
            for line in handle:
                line = line.strip()
                if line and not line.startswith('#') and '=' in line:
                    name, value = line.split('=', 1)
                    env[name.strip()] = unquote(value.strip())
    except OSError:
        if not optional:
            raise
env.update(service.get('env') or {})
if service.get('inherit_env', True) is not False:
    env = dict(os.environ, **env)
def ids():
    return os.getresuid(), os.getresgid(), sorted(set(os.getgroups()))
def capabilities():
    with open('/proc/self/status') as handle:
        fields = dict(line.split(':', 1) for line in handle if ':' in line)
    return dict((name, int(fields.get(name, '0').strip() or '0', 16)) for name in ('CapPrm', 'CapEff', 'CapAmb'))
def become(uid, gid, groups):
    # groups and gid first: setuid gives up the privilege they need. Only what differs is set: a supervisor that
    # already runs as these ids (not root, or where setgroups is denied) changes nothing, as it could not
    wanted = ((uid,) * 3, (gid,) * 3, sorted(set(groups)))
    if ids()[2] != wanted[2]:
        os.setgroups(wanted[2])
    if ids()[1] != wanted[1]:
        os.setgid(gid)
    if ids()[0] != wanted[0]:
        os.setuid(uid)
    if ids() != wanted:
        raise PermissionError('the ids did not take: uid, gid, groups are %r, not %r' % (ids(), wanted))
    if uid != 0 and any(capabilities().values()):
        raise PermissionError('uid %d kept capabilities %r after setuid' % (uid, capabilities()))
log = os.open(path('log'), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
os.write(log, ('-- specdec supervisor: starting %s at %s --\n' % (service['name'], now())).encode())
try:
    os.remove(path('exit.json'))
except OSError:
    pass
ready_r, ready_w = os.pipe()
pid = os.fork()
if pid == 0:
    try:
        os.close(ready_r)
        os.setpgid(0, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        if service.get('cpu_affinity'):
            cpus = set()
            for item in service['cpu_affinity'].split(','):
                first, _dash, last = item.partition('-')
                cpus.update(range(int(first), int(last or first) + 1))
            os.sched_setaffinity(0, cpus)
        if service.get('uid') is not None:
            become(service['uid'], service['gid'], service.get('groups') or [])
        # after the ids: a folder its owner may not enter is refused as it would be to them
        os.chdir(service.get('cwd') or '/')
        for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(number, signal.SIG_DFL)
        os.set_inheritable(ready_w, False)
        os.execvpe(service['argv'][0], service['argv'], env)
    except BaseException as exc:
        os.write(ready_w, ('%s: %s' % (type(exc).__name__, exc)).encode()[:4000])
        os._exit(127)
os.close(ready_w)
# the pipe closes when the program was executed (close-on-exec) or when the child gave up: run.json says which
error = b''
while True:
    chunk = os.read(ready_r, 4096)
    if not chunk:
        break
    error += chunk
try:
    with open('/proc/%d/stat' % pid) as handle:
        start_ticks = int(handle.read().rsplit(')', 1)[1].split()[19])
except (OSError, ValueError, IndexError):
    start_ticks = None
try:
    with open('/proc/sys/kernel/random/boot_id') as handle:
        boot_id = handle.read().strip()
except OSError:
    boot_id = None
write('run.json', {'supervisor_pid': os.getpid(), 'pid': pid, 'pgid': pid, 'start_ticks': start_ticks,
                   'started': now(), 'boot_id': boot_id, 'argv': service['argv'],
                   'exec_error': error.decode('utf-8', 'replace') or None})
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
while True:
    try:
        _pid, status = os.waitpid(pid, 0)
        break
    except InterruptedError:
        continue
result = {'finished': now(), 'exit_code': None, 'signal': None, 'error': error.decode('utf-8', 'replace') or None}
if os.WIFSIGNALED(status):
    result['signal'] = os.WTERMSIG(status)
else:
    result['exit_code'] = os.WEXITSTATUS(status)
os.write(log, ('-- specdec supervisor: %s %s at %s --\n' % (
    service['name'], 'could not start: ' + result['error'] if result['error'] else
    'exited with status %s' % result['exit_code'] if result['signal'] is None else
    'killed by signal %s' % result['signal'], result['finished'])).encode())
write('exit.json', result)
'''


def read_json(path):
    try:
        with open(path, encoding='utf-8') as handle:
            data = json.load(handle)
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def _stat(pid, proc_root):
    """(state, ppid, pgid, start ticks) of a process from /proc/<pid>/stat; None when it is gone."""
    try:
        with open(os.path.join(proc_root, str(pid), 'stat'), encoding='utf-8') as handle:
            fields = handle.read().rsplit(')', 1)[1].split()
        return fields[0], int(fields[1]), int(fields[2]), int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def start_ticks(pid, proc_root='/proc'):
    """Field 22 of /proc/<pid>/stat (the process's start time in clock ticks since boot); None when it is gone.

    A zombie is gone too: it has exited, only its parent has not reaped it (where PID 1 is `sleep`, never).
    """
    fields = _stat(pid, proc_root)
    return None if fields is None or fields[0] == 'Z' else fields[3]


def _boot_id():
    try:
        with open(BOOT_ID, encoding='utf-8') as handle:
            return handle.read().strip()
    except OSError:
        return None


def _same_boot(run, boot_id=None):
    return not run.get('boot_id') or (boot_id or _boot_id()) in (None, run['boot_id'])


def alive(run, proc_root='/proc', boot_id=None):
    """Whether the process run.json names is still that process (same boot, same pid, same start ticks)."""
    if not run or not isinstance(run.get('pid'), int):
        return False
    if not _same_boot(run, boot_id):
        return False
    ticks = start_ticks(run['pid'], proc_root)
    return ticks is not None and (run.get('start_ticks') is None or ticks == run['start_ticks'])


def _exit_being_recorded(run, folder, proc_root, wait_s=None):
    """exit.json once the living supervisor has written it (its program just ended), else None.

    The supervisor reaps its program and then writes exit.json: a status read in between finds the program gone and
    no record. While the supervisor process lives (same boot), that record is coming: wait for it, bounded.
    """
    supervisor = run.get('supervisor_pid')
    deadline = time.monotonic() + (EXIT_RECORD_WAIT_S if wait_s is None else wait_s)
    while isinstance(supervisor, int) and _same_boot(run) and start_ticks(supervisor, proc_root) is not None:
        ended = read_json(os.path.join(folder, EXIT))
        if ended is not None or time.monotonic() >= deadline:
            return ended
        time.sleep(0.02)
    return read_json(os.path.join(folder, EXIT))


def status(folder, proc_root='/proc'):
    """The service's state from its folder, as a systemd unit's would read.

    state: not-found (no definition), inactive (defined, never started), running, exited (exit_code 0),
    failed (non-zero exit, killed by a signal, could not start, or gone without a recorded exit).
    """
    definition = read_json(os.path.join(folder, DEFINITION))
    run = read_json(os.path.join(folder, RUN))
    ended = read_json(os.path.join(folder, EXIT))
    result = {'state': 'not-found', 'pid': None, 'exit_code': None, 'signal': None, 'error': None,
              'started': None, 'finished': None, 'pids': []}
    if definition is None:
        return result
    result['state'] = 'inactive'
    if run is None:
        return result
    result.update(pid=run.get('pid'), started=run.get('started'))
    if ended is None and alive(run, proc_root):
        result['state'] = 'running'
        result['pids'] = group_pids(run, proc_root)
        return result
    if ended is None:
        ended = _exit_being_recorded(run, folder, proc_root)
    if ended is not None:
        result.update(exit_code=ended.get('exit_code'), signal=ended.get('signal'), error=ended.get('error'),
                      finished=ended.get('finished'))
        result['state'] = 'exited' if ended.get('exit_code') == 0 and not ended.get('error') else 'failed'
        result['pids'] = group_pids(run, proc_root)
        return result
    # neither running nor recorded: the supervisor itself was killed (SIGKILL, a reboot)
    result['state'] = 'failed'
    result['error'] = 'the process is gone and its supervisor recorded no exit (killed, or the host rebooted)'
    return result


def _all_pids(proc_root):
    try:
        return [int(name) for name in os.listdir(proc_root) if name.isdigit()]
    except OSError:
        return []


def _process_table(proc_root):
    """{pid: (ppid, pgid)} of every live process (zombies left out: they hold nothing)."""
    table = {}
    for pid in _all_pids(proc_root):
        fields = _stat(pid, proc_root)
        if fields is not None and fields[0] != 'Z':
            table[pid] = fields[1:3]
    return table


def _members(run, table, proc_root):
    if not run or not isinstance(run.get('pid'), int) or not _same_boot(run):
        return []
    main_alive = alive(run, proc_root)
    pgid = run.get('pgid')
    # A group outlives its leader while a member lives, and the kernel does not reuse its number meanwhile: a
    # live process numbered pgid that is not the main process means the old group is gone and this is another.
    if not main_alive and pgid in table:
        return []
    members = set(pid for pid, (_ppid, group) in table.items() if group == pgid)
    if main_alive:
        for pid in table:
            seen, current = 0, pid
            while current in table and seen < 64:
                if current == run['pid']:
                    members.add(pid)
                    break
                current, seen = table[current][0], seen + 1
    return sorted(members)


def group_pids(run, proc_root='/proc'):
    """Every live pid of the service: its process group, and every descendant of its main pid.

    Members of the group that outlive the main process (a worker that ignored SIGTERM, still holding a GPU) are
    still the service's.
    """
    return _members(run, _process_table(proc_root), proc_root)


def owner_of(pid, state_dir=DEFAULT_STATE_DIR, proc_root='/proc'):
    """The name of the service whose process (group or tree) pid belongs to; None when none does.

    A process left over from a service that has exited still belongs to it. /proc is read once per call.
    """
    try:
        names = sorted(os.listdir(state_dir))
    except OSError:
        return None
    table = None
    for name in names:
        run = read_json(os.path.join(state_dir, name, RUN))
        if not run:
            continue
        if table is None:
            table = _process_table(proc_root)
            if pid not in table:
                return None
        if pid in _members(run, table, proc_root):
            return name
    return None


def log_tail(folder, lines=50, max_bytes=256 * 1024):
    """The last lines of the service's log (read from its end, at most max_bytes)."""
    path = os.path.join(folder, LOG)
    try:
        with open(path, 'rb') as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - max_bytes))
            data = handle.read()
    except OSError:
        return []
    text = data.decode('utf-8', 'replace').splitlines()
    if size > max_bytes and text:
        text = text[1:]  # the first line was cut
    return text[-lines:] if lines else text


def signal_group(run, number, proc_root='/proc'):
    """Send a signal to the service's process group (and its main pid, while it is still that process); False when
    nothing was there."""
    sent = False
    targets = [lambda: os.killpg(run['pgid'], number)]
    # the main pid leads its group, so killpg reached it; a second signal would hit it while it handles the first
    # (a SIGTERM handler that is cleaning up). Only a main pid outside the group gets its own, while it is that process.
    if run.get('pgid') != run.get('pid') and alive(run, proc_root):
        targets.append(lambda: os.kill(run['pid'], number))
    for target in targets:
        try:
            target()
            sent = True
        except (OSError, KeyError, TypeError):
            pass
    return sent


def stop(folder, timeout, proc_root='/proc', poll=0.1):
    """SIGTERM to the process group, SIGKILL after timeout seconds; waits until the supervisor recorded the exit.

    Returns (stopped: bool, how: 'not running' | 'terminated' | 'killed').
    """
    run = read_json(os.path.join(folder, RUN))
    running = alive(run, proc_root) and read_json(os.path.join(folder, EXIT)) is None
    if not running and not group_pids(run, proc_root):  # nothing left, not even a member that outlived it
        return False, 'not running'
    signal_group(run, signal.SIGTERM, proc_root)
    how = 'terminated'
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(run, proc_root) and not group_pids(run, proc_root):
            break
        time.sleep(poll)
    else:
        how = 'killed'
        signal_group(run, signal.SIGKILL, proc_root)
    # every member of the group gone, and the exit recorded by the supervisor (it reaps, then writes)
    deadline = time.monotonic() + max(5.0, timeout)
    while time.monotonic() < deadline:
        if read_json(os.path.join(folder, EXIT)) is not None and not group_pids(run, proc_root):
            break
        if not alive(run, proc_root) and read_json(os.path.join(folder, EXIT)) is None and \
                start_ticks(run.get('supervisor_pid'), proc_root) is None:
            break  # no supervisor left to record it
        if how == 'killed':
            signal_group(run, signal.SIGKILL, proc_root)
        time.sleep(poll)
    return True, how
