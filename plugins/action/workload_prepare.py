# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action for specdec.bench.workload_prepare: a host's prompt sets fetched, pinned, normalized and templated with the
target's chat template, on the controller. Nothing runs on the host; the logic is in plugin_utils/workload.py."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.specdec.bench.plugins.plugin_utils.workload import WorkloadError, prepare_workload

ARGS = ('datasets', 'chat_template', 'chat_template_kwargs', 'cache', 'base_dir', 'url_base')


def _optional_str(args, name):
    value = args.get(name)
    if value is not None and not (isinstance(value, str) and value):
        raise AnsibleActionFail('%s is %r; allowed: a path, or null' % (name, value))
    return value


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGS)
    # It writes only the controller's dataset cache, so check mode runs it as it is.
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args
        template = args.get('chat_template') or {}
        files = template.get('files') if isinstance(template, dict) else None
        if not isinstance(template, dict) or not isinstance(files or {}, dict) or not all(
                isinstance(name, str) and isinstance(text, str) for name, text in (files or {}).items()):
            raise AnsibleActionFail('chat_template is %r; allowed: {path: the model folder, files: {name: text}}'
                                    % (template,))
        kwargs = args.get('chat_template_kwargs') or {}
        if not isinstance(kwargs, dict):
            raise AnsibleActionFail('chat_template_kwargs is %r; allowed: a mapping' % (kwargs,))
        try:
            prepared = prepare_workload(
                args.get('datasets'), files, kwargs, cache=_optional_str(args, 'cache'),
                base_dir=_optional_str(args, 'base_dir'), url_base=_optional_str(args, 'url_base'),
                model_path=template.get('path'))
        except WorkloadError as exc:
            raise AnsibleActionFail(str(exc)) from exc
        except OSError as exc:
            raise AnsibleActionFail('cannot write the dataset cache: %s' % exc) from exc
        result.update(changed=False, prepared=prepared,
                      notes=[note for entry in prepared for note in entry['notes']])
        return result
