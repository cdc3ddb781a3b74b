# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""specdec.bench.stage_record's engine: end a stage on its host, keeping its evidence and writing its status.

stage_record(module, params) returns the module's result or raises StageError; module is the running AnsibleModule (its
run_command, get_bin_path, warn and check mode); ARGUMENT_SPEC is its options. The only writer of a stage's
status.json: a stage that ran, and one recorded without running (no unit: infeasible, or failed before it started).
"""

from __future__ import annotations

import json
import os

from ansible_collections.specdec.bench.plugins.module_utils import _service as service
from ansible_collections.specdec.bench.plugins.module_utils import _supervisor as supervisor
from ansible_collections.specdec.bench.plugins.module_utils._common import RESULTS_LAYOUT, atomic_write, utc_stamp
from ansible_collections.specdec.bench.plugins.module_utils._gpu_probe import GpuProbeError, gather_gpu_facts
from .errors import StageError
from .sglang_http import CONNECTION_ERRORS, HTTPStatusError, request_json

STATUSES = ('ok', 'failed', 'infeasible')


ARGUMENT_SPEC = dict(
    dir=dict(type='path', required=True),
    unit=dict(type='str'),
    backend=dict(type='str', default='systemd', choices=list(service.BACKENDS)),
    state_dir=dict(type='path', default=supervisor.DEFAULT_STATE_DIR),
    stop_timeout=dict(type='int', default=60),
    unit_dir=dict(type='path', default='/etc/systemd/system'),
    base_url=dict(type='str'),
    status=dict(type='dict', required=True),
    files=dict(type='dict', apply_defaults=True, options=dict(
        (name, dict(type='str', default=RESULTS_LAYOUT[name]))
        for name in ('status', 'server_info', 'gpus', 'unit', 'service', 'journal'))),
    journal_lines=dict(type='int', default=200),
    gpu_snapshot=dict(type='bool', default=True),
    mode=dict(type='str', default='0640'),
)


def stage_record(module, params):
    """The evidence kept, the server stopped, status.json written: the module's result; StageError on bad options.

    Without params['unit'] no server ran: only status.json is written. Check mode reads, stops and writes nothing and
    returns the status as it would be written, less what the server would add."""
    status = dict(params['status'])
    if status.get('status') not in STATUSES:
        raise StageError('status.status must be %s, got %r' % (', '.join(STATUSES[:-1]) + ' or ' + STATUSES[-1], status.get('status')))
    if params['unit'] is None and params['base_url']:
        raise StageError('base_url is for a stage whose server ran: it needs unit')
    if not module.check_mode and not os.path.isdir(params['dir']):
        raise StageError('dir %s does not exist: the results_dir role makes it' % params['dir'])
    for name in params['files'].values():
        if name is None:
            continue
        if '/' in name or name in ('', '.', '..'):
            raise StageError('files must be file names, got %r' % name)
    try:
        mode = int(params['mode'], 8)
    except ValueError:
        raise StageError('mode must be an octal string such as 0640, got %r' % params['mode'])
    files = dict((key, os.path.join(params['dir'], name)) for key, name in params['files'].items() if name)
    written, missing = {}, []
    if params['unit'] is not None and not module.check_mode:
        keep_evidence(module, params, status, files, mode, written, missing)
    if status['status'] == 'infeasible':
        # never ran: no start, no end
        status.update(started=None, finished=None)
    else:
        status['finished'] = utc_stamp()
        if params['unit'] is None:
            # a stage recorded without running began and ended at its record
            status.setdefault('started', status['finished'])
    if not module.check_mode:
        atomic_write(files['status'], json.dumps(status, indent=4, sort_keys=True) + '\n', mode)
        written['status'] = files['status']
    for text in missing:
        module.warn(text)
    return dict(changed=True, status=status, written=written, warnings_seen=missing)


def keep_evidence(module, params, status, files, mode, written, missing):
    """What the server leaves, in order (server_info and GPUs while it runs, its state, the stop, its definition, its
    output), into files and written; what could not be kept into missing; a failed status gets the evidence."""
    if params['base_url']:
        try:
            info = request_json(params['base_url'].rstrip('/') + '/server_info', timeout=30)
        except (HTTPStatusError, ValueError) + CONNECTION_ERRORS as exc:
            info = None
            missing.append('server_info: %s' % exc)
            if status['status'] == 'ok':
                status.update(status='failed', reason='the server stopped answering /server_info after the runs: %s' % exc)
        if info is not None:
            atomic_write(files['server_info'], json.dumps(info, indent=4, sort_keys=True) + '\n', mode)
            written['server_info'] = files['server_info']

    if params['gpu_snapshot']:
        try:
            facts, dummy = gather_gpu_facts(module, 'auto', False, 256)
        except GpuProbeError as exc:
            facts = None
            missing.append('gpus: %s' % exc.msg)
        if facts is not None:
            gpus = {'nvidia_gpus': facts.get('nvidia_gpus', []), 'nvidia_driver': facts.get('nvidia_driver')}
            atomic_write(files['gpus'], json.dumps(gpus, indent=4, sort_keys=True), mode)
            written['gpus'] = files['gpus']

    backend, unit = params['backend'], params['unit']
    try:
        state = service.status(module, backend, unit, params['state_dir'])
    except (RuntimeError, ValueError, OSError) as exc:
        state = {}
        missing.append('the state of %s: %s' % (unit, exc))
    # stopped before its output is read, so the excerpt shows how the server ended
    try:
        dummy, stopped = service.stop(module, backend, unit, params['stop_timeout'], params['state_dir'])
        if state.get('state') == 'running':
            state['after_stop'] = stopped.get('state')
    except (RuntimeError, ValueError, OSError) as exc:
        missing.append('stopping %s failed: %s' % (unit, exc))

    if backend == 'systemd':
        definition, key = os.path.join(params['unit_dir'], unit), 'unit'
    else:
        definition, key = os.path.join(params['state_dir'], unit, supervisor.DEFINITION), 'service'
    if key in files:
        try:
            with open(definition, encoding='utf-8') as handle:
                atomic_write(files[key], handle.read(), mode)
            written[key] = files[key]
        except OSError as exc:
            missing.append('%s: %s' % ('unit file' if key == 'unit' else 'service definition', exc))

    # with timestamps (the supervisor's log has the start and end markers instead)
    journal, journal_error = service.log(module, backend, unit, params['journal_lines'], params['state_dir'], 'short-iso')
    if journal_error:
        missing.append(journal_error)
    if journal or not journal_error:
        atomic_write(files['journal'], ''.join(line + '\n' for line in journal), mode)
        written['journal'] = files['journal']

    if status['status'] == 'failed':
        evidence = dict(status.get('evidence') or {})
        evidence.setdefault('unit_state', state)
        if not evidence.get('journal'):
            evidence['journal'] = journal[-50:]
        status['evidence'] = evidence
