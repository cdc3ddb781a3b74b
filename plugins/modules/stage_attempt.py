#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: stage_attempt
short_description: Move the files of a stage's earlier attempt to attempt-<n>/, so a rerun never overwrites them
version_added: 0.4.0
description:
  - Before a stage runs again, the plain files of its results folder (C(status.json), C(result-*.json), ...; not hidden
    files, not folders) move to the first free C(attempt-<n>/) in that folder (mode 0750), made for them.
  - A folder with no such files is left as it is and reported unchanged; so is a folder that does not exist.
  - Refuses to move into an C(attempt-<n>/) that already exists, so no earlier attempt is ever overwritten.
  - Files whose names match a pattern of O(keep) are copied instead (content, mode and times) and stay in place, so the
    rerun can reuse them while the attempt folder stays a whole record of the attempt.
author:
  - specdec.bench developers (!UNKNOWN)
options:
  dir:
    description: The stage's results folder, C(<root>/<campaign>/<stage id>/).
    type: path
    required: true
  mode:
    description: Mode of a new C(attempt-<n>/) folder.
    type: raw
    default: '0750'
  keep:
    description:
      - Shell-style patterns (C(fnmatch)) of file names to copy into C(attempt-<n>/) and leave in place, e.g. the
        per-repeat result and raw files that M(specdec.bench.bench_run) reuses when they are complete and of the same
        requests (it measures again whatever is not).
      - Empty moves every file.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - specdec.bench.attributes
attributes:
  check_mode:
    support: full
    details:
      - Returns the folder the files would move to, and moves nothing.
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Keep the files of an earlier attempt
  specdec.bench.stage_attempt:
    dir: /root/bench_results/qwen36-ct200/tp1-dflash-n16
  register: attempt

- name: Keep an earlier attempt, leaving its per-repeat results in place for reuse
  specdec.bench.stage_attempt:
    dir: /root/bench_results/qwen36-ct200/tp1-dflash-n16
    keep: ['result-*-r*.json', 'raw-*-r*.*', 'telemetry-*-r*.csv']

- name: Say where they went
  ansible.builtin.debug:
    msg: "earlier files in {{ attempt.attempt }}"
  when: attempt.attempt is not none
"""

RETURN = r"""
attempt:
  description: The folder the files moved to (or would move to in check mode); null when there was nothing to keep.
  returned: always
  type: str
  sample: /root/bench_results/qwen36-ct200/tp1-dflash-n16/attempt-2
files:
  description: The names of the files the attempt folder got (moved, or copied for RV(kept)), sorted.
  returned: always
  type: list
  elements: str
  sample: [gpus.json, journal.txt, result-random-t0-c1-r1.json, status.json]
kept:
  description: The names of the files copied and left in place (O(keep)), sorted.
  returned: always
  type: list
  elements: str
  sample: [raw-random-t0-c1-r1.jsonl, result-random-t0-c1-r1.json]
"""

from ansible.module_utils.basic import AnsibleModule

# the engine and the names tests and callers use live in module_utils (specdec.bench.stage_run runs it as a step)
from ansible_collections.specdec.bench.plugins.module_utils._stage.errors import StageError
from ansible_collections.specdec.bench.plugins.module_utils._stage.stage_attempt import (  # noqa: F401  pylint: disable=unused-import
    ARGUMENT_SPEC,
    PREFIX,
    attempt_files,
    kept_files,
    next_attempt,
    rotate,
    stage_attempt,
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        result = stage_attempt(module.params, module.check_mode)
    except StageError as exc:
        module.fail_json(msg=exc.reason, **exc.evidence)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
