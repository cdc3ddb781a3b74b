#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: campaign_status
short_description: Read the status of every stage of a campaign on a host, in one round trip
version_added: 0.1.0
description:
  - Reads C(<root>/<campaign>/<stage>/<status_file>) of each stage and returns what it says, so a campaign can tell
    the finished stages from the ones still to run without one task per stage.
  - A stage with no status file has status V(missing); a status file that is not valid JSON has status V(unreadable)
    (its stage is run again, like a failed one).
  - Read-only.
author:
  - specdec.bench developers (!UNKNOWN)
options:
  root:
    description: The results root (the C(results_dir) role's C(results_dir_root)).
    type: path
    required: true
  campaign:
    description: The campaign id.
    type: str
    required: true
  stages:
    description: The stage ids to read; every folder of the campaign when empty.
    type: list
    elements: str
    default: []
  status_file:
    description: The status file's name in a stage folder; the collection's results layout names it.
    type: str
    default: status.json
  plan_file:
    description: The plan's file in the campaign folder, returned as RV(plan); the collection's results layout names it.
    type: str
    default: campaign.json
extends_documentation_fragment:
  - specdec.bench.attributes
attributes:
  check_mode:
    support: full
    details:
      - This action does not modify state.
  diff_mode:
    support: none
notes:
  - Requires Python 3.9 or later on the host; standard library only.
"""

EXAMPLES = r"""
- name: Read the stages' status
  specdec.bench.campaign_status:
    root: /root/bench_results
    campaign: qwen36-ct200
    stages: "{{ plan_stages | map(attribute='id') }}"
  register: campaign_status
"""

RETURN = r"""
stages:
  description: Stage id to its status file's content; V(status) is V(missing) or V(unreadable) when there is none.
  returned: always
  type: dict
  sample: {tp1-autoregressive: {status: ok, reason: null}, tp1-dflash-n16: {status: missing}}
plan:
  description: The stages of the plan the campaign's first run recorded; null when there is none (or it is unreadable).
  returned: always
  type: list
  elements: dict
counts:
  description: How many stages have each status.
  returned: always
  type: dict
  sample: {ok: 11, failed: 1}
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.specdec.bench.plugins.module_utils._common import ID_PATTERN, ID_RE, RESULTS_LAYOUT


def read_status(path):
    try:
        with open(path, encoding='utf-8') as handle:
            status = json.load(handle)
    except FileNotFoundError:
        return {'status': 'missing'}
    except (OSError, ValueError) as exc:
        return {'status': 'unreadable', 'reason': str(exc)}
    if not isinstance(status, dict) or not isinstance(status.get('status'), str):
        return {'status': 'unreadable', 'reason': 'not a status object'}
    return status


def read_plan(path):
    try:
        with open(path, encoding='utf-8') as handle:
            plan = json.load(handle)
    except (OSError, ValueError):
        return None
    stages = plan.get('stages') if isinstance(plan, dict) else None
    return stages if isinstance(stages, list) else None


def campaign_status(root, campaign, stages, status_file):
    folder = os.path.join(root, campaign)
    if not stages:
        try:
            stages = sorted(name for name in os.listdir(folder) if os.path.isdir(os.path.join(folder, name)))
        except FileNotFoundError:
            stages = []
    found = {stage: read_status(os.path.join(folder, stage, status_file)) for stage in stages}
    counts = {}
    for status in found.values():
        counts[status['status']] = counts.get(status['status'], 0) + 1
    return found, counts


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type='path', required=True),
            campaign=dict(type='str', required=True),
            stages=dict(type='list', elements='str', default=[]),
            status_file=dict(type='str', default=RESULTS_LAYOUT['status']),
            plan_file=dict(type='str', default=RESULTS_LAYOUT['campaign']),
        ),
        supports_check_mode=True,
    )
    params = module.params
    for name in [params['campaign']] + params['stages']:
        if not ID_RE.match(name):
            module.fail_json(msg='%r is not a campaign or stage id; allowed: %s' % (name, ID_PATTERN))
    for key in ('status_file', 'plan_file'):
        if '/' in params[key] or params[key] in ('', '.', '..'):
            module.fail_json(msg='%s must be a file name, got %r' % (key, params[key]))
    stages, counts = campaign_status(params['root'], params['campaign'], params['stages'], params['status_file'])
    module.exit_json(changed=False, stages=stages, counts=counts,
                     plan=read_plan(os.path.join(params['root'], params['campaign'], params['plan_file'])))


if __name__ == '__main__':
    main()
