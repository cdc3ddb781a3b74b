# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""bench_stage run by ansible-playbook against localhost in check mode, each stage over a status.json an earlier run
left: it skips exactly the stages the campaign would skip (specdec.bench.campaign_done), so a stage recorded infeasible
while the plan still finds it so is skipped, not recorded again on every rerun, and one that fits now runs."""

from __future__ import annotations

import json
import os

import yaml

from ansible_collections.specdec.bench.plugins.filter.campaign import campaign_done
from testhelpers import local_play, run_playbook  # pylint: disable=import-error

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CAMPAIGN = 'skip-check'
OK = {'status': 'ok', 'headline': []}
INFEASIBLE = {'status': 'infeasible', 'reason': 'too few GPUs: TP8 needs 8, the host has 6', 'headline': []}
# (stage id, feasible now, the plan's repeats, what an earlier run recorded (None: nothing), force)
CASES = [
    ('ok-done', True, None, dict(OK, repeats=1), False),
    ('ok-before-repeats', True, None, OK, False),
    ('ok-fewer-repeats', True, 3, dict(OK, repeats=2), False),
    ('ok-forced', True, None, dict(OK, repeats=1), True),
    ('failed', True, None, {'status': 'failed', 'reason': 'no'}, False),
    ('never-ran', True, None, None, False),
    ('infeasible-still', False, None, INFEASIBLE, False),
    ('infeasible-fits-now', True, None, INFEASIBLE, False),
    ('infeasible-forced', False, None, INFEASIBLE, True),
    ('infeasible-first', False, None, None, False),
    ('ok-infeasible-now', False, None, dict(OK, repeats=1), False),
]


def stage(stage_id, feasible, repeats):
    made = {'id': stage_id, 'campaign': CAMPAIGN, 'feasible': feasible, 'unit': 'sglang-%s.service' % stage_id,
            'port': 31000, 'concurrency': [1], 'workload': {'input_len': 16, 'output_len': 16, 'num_prompts': 1}}
    if not feasible:
        made['reason'] = INFEASIBLE['reason']
    if repeats is not None:
        made['repeats'] = repeats
    return made


def run_stages(tmp_path):
    """What bench_stage leaves in bench_stage_status for each case ('would run' where it sets none for the stage)."""
    root = tmp_path / 'results'
    cases = []
    for stage_id, feasible, repeats, recorded, force in CASES:
        if recorded is not None:
            folder = root / CAMPAIGN / stage_id
            folder.mkdir(parents=True)
            (folder / 'status.json').write_text(json.dumps(dict(recorded, stage=stage_id)))
        cases.append({'stage': stage(stage_id, feasible, repeats), 'force': force})
    out = tmp_path / 'seen.json'
    # one include per case, then what it left for that stage: a task file the play loops over
    (tmp_path / 'case.yml').write_text(yaml.safe_dump([
        {'name': 'Run the stage', 'ansible.builtin.include_role': {'name': 'specdec.bench.bench_stage'},
         'vars': {'bench_stage_stage': '{{ case.stage }}', 'bench_stage_results_root': str(root),
                  'bench_stage_force': '{{ case.force }}'}},
        {'name': 'Keep what it left', 'ansible.builtin.set_fact': {'seen': (
            "{{ seen | default({}) | combine({case.stage.id: bench_stage_status.status"
            " if bench_stage_status.stage | default('') == case.stage.id else 'would run'}) }}")}},
    ]))
    tasks = [
        {'name': 'Run each stage', 'ansible.builtin.include_tasks': str(tmp_path / 'case.yml'),
         'loop': cases, 'loop_control': {'loop_var': 'case', 'label': '{{ case.stage.id }}'}},
        {'name': 'Write what each stage left', 'check_mode': False,
         'ansible.builtin.copy': {'content': '{{ seen | to_json }}', 'dest': str(out), 'mode': '0644'}},
    ]
    playbook = tmp_path / 'stages.yml'
    playbook.write_text(yaml.safe_dump(local_play(tasks)))
    before = dict((path, path.read_text()) for path in root.rglob('status.json'))
    run_playbook(playbook, '--check', timeout=300)
    assert dict((path, path.read_text()) for path in root.rglob('status.json')) == before
    return json.loads(out.read_text())


def test_bench_stage_skips_what_the_campaign_skips(tmp_path):
    seen = run_stages(tmp_path)
    for stage_id, feasible, repeats, recorded, force in CASES:
        status = {'stages': {stage_id: recorded}} if recorded is not None else {}
        skipped = campaign_done([stage(stage_id, feasible, repeats)], status, force) == [stage_id]
        assert (seen[stage_id] == 'skipped') == skipped, (stage_id, seen[stage_id])
    # the cases themselves, so that neither side drifts unnoticed
    assert seen == {
        'ok-done': 'skipped', 'ok-before-repeats': 'skipped', 'ok-fewer-repeats': 'would run', 'ok-forced': 'would run',
        'failed': 'would run', 'never-ran': 'would run',
        # recorded infeasible and still infeasible: finished, as the campaign decides (not recorded again)
        'infeasible-still': 'skipped',
        'infeasible-fits-now': 'would run', 'infeasible-forced': 'infeasible', 'infeasible-first': 'infeasible',
        'ok-infeasible-now': 'skipped',
    }
