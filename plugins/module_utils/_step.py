# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A module's logic run as one step of another module (specdec.bench.stage_run runs a whole stage in one call).

The logic of service, sglang_ready, stage_attempt, bench_run and stage_record lives in module_utils as
`run(module)` with its ARGUMENT_SPEC; their module files call it with a real AnsibleModule. A step gets a StepModule
instead: the same params, check mode, run_command, get_bin_path, warn and tmpdir (delegated to the real module), but
fail_json and exit_json raise StepExit with the result, so the caller goes on after the step.

Warnings: AnsibleModule.warn records a warning in the process-wide list of ansible.module_utils.common.warnings, which
the real module's exit_json or fail_json returns. A step's warn goes to the real module, so the warnings of every step
reach the final result, and the step's own result lists its warnings (texts) too.
"""

from __future__ import annotations

import copy

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.errors import UnsupportedError


class StepExit(Exception):
    """The end of a step: its result (as exit_json or fail_json would return it) and whether it failed."""

    def __init__(self, result, failed):
        super().__init__(result.get('msg') or ('failed' if failed else 'done'))
        self.result = result
        self.failed = failed


class StepModule:
    """An AnsibleModule stand-in for one step: params of its own; fail_json and exit_json raise StepExit."""

    def __init__(self, module, params):
        self._module = module
        self.params = params
        self.warnings = []

    @property
    def check_mode(self):
        return self._module.check_mode

    @property
    def tmpdir(self):
        return self._module.tmpdir

    @property
    def run_command_environ_update(self):
        return self._module.run_command_environ_update

    def run_command(self, *args, **kwargs):
        return self._module.run_command(*args, **kwargs)

    def get_bin_path(self, *args, **kwargs):
        return self._module.get_bin_path(*args, **kwargs)

    def warn(self, warning, **kwargs):
        self.warnings.append(warning)
        self._module.warn(warning, **kwargs)

    def fail_json(self, msg, **kwargs):
        kwargs.pop('exception', None)
        raise StepExit(dict(kwargs, msg=str(msg), failed=True), True)

    def exit_json(self, **kwargs):
        raise StepExit(dict(kwargs), False)

    def __getattr__(self, name):
        # anything else a step's logic may use (boolean, jsonify, ...) is the real module's
        return getattr(self._module, name)


def validate(argument_spec, params):
    """params checked against argument_spec, defaults filled in; ValueError naming every invalid option."""
    validator = ArgumentSpecValidator(copy.deepcopy(argument_spec))
    outcome = validator.validate(copy.deepcopy(params))
    if outcome.error_messages:
        raise ValueError('invalid options: %s' % '; '.join(
            ('unsupported parameter %s' if isinstance(error, UnsupportedError) else '%s') % error for error in outcome.errors))
    return outcome.validated_parameters


def run_step(module, argument_spec, params, run):
    """Run run(StepModule) with params validated by argument_spec; (result, failed).

    Raises ValueError on invalid params (nothing is run); any other exception of the step's logic propagates."""
    step = StepModule(module, validate(argument_spec, params))
    try:
        run(step)
    except StepExit as end:
        result = end.result
        if step.warnings:
            result.setdefault('warnings', list(step.warnings))
        return result, end.failed
    raise RuntimeError('the step %s ended without a result' % getattr(run, '__module__', run))
