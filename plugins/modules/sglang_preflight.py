#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: sglang_preflight
short_description: Parse every stage's SGLang command line with the host's own SGLang, before anything changes
version_added: 0.3.0
description:
  - In one process in the servers' interpreter, imports SGLang's own server parser (C(ServerArgs.add_cli_args) on an
    C(argparse.ArgumentParser), as C(sglang.srt.server_args.prepare_server_args) builds it) and parses each stage's
    exact argv. It starts nothing, loads no model and touches no GPU.
  - Also checks, once per host, that the interpreter exists and imports SGLang, and that each stage's model folder and
    draft folder exist and hold C(config.json).
  - Fails, naming every refused stage with its flag, the SGLang version and the interpreter, when any check fails.
  - Read-only; runs in check mode too.
notes:
  - A stage whose draft is a checkpoint not on the host yet (C(draft_checkpoint.present) false in the plan) is parsed,
    but its draft folder is not checked; the campaign copies and verifies the checkpoint later, under the lock, before
    that stage starts. RV(drafts_not_checked) names those folders.
author:
  - specdec.bench developers (!UNKNOWN)
options:
  python:
    description: The servers' interpreter (the first word of the units' launcher).
    type: path
    required: true
  stages:
    description:
      - The stages to check, as P(specdec.bench.campaign_plan#filter) makes them; C(id), C(argv), C(model_path),
        C(draft_path) and C(draft_checkpoint.present) are read.
    type: list
    elements: dict
    required: true
  enabled:
    description: V(false) checks nothing and says so in a warning.
    type: bool
    default: true
  timeout:
    description: Seconds the interpreter may take (importing SGLang loads torch).
    type: int
    default: 300
extends_documentation_fragment:
  - specdec.bench.attributes
attributes:
  check_mode:
    support: full
    details:
      - It only reads; check mode runs the same checks.
  diff_mode:
    support: none
seealso:
  - module: specdec.bench.campaign_status
"""

EXAMPLES = r"""
- name: Parse every stage's flags with the host's SGLang
  specdec.bench.sglang_preflight:
    python: /opt/sglang/.venv/bin/python
    stages: "{{ plan_stages | selectattr('feasible') | list }}"
"""

RETURN = r"""
sglang_version:
  description: C(sglang.__version__) in O(python); null when it does not import.
  returned: always
  type: str
  sample: 0.5.23
python:
  description: The interpreter used.
  returned: always
  type: str
  sample: /opt/sglang/.venv/bin/python
stages:
  description: Per stage id, whether SGLang's parser accepted its argv, and when not the flag and the reason.
  returned: always
  type: dict
  sample: {"tp1-dflash-n16": {"ok": false, "flag": "--mamba-scheduler-strategy", "reason": "unrecognized arguments"}}
problems:
  description: One line per refusal or missing folder, as in the failure message.
  returned: always
  type: list
  elements: str
seconds:
  description: Wall time of the parse, in seconds.
  returned: always
  type: float
drafts_not_checked:
  description: The draft checkpoint folders not on the host yet (copied later), each with the stages that use it; not checked.
  returned: always
  type: list
  elements: str
  sample: ["/var/lib/specdec/checkpoints/dflash-demo/checkpoint-800 (stage tp1-dflash-n16-s800)"]
"""

import json
import os
import subprocess
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.specdec.bench.plugins.module_utils._sglang_preflight import (
    PARSE_SCRIPT,
    parse_output,
    refusal,
    refusal_line,
)


def _stages_text(ids):
    return 'stage%s %s' % ('s' if len(ids) > 1 else '', ', '.join(ids))


def _copied_later(stage):
    """A draft checkpoint the plan found not on this host yet: the campaign copies it under the lock, before the stage."""
    checkpoint = stage.get('draft_checkpoint')
    return isinstance(checkpoint, dict) and checkpoint.get('present') is False


def drafts_copied_later(stages):
    """'<draft folder> (stages a, b)' for each draft checkpoint folder not on the host yet, which is not checked."""
    uses = {}
    for stage in stages:
        if stage.get('draft_path') and _copied_later(stage):
            uses.setdefault(stage['draft_path'], []).append(str(stage.get('id')))
    return ['%s (%s)' % (path, _stages_text(ids)) for path, ids in sorted(uses.items())]


def folder_problems(stages):
    """'the model folder X (stages a, b) ...' for each model or draft folder that is missing or has no config.json; the
    draft folder of a checkpoint copied later is not checked."""
    uses = {}
    for stage in stages:
        for key, what in (('model_path', 'model'), ('draft_path', 'draft')):
            if stage.get(key) and not (what == 'draft' and _copied_later(stage)):
                uses.setdefault((stage[key], what), []).append(str(stage.get('id')))
    problems = []
    for (path, what), ids in sorted(uses.items()):
        if not os.path.isdir(path):
            problem = 'does not exist or is not a folder'
        elif not os.path.isfile(os.path.join(path, 'config.json')):
            problem = 'has no config.json'
        else:
            continue
        problems.append('the %s folder %s (%s) %s' % (what, path, _stages_text(ids), problem))
    return problems


def run_parser(python, stages, timeout):
    request = json.dumps({'stages': [[str(stage.get('id')), [str(word) for word in stage.get('argv') or []]] for stage in stages]})
    proc = subprocess.run([python, '-c', PARSE_SCRIPT], input=request, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=timeout, cwd='/', check=False)
    return proc.returncode, proc.stdout, proc.stderr


def main():
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type='path', required=True),
            stages=dict(type='list', elements='dict', required=True),
            enabled=dict(type='bool', default=True),
            timeout=dict(type='int', default=300),
        ),
        supports_check_mode=True,
    )
    python, stages = module.params['python'], module.params['stages']
    result = dict(changed=False, python=python, sglang_version=None, stages={}, problems=[], seconds=0.0, drafts_not_checked=[])
    if not module.params['enabled']:
        module.warn('campaign_preflight is false: %d stage command line(s) were not parsed with the host\'s SGLang and the '
                    'model and draft folders were not checked; a refused flag is found only when its server exits' % len(stages))
        module.exit_json(**result)
    for position, stage in enumerate(stages):
        if not isinstance(stage.get('argv'), list) or not stage.get('id'):
            module.fail_json(msg='stages[%d] has no id or argv; allowed: stages as specdec.bench.campaign_plan makes them' % position, **result)
    problems = folder_problems(stages)
    result['drafts_not_checked'] = drafts_copied_later(stages)
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        problems.insert(0, 'the servers\' interpreter %s does not exist or is not executable (specdec_sglang_launcher)' % python)
    elif stages:
        started = time.monotonic()
        try:
            rc, out, err = run_parser(python, stages, module.params['timeout'])
        except subprocess.TimeoutExpired:
            rc, out, err = None, '', 'timed out after %d s' % module.params['timeout']
        result['seconds'] = round(time.monotonic() - started, 3)
        try:
            data = parse_output(out)
        except ValueError as exc:
            lines = (err or '').strip().splitlines()
            problems.insert(0, '%s did not run the preflight (exit status %s): %s' % (python, rc, lines[-1] if lines else exc))
            data = None
        if data is not None:
            result['sglang_version'] = data.get('sglang_version')
            if data.get('error'):
                problems.insert(0, '%s cannot import SGLang\'s server parser (sglang.srt.server_args): %s' % (python, data['error']))
            for stage in stages:
                said = data['stages'].get(str(stage['id']))
                if said is None:
                    continue
                if said.get('ok'):
                    result['stages'][stage['id']] = {'ok': True}
                    continue
                flag, reason = refusal(said.get('stderr'))
                result['stages'][stage['id']] = {'ok': False, 'flag': flag, 'reason': reason, 'status': said.get('status')}
                problems.append(refusal_line(stage['id'], result['sglang_version'], python, flag, reason))
    result['problems'] = problems
    if problems:
        module.fail_json(msg='preflight: %s' % '; '.join(problems), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
