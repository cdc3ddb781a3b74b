# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A process that no service manager runs, by its pid: its command line, its record, and stopping it.

Private to the specdec.bench collection; standard library only. Where PID 1 is not systemd, a GPU may be held by a
program someone started by hand. The GPU facts name it by its command line (read_cmdline); the conflicts role stops
it through specdec.bench.process_stop, which first records what it takes to start it again (snapshot: argv, the
program's absolute path, cwd, environment, uid, gid and groups, pid and start ticks) in the campaign's conflicts
record, written here with mode 0600 since the environment may hold secrets. Every function takes proc_root so tests
can use a fake /proc.

The restore runs the entry again as the supervisor service RESTORED_SERVICE, defined by restore_definition: as its
owner (never as root for a process that was not root), with exactly its environment. process_stop calls
restore_definition too, before it stops anything, so what the restore would refuse is never stopped.
"""

from __future__ import annotations

import json
import os
import signal
import time

from ansible_collections.specdec.bench.plugins.module_utils._common import atomic_write
from ansible_collections.specdec.bench.plugins.module_utils._service import check_definition

# The GPU facts keep this much of a command line: enough to match, bounded for a process with a huge argv.
CMDLINE_MAX_CHARS = 4096
# The supervisor's service a stopped process is restored as; from then on the process has this name.
RESTORED_SERVICE = 'specdec-restored-%s.service'
DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'


def cmdline_text(data):
    """/proc/<pid>/cmdline (NUL separated bytes) as one line: NULs as spaces, at most CMDLINE_MAX_CHARS; None when
    empty (a zombie, a kernel thread)."""
    text = data.rstrip(b'\0').replace(b'\0', b' ').decode('utf-8', 'replace')
    return text[:CMDLINE_MAX_CHARS] or None


def cmdline_argv(data):
    """/proc/<pid>/cmdline as the list of words the process was started with."""
    data = data[:-1] if data.endswith(b'\0') else data
    return [word.decode('utf-8', 'surrogateescape') for word in data.split(b'\0')] if data else []


def _read(pid, name, proc_root):
    with open(os.path.join(proc_root, str(pid), name), 'rb') as handle:
        return handle.read()


def read_cmdline(pid, proc_root='/proc'):
    """The pid's command line as one line (cmdline_text); None when it cannot be read (gone, another namespace)."""
    try:
        return cmdline_text(_read(pid, 'cmdline', proc_root))
    except OSError:
        return None


def _stat(pid, proc_root):
    """(state, pgid, start ticks) from /proc/<pid>/stat; None when the process is gone or a zombie."""
    try:
        fields = _read(pid, 'stat', proc_root).decode('utf-8', 'replace').rsplit(')', 1)[1].split()
        state, pgid, ticks = fields[0], int(fields[2]), int(fields[19])
    except (OSError, ValueError, IndexError):
        return None
    return None if state in ('Z', 'X') else (state, pgid, ticks)


def start_ticks(pid, proc_root='/proc'):
    """Field 22 of /proc/<pid>/stat; None when the process is gone (a zombie is gone: it holds nothing)."""
    stat = _stat(pid, proc_root)
    return stat[2] if stat else None


def parse_environ(data):
    """/proc/<pid>/environ as a dict (names without '=' dropped, as the kernel may keep them)."""
    values = {}
    for item in data.split(b'\0'):
        key, sep, value = item.partition(b'=')
        if sep and key:
            values[key.decode('utf-8', 'surrogateescape')] = value.decode('utf-8', 'surrogateescape')
    return values


def _executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def resolve_program(word, cwd, environ, exe=None, executable=_executable):
    """argv[0] as an absolute path, found as the shell found it: relative to cwd when it has a '/', else on the
    process's own PATH; the kernel's /proc/<pid>/exe last (it resolves symlinks, so a venv's python would lose its
    venv). None when none is found."""
    if word.startswith('/'):
        return word
    if '/' in word:
        return os.path.normpath(os.path.join(cwd, word))
    for folder in (environ.get('PATH') or DEFAULT_PATH).split(':'):
        candidate = os.path.join(folder if folder.startswith('/') else os.path.join(cwd, folder), word)
        if executable(candidate):
            return os.path.normpath(candidate)
    return exe


def parse_status(data):
    """/proc/<pid>/status as {field: value}, the value's surrounding blanks stripped."""
    fields = {}
    for line in data.decode('utf-8', 'replace').splitlines():
        key, sep, value = line.partition(':')
        if sep:
            fields[key] = value.strip()
    return fields


def owner(pid, status):
    """The ids a restore runs the process as, from its /proc/<pid>/status fields: {'uid', 'gid', 'groups'}.

    ValueError naming the pid, the field and why, for a process a restore could not run as it ran: real, effective,
    saved and filesystem ids that differ (a set-user-ID or set-group-ID program, or one that changed its ids), or a
    process of another uid than 0 holding capabilities (file capabilities, or kept across setuid), which a process
    started as that uid does not get. A root process is restored as root, with the supervisor's capabilities.
    """
    ids = {}
    for field in ('Uid', 'Gid'):
        values = status.get(field, '').split()
        if len(values) != 4 or not all(value.isdigit() for value in values):
            raise ValueError('process %d: %s is %r; allowed: its real, effective, saved and filesystem ids'
                             % (pid, field, status.get(field)))
        if len(set(values)) != 1:
            raise ValueError('process %d: %s is %s (real, effective, saved, filesystem): they differ (a set-%s-ID '
                             'program, or one that changed its ids), and a restore can run it with one id only'
                             % (pid, field, ' '.join(values), 'user' if field == 'Uid' else 'group'))
        ids[field] = int(values[0])
    groups = status.get('Groups')
    if groups is None or not all(group.isdigit() for group in groups.split()):
        raise ValueError('process %d: Groups is %r; allowed: its supplementary group ids' % (pid, groups))
    if ids['Uid'] != 0:
        for field in ('CapEff', 'CapPrm', 'CapAmb'):
            try:
                held = int(status.get(field) or '0', 16)
            except ValueError:
                raise ValueError('process %d: %s is %r; allowed: a hexadecimal capability set'
                                 % (pid, field, status.get(field))) from None
            if held:
                raise ValueError('process %d: %s is %s: capabilities uid %d does not have (file capabilities, or kept '
                                 'across setuid), which a restore as uid %d could not give back'
                                 % (pid, field, status[field], ids['Uid'], ids['Uid']))
    return {'uid': ids['Uid'], 'gid': ids['Gid'], 'groups': [int(group) for group in groups.split()]}


def snapshot(pid, proc_root='/proc'):
    """What it takes to start the process again, and to know it is still the same one; ValueError when any part
    cannot be read (it is then not stopped: it could not be restored)."""
    stat = _stat(pid, proc_root)
    if stat is None:
        raise ValueError('process %d is gone' % pid)
    try:
        argv = cmdline_argv(_read(pid, 'cmdline', proc_root))
        cwd = os.readlink(os.path.join(proc_root, str(pid), 'cwd'))
        environ = parse_environ(_read(pid, 'environ', proc_root))
        status = parse_status(_read(pid, 'status', proc_root))
    except OSError as exc:
        raise ValueError('cannot read process %d in %s: %s' % (pid, proc_root, exc)) from None
    if not argv:
        raise ValueError('process %d has no command line (a kernel thread, or exiting)' % pid)
    try:
        exe = os.readlink(os.path.join(proc_root, str(pid), 'exe'))
    except OSError:
        exe = None
    program = resolve_program(argv[0], cwd, environ, exe)
    if program is None:
        raise ValueError('cannot find the program %r of process %d on its PATH' % (argv[0], pid))
    return dict({'pid': pid, 'start_ticks': stat[2], 'pgid': stat[1], 'leads_group': stat[1] == pid, 'argv': argv,
                 'program': program, 'cwd': cwd, 'env': environ}, **owner(pid, status))


def _text(field, value):
    """value, which the restore passes through Ansible as text: ValueError when it is not UTF-8 (bytes /proc gave
    that cmdline_argv and parse_environ kept as surrogates)."""
    try:
        if isinstance(value, str):
            value.encode('utf-8')
    except UnicodeEncodeError:
        raise ValueError('%s is %r: not UTF-8 text, which the restore cannot pass on unchanged' % (field, value)) from None
    return value


def restore_definition(name, entry, campaign=''):
    """The supervisor definition that runs a process_stop entry again as RESTORED_SERVICE % name.

    The recorded program (argv[0] as the absolute path the process found it at), the rest of argv word for word
    (empty words too), its cwd and exactly its environment (inherit_env false: nothing of the supervisor's own), as
    its uid, gid and groups. Checked here as the service module checks it (check_definition): the restore calls
    this, and process_stop calls it before the stop, so a process the restore would refuse is never stopped.
    ValueError naming the process and the field.
    """
    prefix = 'processes.%s' % name
    try:
        missing = [key for key in ('pid', 'argv', 'program', 'cwd', 'env', 'uid', 'gid', 'groups') if key not in entry]
        if missing:
            raise ValueError('has no %s (recorded by an older process_stop, which did not record its owner); allowed: '
                             'an entry with them: start it by hand and remove the entry' % ', '.join(missing))
        argv, env = entry['argv'], entry['env']
        if not isinstance(argv, list) or not argv or not all(isinstance(word, str) for word in argv):
            raise ValueError('argv is %r; allowed: the list of words it was started with' % (argv,))
        if not isinstance(env, dict):
            raise ValueError('env is %r; allowed: a mapping of names to values' % (env,))
        words = [_text('argv[%d]' % index, word) for index, word in enumerate(argv)]
        for key, value in env.items():
            _text('env name', key)
            _text('env.%s' % key, value)
        definition = {
            'argv': [_text('program', entry['program'])] + words[1:],
            'env': env,
            'inherit_env': False,
            'cwd': _text('cwd', entry['cwd']),
            'uid': entry['uid'], 'gid': entry['gid'], 'groups': entry['groups'],
            'description': '%s, started by hand, stopped by campaign %s (pid %s)' % (name, campaign, entry['pid']),
        }
        return check_definition(definition)
    except ValueError as exc:
        raise ValueError('%s (pid %s) cannot be restored: %s' % (prefix, entry.get('pid'), exc)) from None


def check_restorable(name, entry, campaign=''):
    """restore_definition, and what can be seen of the host before the stop: the program and cwd are still there
    (a deleted run folder is "/srv/run (deleted)" in /proc). ValueError naming the field."""
    definition = restore_definition(name, entry, campaign)
    if not os.path.isdir(definition['cwd']):
        raise ValueError('processes.%s (pid %s) cannot be restored: cwd %r is not a folder now'
                         % (name, entry['pid'], definition['cwd']))
    if not _executable(definition['argv'][0]):
        raise ValueError('processes.%s (pid %s) cannot be restored: the program %r is not an executable file now'
                         % (name, entry['pid'], definition['argv'][0]))
    return definition


def same_process(entry, proc_root='/proc'):
    """Whether the recorded process still runs (same pid, same start ticks)."""
    ticks = start_ticks(entry['pid'], proc_root)
    return ticks is not None and ticks == entry.get('start_ticks')


def _group_alive(pgid, proc_root):
    try:
        names = [name for name in os.listdir(proc_root) if name.isdigit()]
    except OSError:
        return False
    for name in names:
        stat = _stat(int(name), proc_root)
        if stat is not None and stat[1] == pgid:
            return True
    return False


def _signal(entry, number, proc_root):
    """The signal to the process while it is still that process, and to the group it leads; a reused pid is spared."""
    if entry['leads_group']:
        try:
            os.killpg(entry['pid'], number)
        except OSError:
            pass
    if same_process(entry, proc_root):
        try:
            os.kill(entry['pid'], number)
        except OSError:
            pass


def gone(entry, proc_root='/proc'):
    """Neither the process nor (when it led one) any member of its group is left."""
    if same_process(entry, proc_root):
        return False
    return not (entry['leads_group'] and _group_alive(entry['pid'], proc_root))


def stop(entry, timeout, proc_root='/proc', poll=0.05, kill_wait=10.0):
    """SIGTERM to the process (and its group), SIGKILL after timeout seconds; 'terminated' or 'killed'.

    RuntimeError when it is still there kill_wait seconds after SIGKILL (a process in uninterruptible sleep).
    """
    _signal(entry, signal.SIGTERM, proc_root)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if gone(entry, proc_root):
            return 'terminated'
        time.sleep(poll)
    _signal(entry, signal.SIGKILL, proc_root)
    deadline = time.monotonic() + kill_wait
    while time.monotonic() < deadline:
        if gone(entry, proc_root):
            return 'killed'
        time.sleep(poll)
    raise RuntimeError('process %d is still there %s s after SIGKILL' % (entry['pid'], kill_wait))


def read_record(path):
    """The campaign's conflicts record as a dict ({} when there is none); ValueError when it is not a JSON object."""
    try:
        with open(path, encoding='utf-8') as handle:
            data = json.load(handle)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ValueError('cannot read the conflicts record %s: %s' % (path, exc)) from None
    if not isinstance(data, dict):
        raise ValueError('the conflicts record %s is not a JSON object' % path)
    return data


def write_record(path, data):
    """Write the record atomically with mode 0600 (the environments it holds may hold secrets)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    atomic_write(path, json.dumps(data, indent=2, sort_keys=True) + '\n', mode=0o600)
