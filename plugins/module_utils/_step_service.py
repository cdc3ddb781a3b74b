# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""specdec.bench.service's logic: start, stop and read a long-lived process (systemd unit or specdec's supervisor).

run(module) takes an AnsibleModule or a _step.StepModule (specdec.bench.stage_run); ARGUMENT_SPEC is its options.
"""

from __future__ import annotations

import os
import shutil

from ansible_collections.specdec.bench.plugins.module_utils import _service as service
from ansible_collections.specdec.bench.plugins.module_utils import _supervisor as supervisor

ARGUMENT_SPEC = dict(
    name=dict(type='str', required=True),
    backend=dict(type='str', required=True, choices=list(service.BACKENDS)),
    state=dict(type='str', default='status', choices=['defined', 'started', 'stopped', 'absent', 'status']),
    definition=dict(type='dict'),
    state_dir=dict(type='path', default=supervisor.DEFAULT_STATE_DIR),
    timeout=dict(type='int', default=60),
    log_lines=dict(type='int', default=0),
    unit_dir=dict(type='path', default=service.DEFAULT_UNIT_DIR),
    staging_dir=dict(type='path', default=service.DEFAULT_STAGING_DIR),
    secrets=dict(type='dict', no_log=False, options=dict(
        path=dict(type='path', required=True),
        env=dict(type='dict', default={}, no_log=True),
        comment=dict(type='list', elements='str', default=[]))),
)


def run(module):
    """The module's work, ended by module.exit_json or module.fail_json."""
    p = module.params
    name, backend, state, state_dir = p['name'], p['backend'], p['state'], p['state_dir']
    if '/' in name or name in ('', '.', '..'):
        module.fail_json(msg='name is %r; allowed: a unit name without "/"' % name)
    if backend == 'systemd' and state == 'absent':
        module.fail_json(msg='state=absent is for backend supervisor; a systemd unit is removed by its role')
    if state == 'defined' and p['definition'] is None:
        module.fail_json(msg='state=defined needs a definition')
    if backend == 'systemd' and p['definition'] is not None and state not in ('defined', 'started'):
        module.fail_json(msg='definition is for state defined or started')
    result = dict(changed=False)
    try:
        if p['secrets'] and state in ('defined', 'started'):
            # the environment file of secrets first: the definition names it in env_files
            result['changed'] = service.write_env_file(p['secrets']['path'], p['secrets']['env'], p['secrets']['comment'],
                                                       module.check_mode)
        if p['definition'] is not None and backend == 'systemd' and state in ('defined', 'started'):
            # rendered, staged, verified, installed; systemd is reloaded before a start (a role's handler otherwise)
            if service.define_systemd(module, name, p['definition'], p['unit_dir'], p['staging_dir']):
                result['changed'] = True
                if state == 'started' and not module.check_mode:
                    service.daemon_reload(module)
        elif p['definition'] is not None and backend == 'supervisor':
            try:
                definition = service.supervisor_definition(p['definition'], name)
            except ValueError as exc:
                module.fail_json(msg=str(exc))
            if module.check_mode:
                current = supervisor.read_json(os.path.join(state_dir, name, supervisor.DEFINITION))
                result['changed'] = result['changed'] or current != definition
            elif state in ('defined', 'started'):
                result['changed'] = service.write_definition(os.path.join(state_dir, name), p['definition'], name) or result['changed']
        current = service.status(module, backend, name, state_dir)
        if state == 'started' and current['state'] != 'running':
            if module.check_mode:
                result['changed'] = True
            else:
                changed, current = service.start(module, backend, name, state_dir)
                result['changed'] = result['changed'] or changed
        elif state in ('stopped', 'absent') and current['state'] == 'running':
            if module.check_mode:
                result['changed'] = True
            else:
                changed, current = service.stop(module, backend, name, p['timeout'], state_dir)
                result['changed'] = result['changed'] or changed
        if state == 'absent' and os.path.isdir(os.path.join(state_dir, name)):
            result['changed'] = True
            if not module.check_mode:
                shutil.rmtree(os.path.join(state_dir, name))
                current = service.status(module, backend, name, state_dir)
        result['service'] = current
        if p['log_lines'] > 0:
            result['log'], result['log_error'] = service.log(module, backend, name, p['log_lines'], state_dir)
    except (RuntimeError, ValueError, OSError) as exc:
        module.fail_json(msg='%s (%s): %s' % (name, backend, exc), **result)
    module.exit_json(**result)
