# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""bench_stage run by ansible-playbook against localhost for the stages it records without running them (infeasible,
or a feasible one the caller says cannot run): status.json is written by specdec.bench.stage_record, the writer of a
stage that ran, so it has the same format (started and finished in ISO 8601 UTC with milliseconds)."""

from __future__ import annotations

import json
import os
import re
import stat

import yaml

from testhelpers import local_play, run_playbook  # pylint: disable=import-error

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CAMPAIGN = 'record-check'
STAMP = re.compile(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\Z')


def stage(stage_id, feasible):
    made = {'id': stage_id, 'campaign': CAMPAIGN, 'feasible': feasible, 'unit': 'sglang-%s.service' % stage_id,
            'port': 31000, 'concurrency': [1], 'workload': {'input_len': 16, 'output_len': 16, 'num_prompts': 1},
            'sglang_build': {'profile': 'sglang-0.5.23'}}
    if not feasible:
        made['reason'] = 'too few GPUs: TP8 needs 8, the host has 6'
    return made


def run_play(tmp_path, cases):
    """Each case {stage, fail_reason} through the role; what bench_stage_status it left for each stage."""
    out = tmp_path / 'seen.json'
    (tmp_path / 'case.yml').write_text(yaml.safe_dump([
        {'name': 'Run the stage', 'ansible.builtin.include_role': {'name': 'specdec.bench.bench_stage'},
         'vars': {'bench_stage_stage': '{{ case.stage }}', 'bench_stage_results_root': str(tmp_path / 'results'),
                  'bench_stage_fail_reason': '{{ case.fail_reason }}'}},
        {'name': 'Keep what it left', 'ansible.builtin.set_fact': {
            'seen': '{{ seen | default({}) | combine({case.stage.id: bench_stage_status}) }}'}},
    ]))
    tasks = [
        {'name': 'Run each stage', 'ansible.builtin.include_tasks': str(tmp_path / 'case.yml'),
         'loop': cases, 'loop_control': {'loop_var': 'case', 'label': '{{ case.stage.id }}'}},
        {'name': 'Write what each stage left',
         'ansible.builtin.copy': {'content': '{{ seen | to_json }}', 'dest': str(out), 'mode': '0644'}},
    ]
    playbook = tmp_path / 'stages.yml'
    playbook.write_text(yaml.safe_dump(local_play(tasks)))
    run_playbook(playbook, timeout=300)
    return json.loads(out.read_text())


def test_stages_recorded_without_running_are_written_by_stage_record(tmp_path):
    folder = tmp_path / 'results' / CAMPAIGN
    for name in ('infeasible', 'cannot-run'):
        (folder / name).mkdir(parents=True)
    # an earlier attempt of the stage that cannot run: its files move to attempt-1/ first, as before any run
    (folder / 'cannot-run' / 'status.json').write_text('{"status": "failed", "reason": "earlier"}\n')
    seen = run_play(tmp_path, [{'stage': stage('infeasible', False), 'fail_reason': None},
                               {'stage': stage('cannot-run', True), 'fail_reason': 'the draft checkpoint could not be copied'}])

    infeasible = json.loads((folder / 'infeasible' / 'status.json').read_text())
    assert infeasible == seen['infeasible'] == {
        'stage': 'infeasible', 'status': 'infeasible', 'reason': 'too few GPUs: TP8 needs 8, the host has 6',
        'sglang_build': {'profile': 'sglang-0.5.23'}, 'started': None, 'finished': None, 'headline': []}
    assert os.listdir(str(folder / 'infeasible')) == ['status.json']

    failed = json.loads((folder / 'cannot-run' / 'status.json').read_text())
    assert failed == seen['cannot-run']
    assert failed['status'] == 'failed' and failed['reason'] == 'the draft checkpoint could not be copied'
    assert STAMP.match(failed['started']) and failed['started'] == failed['finished']
    assert failed['evidence'] == {'step': None, 'journal': []} and failed['headline'] == []
    assert json.loads((folder / 'cannot-run' / 'attempt-1' / 'status.json').read_text())['reason'] == 'earlier'
    for name in ('infeasible', 'cannot-run'):
        path = folder / name / 'status.json'
        assert stat.S_IMODE(os.stat(str(path)).st_mode) == 0o640
        assert path.read_text() == json.dumps(json.loads(path.read_text()), indent=4, sort_keys=True) + '\n'
