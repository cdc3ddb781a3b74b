# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action for specdec.bench.probe: run the module on the host, then summarize it and save the summary on the controller.

Doing the summary here, not in later tasks, keeps the whole probe at one task and one round trip per host.
"""

from __future__ import annotations

import json
import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.specdec.bench.plugins.module_utils._common import atomic_write
from ansible_collections.specdec.bench.plugins.plugin_utils.probe_summary import probe_summary, probe_summary_lines


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        module_args = dict(self._task.args)
        summary_dir = module_args.get('summary_dir')
        result.update(self._execute_module(module_name='specdec.bench.probe', module_args=module_args,
                                           task_vars=task_vars))
        if result.get('failed') or result.get('skipped'):
            return result
        host = task_vars.get('inventory_hostname', 'localhost')
        summary = probe_summary(result.get('ansible_facts', {}), host)
        result.setdefault('ansible_facts', {})['specdec_probe_summary'] = summary
        result['summary_lines'] = probe_summary_lines(summary)
        if summary_dir:
            # The summary is this run's report on the controller, written in check mode too; the host is not changed.
            path = os.path.join(os.path.expanduser(summary_dir), '%s.json' % host)
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                atomic_write(path, json.dumps(summary, indent=2, sort_keys=True) + '\n', unchanged_ok=True)
            except OSError as exc:
                raise AnsibleActionFail('cannot save the probe summary to %s: %s' % (path, exc)) from exc
            result['summary_path'] = path
        return result
