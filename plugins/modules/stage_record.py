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
  - Without O(unit) no server ran (a stage recorded V(infeasible), or V(failed) before anything started) and only the
    status is written. The only writer of a stage's C(status.json), so every status has the same format.
author:
  - specdec.bench developers (!UNKNOWN)
options:
  dir:
    description: The stage's results folder; it must exist.
    type: path
    required: true
  unit:
    description:
      - The stage's service (a systemd unit name on both backends).
      - Without it no server ran; nothing is read or stopped, O(base_url) is refused and O(gpu_snapshot) ignored, and
        a status without C(started) gets the time of the record.
    type: str
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
      - The stage's status (C(stage), C(status) V(ok), V(failed) or V(infeasible), C(reason), C(started),
        C(headline), C(timings), C(repeats), C(evidence)); C(finished) is set here (ISO 8601 UTC with milliseconds).
      - An V(infeasible) stage never ran, its C(started) and C(finished) are null.
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
    support: full
    details:
      - Nothing is read, stopped or written; RV(status) is the status as it would be written, less what the server
        would add.
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

- name: Record a stage the plan finds infeasible on this host (nothing ran)
  specdec.bench.stage_record:
    dir: /root/bench_results/qwen36-a100/tp1-dflash-n16
    status: {stage: tp1-dflash-n16, status: infeasible, reason: needs 2 GPUs, headline: []}
"""

RETURN = r"""
status:
  description: The status as written.
  returned: success
  type: dict
  sample: {stage: tp1-dflash-n16, status: ok, reason: null, started: "2026-12-02T14:00:00Z", finished: "2026-12-02T14:03:10.412Z"}
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

from ansible.module_utils.basic import AnsibleModule

# the engine lives in module_utils (specdec.bench.stage_run runs it as a step)
from ansible_collections.specdec.bench.plugins.module_utils._stage.errors import StageError
from ansible_collections.specdec.bench.plugins.module_utils._stage.stage_record import ARGUMENT_SPEC, stage_record


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        result = stage_record(module, module.params)
    except StageError as exc:
        module.fail_json(msg=exc.reason, **exc.evidence)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
