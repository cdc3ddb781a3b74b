# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One way to run a long-lived process, two backends: systemd units, or specdec's supervisor where PID 1 is not systemd.

Whatever the collection starts and stops (a stage's SGLang server, a training run, the monitor) goes through these
functions, so every module reads the same state: running, exited (status 0), failed (with the exit status, the
signal or why it could not start), inactive (defined, not started) or not-found. Standard library only, plus
AnsibleModule's run_command for systemctl and journalctl. manage() is specdec.bench.service's engine (ARGUMENT_SPEC
its options): it returns the module's result or raises StageError.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

from ansible_collections.specdec.bench.plugins.module_utils import _supervisor as supervisor
from ansible_collections.specdec.bench.plugins.module_utils._common import atomic_write
from ansible_collections.specdec.bench.plugins.module_utils._host_probe import format_cpu_list, parse_cpu_list
from ansible_collections.specdec.bench.plugins.module_utils._systemd import env_file_text, parse_show, render_unit
from ansible_collections.specdec.bench.plugins.module_utils._stage.errors import StageError

BACKENDS = ('systemd', 'supervisor')
SYSTEMD_PROPERTIES = 'Id,LoadState,ActiveState,SubState,MainPID,Result,ExecMainStatus,ExecMainCode,ActiveEnterTimestamp,InactiveEnterTimestamp'
DEFINITION_KEYS = ('argv', 'env', 'env_files', 'cwd', 'description', 'timeout_stop_sec', 'cpu_affinity', 'inherit_env',
                   'uid', 'gid', 'groups', 'numa_nodes', 'unit')
# systemd only: the unit file's layout, and the NUMA nodes memory is bound to; the supervisor has no use for them.
SYSTEMD_ONLY_KEYS = ('numa_nodes', 'unit')
DEFAULT_UNIT_DIR = '/etc/systemd/system'
# Units are rendered and verified here, then installed: one systemd-analyze rejects never reaches the unit folder.
DEFAULT_STAGING_DIR = '/var/lib/specdec/units'
# (uid_t)-1 means "leave unchanged" to setuid and setgid: the largest id a program can run as is one less.
ID_MAX = 4294967294


def folder(state_dir, name):
    return os.path.join(state_dir, name)


def _systemd_state(props):
    load, active = props.get('LoadState'), props.get('ActiveState')
    pid = int(props.get('MainPID') or 0) or None
    code = props.get('ExecMainStatus')
    result = {'state': 'inactive', 'pid': pid, 'exit_code': int(code) if code and code.isdigit() else None,
              'signal': None, 'error': None, 'started': props.get('ActiveEnterTimestamp') or None,
              'finished': props.get('InactiveEnterTimestamp') or None, 'pids': [pid] if pid else [],
              'sub_state': props.get('SubState'), 'result': props.get('Result')}
    if load == 'not-found':
        result['state'] = 'not-found'
    elif active in ('active', 'activating', 'reloading', 'deactivating'):
        result['state'] = 'running'
    elif active == 'failed':
        result['state'] = 'failed'
        if props.get('ExecMainCode') == '2' and result['exit_code'] is not None:  # CLD_KILLED: the status is a signal
            result['signal'], result['exit_code'] = result['exit_code'], None
    elif props.get('Result') == 'success' and result['exit_code'] == 0 and props.get('InactiveEnterTimestamp'):
        result['state'] = 'exited'
    return result


def status(module, backend, name, state_dir=supervisor.DEFAULT_STATE_DIR):
    """The service's state as a dict (see the module doc); raises RuntimeError when systemctl cannot tell."""
    if backend == 'supervisor':
        return dict(supervisor.status(folder(state_dir, name)), backend=backend, name=name)
    systemctl = module.get_bin_path('systemctl')
    if systemctl is None:
        raise RuntimeError('systemctl is not installed on this host: set specdec_service_backend to supervisor')
    rc, out, err = module.run_command([systemctl, 'show', '-p', SYSTEMD_PROPERTIES, '--', name])
    if rc != 0:
        raise RuntimeError('systemctl show %s failed (rc %d): %s' % (name, rc, (err or out).strip()))
    blocks = parse_show(out)
    return dict(_systemd_state(blocks[0] if blocks else {}), backend=backend, name=name)


def log(module, backend, name, lines, state_dir=supervisor.DEFAULT_STATE_DIR, journal_format='cat'):
    """(the service's last lines of output, why they could not be read or None): the journal, or the supervisor's log."""
    if backend == 'supervisor':
        path = folder(state_dir, name)
        if not os.path.exists(os.path.join(path, supervisor.LOG)):
            return [], 'no log at %s' % os.path.join(path, supervisor.LOG)
        return supervisor.log_tail(path, lines), None
    journalctl = module.get_bin_path('journalctl')
    if journalctl is None:
        return [], 'journalctl is not installed on this host'
    rc, out, err = module.run_command([journalctl, '-u', name, '--no-pager', '-n', str(lines), '-o', journal_format])
    if rc != 0:
        return out.splitlines(), 'journalctl failed (rc %d): %s' % (rc, (err or out).strip())
    return out.splitlines(), None


def _check_id(field, value):
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= ID_MAX:
        raise ValueError('definition.%s is %r; allowed: a numeric id from 0 to %d' % (field, value, ID_MAX))


def check_definition(definition):
    """The definition as written to service.json; ValueError naming the field."""
    if not isinstance(definition, dict) or any(key not in DEFINITION_KEYS for key in definition):
        raise ValueError('definition is %r; allowed: a mapping with keys %s' % (definition, ', '.join(DEFINITION_KEYS)))
    argv = definition.get('argv')
    if not isinstance(argv, list) or not argv or not all(isinstance(word, str) and '\0' not in word for word in argv):
        raise ValueError('definition.argv is %r; allowed: a non-empty list of words without NUL, the program first' % (argv,))
    # an empty word after the program is an argument like any other (--tag ''): execve passes it as it is
    if not os.path.isabs(argv[0]):
        raise ValueError('definition.argv[0] is %r; allowed: an absolute path' % argv[0])
    env = definition.get('env') or {}
    if not isinstance(env, dict):
        raise ValueError('definition.env is %r; allowed: a mapping of names to values' % (env,))
    for key, value in env.items():
        if not isinstance(key, str) or not key or '=' in key or '\0' in key:
            raise ValueError('definition.env has the name %r; allowed: a non-empty name without "=" or NUL' % (key,))
        if not isinstance(value, (str, int, float)) or isinstance(value, bool) or '\0' in str(value):
            raise ValueError('definition.env.%s is %r; allowed: a string or number without NUL' % (key, value))
    if definition.get('inherit_env') not in (None, True, False):
        raise ValueError('definition.inherit_env is %r; allowed: true (the supervisor\'s environment, then env_files '
                         'and env) or false (env_files and env only)' % (definition['inherit_env'],))
    # the ids the program runs as: all three, or none (it runs as the supervisor does)
    owner = [key for key in ('uid', 'gid', 'groups') if definition.get(key) is not None]
    if owner and len(owner) != 3:
        raise ValueError('definition has %s; allowed: uid, gid and groups together (groups [] for none), or none of '
                         'them' % ', '.join(owner))
    if owner:
        _check_id('uid', definition['uid'])
        _check_id('gid', definition['gid'])
        if not isinstance(definition['groups'], list):
            raise ValueError('definition.groups is %r; allowed: a list of numeric group ids' % (definition['groups'],))
        for index, group in enumerate(definition['groups']):
            _check_id('groups[%d]' % index, group)
    out = dict(definition, env=dict((str(k), str(v)) for k, v in env.items()))
    # the CPUs to run on, kept as a cpulist ("0-47,96-143"); none (null, empty) is no key, as before pinning existed
    cpus = out.pop('cpu_affinity', None)
    if cpus not in (None, '', []):
        try:
            if isinstance(cpus, list) and all(isinstance(cpu, int) and not isinstance(cpu, bool) and cpu >= 0 for cpu in cpus):
                out['cpu_affinity'] = format_cpu_list(cpus)
            elif isinstance(cpus, str):
                out['cpu_affinity'] = format_cpu_list(parse_cpu_list(cpus))
            else:
                raise ValueError('not a cpulist')
        except ValueError:
            raise ValueError('definition.cpu_affinity is %r; allowed: a cpulist ("0-47,96-143"), a list of CPU numbers, '
                             'or null (not pinned)' % (cpus,))
    out.setdefault('env_files', [])
    out.setdefault('cwd', '/')
    return out


def supervisor_definition(definition, name):
    """What service.json holds: the checked definition without what only systemd reads."""
    data = dict(check_definition(definition), name=name)
    for key in SYSTEMD_ONLY_KEYS:
        data.pop(key, None)
    return data


def write_definition(path, definition, name):
    """Write <path>/service.json when it differs; True when it changed."""
    data = supervisor_definition(definition, name)
    text = json.dumps(data, indent=2, sort_keys=True) + '\n'
    os.makedirs(path, mode=0o750, exist_ok=True)
    return atomic_write(os.path.join(path, supervisor.DEFINITION), text, mode=0o640, unchanged_ok=True)


def start(module, backend, name, state_dir=supervisor.DEFAULT_STATE_DIR, wait=10.0):
    """Start the service unless it runs ("never twice"); (changed, status)."""
    current = status(module, backend, name, state_dir)
    if current['state'] == 'running':
        return False, current
    if current['state'] == 'not-found':
        raise RuntimeError('%s is not defined (%s): nothing to start' % (
            name, 'no unit' if backend == 'systemd' else 'no %s' % os.path.join(folder(state_dir, name), supervisor.DEFINITION)))
    if backend == 'systemd':
        rc, out, err = module.run_command([systemctl(module), 'start', '--', name])
        if rc != 0:
            raise RuntimeError('systemctl start %s failed (rc %d): %s' % (name, rc, (err or out).strip()))
        return True, status(module, backend, name, state_dir)
    path = folder(state_dir, name)
    for stale in (supervisor.RUN, supervisor.EXIT):
        try:
            os.remove(os.path.join(path, stale))
        except OSError:
            pass
    python = sys.executable or '/usr/bin/python3'
    # a session of its own and no stdio: it outlives the SSH connection, the module and the controller
    subprocess.Popen([python, '-c', supervisor.SUPERVISOR_SCRIPT, path], stdin=subprocess.DEVNULL,  # pylint: disable=consider-using-with
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True, cwd='/')
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if os.path.exists(os.path.join(path, supervisor.RUN)) or os.path.exists(os.path.join(path, supervisor.EXIT)):
            break
        time.sleep(0.02)
    else:
        raise RuntimeError('the supervisor of %s wrote no %s within %s s' % (name, supervisor.RUN, wait))
    # a program that could not be executed: the supervisor records its exit right after run.json
    run = supervisor.read_json(os.path.join(path, supervisor.RUN)) or {}
    deadline = time.monotonic() + 5.0
    while run.get('exec_error') and not os.path.exists(os.path.join(path, supervisor.EXIT)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return True, status(module, backend, name, state_dir)


def stop(module, backend, name, timeout, state_dir=supervisor.DEFAULT_STATE_DIR):
    """Stop the service (SIGTERM to its process group, SIGKILL after timeout); (changed, status)."""
    current = status(module, backend, name, state_dir)
    if current['state'] != 'running':
        return False, current
    if backend == 'systemd':
        rc, out, err = module.run_command([systemctl(module), 'stop', '--', name])
        if rc != 0:
            raise RuntimeError('systemctl stop %s failed (rc %d): %s' % (name, rc, (err or out).strip()))
    else:
        supervisor.stop(folder(state_dir, name), timeout)
    return True, status(module, backend, name, state_dir)


def _write_if_changed(path, text, mode, check_mode):
    """Write text to path (its folder exists) unless it holds it already with that mode; True when it changed."""
    data = text.encode('utf-8')
    try:
        with open(path, 'rb') as handle:
            same = handle.read(len(data) + 1) == data
        same_mode = (os.stat(path).st_mode & 0o7777) == mode
    except (FileNotFoundError, NotADirectoryError):
        same = same_mode = False
    if check_mode or (same and same_mode):
        return not (same and same_mode)
    if same:
        os.chmod(path, mode)
    else:
        atomic_write(path, data, mode=mode)
    return True


def write_env_file(path, env, comment=(), check_mode=False):
    """The environment file of secrets (mode 0600, its folder 0700), NAME="value" lines as EnvironmentFile= reads them
    (and the supervisor, which reads it as systemd does); True when it changed. ValueError names a bad name or value."""
    text = env_file_text(env, comment)
    folder_path = os.path.dirname(path)
    if not check_mode and folder_path and not os.path.isdir(folder_path):
        os.makedirs(folder_path, mode=0o700)
    if check_mode and not os.path.exists(path):
        return True
    return _write_if_changed(path, text, 0o600, check_mode)


def define_systemd(module, name, definition, unit_dir=DEFAULT_UNIT_DIR, staging_dir=DEFAULT_STAGING_DIR):
    """Render the definition's unit, write it into staging_dir, verify it there (systemd-analyze verify, where it is
    installed), then install it in unit_dir; True when the installed unit's bytes or mode changed.

    Check mode only compares. A unit systemd-analyze rejects, or warns about (status 0), stays in staging_dir and the
    RuntimeError says why; systemd is not reloaded here.
    """
    text = render_unit(check_definition(definition))
    installed = os.path.join(unit_dir, name)
    if module.check_mode:
        return _write_if_changed(installed, text, 0o644, True)
    os.makedirs(staging_dir, mode=0o700, exist_ok=True)
    staged = os.path.join(staging_dir, name)
    atomic_write(staged, text, mode=0o644)
    analyze = module.get_bin_path('systemd-analyze')
    if analyze is not None:
        rc, out, err = module.run_command([analyze, 'verify', staged])
        # it warns about keys it ignores with status 0: in a unit rendered here, that is a mistake
        if rc != 0 or staged in (err or ''):
            raise RuntimeError('systemd-analyze verify refused %s (rc %d), so it was not installed in %s: %s'
                               % (staged, rc, unit_dir, (err or out).strip()))
    os.makedirs(unit_dir, mode=0o755, exist_ok=True)
    return _write_if_changed(installed, text, 0o644, False)


def daemon_reload(module):
    rc, out, err = module.run_command([systemctl(module), 'daemon-reload'])
    if rc != 0:
        raise RuntimeError('systemctl daemon-reload failed (rc %d): %s' % (rc, (err or out).strip()))


def systemctl(module):
    """The path of systemctl; RuntimeError when this host has none."""
    path = module.get_bin_path('systemctl')
    if path is None:
        raise RuntimeError('Failed to find required executable "systemctl" on the PATH')
    return path


# specdec.bench.service's options (plugins/modules/service.py)
ARGUMENT_SPEC = dict(
    name=dict(type='str', required=True),
    backend=dict(type='str', required=True, choices=list(BACKENDS)),
    state=dict(type='str', default='status', choices=['defined', 'started', 'stopped', 'absent', 'status']),
    definition=dict(type='dict'),
    state_dir=dict(type='path', default=supervisor.DEFAULT_STATE_DIR),
    timeout=dict(type='int', default=60),
    log_lines=dict(type='int', default=0),
    unit_dir=dict(type='path', default=DEFAULT_UNIT_DIR),
    staging_dir=dict(type='path', default=DEFAULT_STAGING_DIR),
    secrets=dict(type='dict', no_log=False, options=dict(
        path=dict(type='path', required=True),
        env=dict(type='dict', default={}, no_log=True),
        comment=dict(type='list', elements='str', default=[]))),
)


def manage(module, params):
    """specdec.bench.service's work: the service brought to params['state']; the module's result, or StageError with
    the result so far (changed) as evidence. module is the running AnsibleModule (run_command, get_bin_path, check mode)."""
    p = params
    name, backend, state, state_dir = p['name'], p['backend'], p['state'], p['state_dir']
    if '/' in name or name in ('', '.', '..'):
        raise StageError('name is %r; allowed: a unit name without "/"' % name)
    if backend == 'systemd' and state == 'absent':
        raise StageError('state=absent is for backend supervisor; a systemd unit is removed by its role')
    if state == 'defined' and p['definition'] is None:
        raise StageError('state=defined needs a definition')
    if backend == 'systemd' and p['definition'] is not None and state not in ('defined', 'started'):
        raise StageError('definition is for state defined or started')
    result = dict(changed=False)
    try:
        if p['secrets'] and state in ('defined', 'started'):
            # the environment file of secrets first: the definition names it in env_files
            result['changed'] = write_env_file(p['secrets']['path'], p['secrets']['env'], p['secrets']['comment'],
                                               module.check_mode)
        if p['definition'] is not None and backend == 'systemd' and state in ('defined', 'started'):
            # rendered, staged, verified, installed; systemd is reloaded before a start (a role's handler otherwise)
            if define_systemd(module, name, p['definition'], p['unit_dir'], p['staging_dir']):
                result['changed'] = True
                if state == 'started' and not module.check_mode:
                    daemon_reload(module)
        elif p['definition'] is not None and backend == 'supervisor':
            try:
                definition = supervisor_definition(p['definition'], name)
            except ValueError as exc:
                raise StageError(str(exc))
            if module.check_mode:
                current = supervisor.read_json(os.path.join(state_dir, name, supervisor.DEFINITION))
                result['changed'] = result['changed'] or current != definition
            elif state in ('defined', 'started'):
                result['changed'] = write_definition(os.path.join(state_dir, name), p['definition'], name) or result['changed']
        current = status(module, backend, name, state_dir)
        if state == 'started' and current['state'] != 'running':
            if module.check_mode:
                result['changed'] = True
            else:
                changed, current = start(module, backend, name, state_dir)
                result['changed'] = result['changed'] or changed
        elif state in ('stopped', 'absent') and current['state'] == 'running':
            if module.check_mode:
                result['changed'] = True
            else:
                changed, current = stop(module, backend, name, p['timeout'], state_dir)
                result['changed'] = result['changed'] or changed
        if state == 'absent' and os.path.isdir(os.path.join(state_dir, name)):
            result['changed'] = True
            if not module.check_mode:
                shutil.rmtree(os.path.join(state_dir, name))
                current = status(module, backend, name, state_dir)
        result['service'] = current
        if p['log_lines'] > 0:
            result['log'], result['log_error'] = log(module, backend, name, p['log_lines'], state_dir)
    except (RuntimeError, ValueError, OSError) as exc:
        raise StageError('%s (%s): %s' % (name, backend, exc), result)
    return result
