#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: stage_record
short_description: End a benchmark stage on its host in one round trip, keeping its evidence and writing its status
version_added: 0.1.0
description:
  - The last step of a stage (the C(specdec.bench.bench_stage) role). In this order, so each piece sees the server as it
    was. It reads the server's C(/server_info) (the acceptance length after the runs) while it still runs, snapshots the
    GPU facts (which GPUs and how much memory the server held), reads the service's state, stops it and waits for
    it to be stopped, copies the unit file (or the supervisor's definition) as it ran, keeps the service's last lines
    of output (its journal, or the supervisor's log), then writes the status.
  - For a failed stage the service's state and those lines also go into the status as evidence.
  - An V(ok) stage whose C(/server_info) cannot be read is recorded V(failed) with that reason.
  - Every file is written to a temporary file and renamed, mode O(mode); the status is written last, so a status file
    always comes with the evidence it names.
author:
  - specdec.bench developers (!UNKNOWN)
options:
  dir:
    description: The stage's results folder; it must exist.
    type: path
    required: true
  unit:
    description: The stage's service (a systemd unit name on both backends).
    type: str
    required: true
  stop_timeout:
    description: Seconds between SIGTERM and SIGKILL when the supervisor stops the server.
    type: int
    default: 60
  unit_dir:
    description: Where the unit file was rendered (O(backend=systemd)).
    type: path
    default: /etc/systemd/system
  base_url:
    description: The server's base URL; C(/server_info) is read from it. Without it no C(/server_info) is kept.
    type: str
  status:
    description:
      - The stage's status (C(stage), C(status) V(ok) or V(failed), C(reason), C(started), C(headline), C(timings),
        C(repeats), C(evidence)); C(finished) is set here.
    type: dict
    required: true
  files:
    description:
      - The file names of the results layout. Each defaults to the collection's layout
        (P(specdec.bench.results_layout#filter)), so a caller gives none of them.
    type: dict
    suboptions:
      status:
        description: The status file.
        type: str
        default: status.json
      server_info:
        description: C(/server_info) as read.
        type: str
        default: server_info.json
      gpus:
        description: The GPU facts snapshot.
        type: str
        default: gpus.json
      unit:
        description: The unit file as it ran (O(backend=systemd)).
        type: str
        default: unit.service
      service:
        description: The supervisor's definition as it ran (O(backend=supervisor)).
        type: str
        default: service.json
      journal:
        description: The journal excerpt, or the supervisor's log excerpt.
        type: str
        default: journal.txt
  journal_lines:
    description: How many of the service's last lines of output to keep.
    type: int
    default: 200
  gpu_snapshot:
    description: Snapshot the GPU facts before stopping the unit.
    type: bool
    default: true
  mode:
    description: Mode of the files written.
    type: str
    default: "0640"
extends_documentation_fragment:
  - specdec.bench.attributes
  - specdec.bench.service_backend
attributes:
  check_mode:
    support: none
  diff_mode:
    support: none
seealso:
  - module: specdec.bench.bench_run
  - module: specdec.bench.sglang_ready
notes:
  - Requires Python 3.9 or later on the host; standard library only.
"""

EXAMPLES = r"""
- name: Keep the evidence, stop the server and write the status
  specdec.bench.stage_record:
    dir: /root/bench_results/qwen36-ct200/tp1-dflash-n16
    unit: specdec-qwen36-ct200-tp1-dflash-n16.service
    base_url: http://127.0.0.1:31001
    status: {stage: tp1-dflash-n16, status: ok, reason: null, started: "2026-12-02T14:00:00Z", headline: []}
"""

RETURN = r"""
status:
  description: The status as written.
  returned: success
  type: dict
  sample: {stage: tp1-dflash-n16, status: ok, reason: null, started: "2026-12-02T14:00:00Z", finished: "2026-12-02T14:03:10Z"}
written:
  description: The files written, by layout name.
  returned: success
  type: dict
warnings_seen:
  description: What could not be kept (a file missing from the evidence), also given as warnings.
  returned: success
  type: list
  elements: str
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils import _service as service
from ansible_collections.specdec.bench.plugins.module_utils import _supervisor as supervisor
from ansible_collections.specdec.bench.plugins.module_utils._common import RESULTS_LAYOUT, atomic_write
from ansible_collections.specdec.bench.plugins.module_utils._gpu_probe import gather_gpu_facts
from ansible_collections.specdec.bench.plugins.module_utils._sglang_http import CONNECTION_ERRORS, HTTPStatusError, request_json

TIME_FORMAT = '%Y-%m-%dT%H:%M:%SZ'


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dir=dict(type='path', required=True),
            unit=dict(type='str', required=True),
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
        ),
        supports_check_mode=False,
    )
    params = module.params
    status = dict(params['status'])
    if status.get('status') not in ('ok', 'failed'):
        module.fail_json(msg='status.status must be ok or failed, got %r' % status.get('status'))
    if not os.path.isdir(params['dir']):
        module.fail_json(msg='dir %s does not exist: the results_dir role makes it' % params['dir'])
    for name in params['files'].values():
        if name is None:
            continue
        if '/' in name or name in ('', '.', '..'):
            module.fail_json(msg='files must be file names, got %r' % name)
    try:
        mode = int(params['mode'], 8)
    except ValueError:
        module.fail_json(msg='mode must be an octal string such as 0640, got %r' % params['mode'])
    files = dict((key, os.path.join(params['dir'], name)) for key, name in params['files'].items() if name)
    written, missing = {}, []

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
        facts, dummy = gather_gpu_facts(module, 'auto', False, 256)
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
    status['finished'] = time.strftime(TIME_FORMAT, time.gmtime())
    atomic_write(files['status'], json.dumps(status, indent=4, sort_keys=True) + '\n', mode)
    written['status'] = files['status']
    for text in missing:
        module.warn(text)
    module.exit_json(changed=True, status=status, written=written, warnings_seen=missing)


if __name__ == '__main__':
    main()
