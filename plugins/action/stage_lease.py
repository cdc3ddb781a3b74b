# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action specdec.bench.stage_lease: the controller's lease keeper (plugin_utils/lease_keeper.py).

state=kept starts a keeper that renews the wave's lease files from a process of its own, so the leases are renewed
whatever Ansible's worker scheduling (more hosts than forks); state=released stops it (stage_wait does this at its
end); state=checked times one renewal round trip and refuses, before any change, a lease the keeper cannot keep;
state=renewed runs the module on the host once.
"""

from __future__ import annotations

import time

from ansible import constants as C
from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.specdec.bench.plugins.plugin_utils import lease_keeper

MODULE = 'specdec.bench.stage_lease'
ARGUMENT_SPEC = {
    'lease_files': {'type': 'list', 'elements': 'path', 'default': []},
    'state': {'type': 'str', 'choices': ['renewed', 'kept', 'released', 'checked'], 'default': 'renewed'},
    'lease_timeout': {'type': 'float', 'default': 0.0},
    'interval': {'type': 'float', 'default': 0.0},
    'lifetime': {'type': 'float', 'default': 172800.0},
    'keeper': {'type': 'dict'},
}
# A lease must outlast the keeper's interval plus this many round trips: a slow renewal or two never stops a stage.
ROUND_TRIPS = 3
CHECK_TRIPS = 3


def interval_of(args):
    return args['interval'] if args['interval'] > 0 else args['lease_timeout'] / 4.0


class ActionModule(ActionBase):

    _supports_check_mode = True
    _supports_async = False

    def _renew_module(self, task_vars, lease_files):
        """One renewal through the module (state=renewed, and the keeper's first: it discovers the interpreter)."""
        result = self._execute_module(module_name=MODULE, module_args={'lease_files': lease_files}, task_vars=task_vars)
        if not isinstance(result, dict) or result.get('failed') or not isinstance(result.get('leases'), list):
            raise AnsibleActionFail('stage_lease: the renewal on the host failed: %s' % (result.get('msg') or result))
        return result

    def _interpreter(self, task_vars, module_result=None):
        facts = dict(task_vars.get('ansible_facts') or {}, **((module_result or {}).get('ansible_facts') or {}))
        found = task_vars.get('ansible_python_interpreter') or facts.get('discovered_interpreter_python')
        if not found:
            found = self._renew_module(task_vars, []).get('ansible_facts', {}).get('discovered_interpreter_python')
        return self._templar.template(found) if found else '/usr/bin/python3'

    def _renew(self, interpreter, lease_files):
        """One renewal as the keeper makes it: _lease.py run by the host's Python, one process start, no module."""
        reply = self._low_level_execute_command(lease_keeper.renew_command(interpreter, lease_files), sudoable=True)
        if reply.get('rc') != 0:
            raise AnsibleActionFail('stage_lease: the renewal on the host failed (rc %s): %s'
                                    % (reply.get('rc'), (reply.get('stderr') or reply.get('stdout') or '').strip()[-300:]))
        try:
            return lease_keeper.parse_renewal(reply.get('stdout') or '')
        except ValueError as exc:
            raise AnsibleActionFail('stage_lease: the renewal on the host answered %s' % exc)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        if validation.error_messages:
            raise AnsibleActionFail('stage_lease: %s' % '; '.join(validation.error_messages))
        for key in ('lease_timeout', 'interval', 'lifetime'):
            if not args[key] >= 0 or args[key] == float('inf'):
                raise AnsibleActionFail('stage_lease: %s is %r; allowed: a finite number of seconds >= 0' % (key, args[key]))
        state = args['state']
        if state == 'renewed':
            result.update(changed=False, leases=self._renew_module(task_vars, args['lease_files'])['leases'])
            return result
        if state == 'released':
            result.update(changed=False, renewals=lease_keeper.release(args['keeper']))
            return result
        if state == 'checked':
            return self._check(result, task_vars, args)
        if args['lease_timeout'] <= 0 or not args['lease_files']:
            result.update(changed=False, keeper=None, msg='no lease to keep')
            return result
        interpreter = self._interpreter(task_vars)
        self._renew(interpreter, args['lease_files'])  # once here: a host that cannot renew fails the task now
        keeper = lease_keeper.start(lambda: self._renew(interpreter, args['lease_files']), interval_of(args),
                                    args['lifetime'], tmp_root=C.DEFAULT_LOCAL_TMP)
        result.update(changed=False, keeper=keeper)
        return result

    def _check(self, result, task_vars, args):
        """Time a renewal round trip; refuse a lease shorter than the keeper's interval plus ROUND_TRIPS of them."""
        interpreter = self._interpreter(task_vars)
        trips = []
        for _trip in range(CHECK_TRIPS):
            began = time.monotonic()
            self._renew(interpreter, [])
            trips.append(time.monotonic() - began)
        slowest = sorted(trips)[len(trips) // 2]  # the median: one slow trip on a busy controller is not the rule
        needed = interval_of(args) + ROUND_TRIPS * slowest
        if args['lease_timeout'] > 0 and args['lease_timeout'] < needed:
            raise AnsibleActionFail(
                'stage_lease: lease_timeout (campaign_stage_lease_timeout, bench_stage_lease_timeout) is %g s; allowed: 0 '
                '(off) or at least %.1f s: a renewal of the leases takes up to %.2f s from this controller to %s, and the '
                'keeper renews every %.1f s (%d round trips of margin). Nothing was changed.'
                % (args['lease_timeout'], needed, slowest, task_vars.get('inventory_hostname', 'the host'),
                   interval_of(args), ROUND_TRIPS))
        result.update(changed=False, round_trip_s=round(slowest, 3), interval_s=round(interval_of(args), 3))
        return result
