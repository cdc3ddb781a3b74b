# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""campaign_status: every stage's status in one read, so a rerun knows what is left without a task per stage."""

from __future__ import annotations

import json

import pytest

from ansible_collections.specdec.bench.plugins.modules import campaign_status


@pytest.fixture(name="root")
def results_root(tmp_path):
    campaign = tmp_path / 'qwen36-ct200'
    for stage, content in {'tp1-autoregressive': {'status': 'ok', 'headline': []},
                           'tp1-dflash-n16': {'status': 'failed', 'reason': 'crashed'},
                           'tp8-ddtree-b64-k4': None,
                           'tp4-autoregressive': 'not json {',
                           'tp2-autoregressive': ['a list']}.items():
        (campaign / stage).mkdir(parents=True)
        if content is not None:
            text = content if isinstance(content, str) else json.dumps(content)
            (campaign / stage / 'status.json').write_text(text)
    return tmp_path


def test_each_stage_gets_its_status_and_the_counts_add_up(run_module, root):
    result = run_module(campaign_status, dict(root=str(root), campaign='qwen36-ct200',
                                              stages=['tp1-autoregressive', 'tp1-dflash-n16', 'tp8-ddtree-b64-k4',
                                                      'tp4-autoregressive', 'tp2-autoregressive', 'tp8-autoregressive']))
    assert result['exit_code'] == 0 and not result['changed']
    stages = result['stages']
    assert stages['tp1-autoregressive'] == {'status': 'ok', 'headline': []}
    assert stages['tp1-dflash-n16']['reason'] == 'crashed'
    assert stages['tp8-ddtree-b64-k4'] == {'status': 'missing'} and stages['tp8-autoregressive'] == {'status': 'missing'}
    assert stages['tp4-autoregressive']['status'] == 'unreadable' and stages['tp2-autoregressive']['status'] == 'unreadable'
    assert result['counts'] == {'ok': 1, 'failed': 1, 'missing': 2, 'unreadable': 2}


def test_without_stages_every_folder_is_read(run_module, root):
    result = run_module(campaign_status, dict(root=str(root), campaign='qwen36-ct200'))
    assert sorted(result['stages']) == ['tp1-autoregressive', 'tp1-dflash-n16', 'tp2-autoregressive',
                                        'tp4-autoregressive', 'tp8-ddtree-b64-k4']


def test_a_campaign_that_never_ran_has_no_stages_and_no_plan(run_module, tmp_path):
    result = run_module(campaign_status, dict(root=str(tmp_path), campaign='new'))
    assert result['exit_code'] == 0 and result['stages'] == {} and result['counts'] == {} and result['plan'] is None


@pytest.mark.parametrize(('text', 'plan'), [
    (json.dumps({'campaign': 'qwen36-ct200', 'stages': [{'id': 'tp1-autoregressive', 'workload': {'num_prompts': 8}}]}),
     [{'id': 'tp1-autoregressive', 'workload': {'num_prompts': 8}}]),
    ('{"stages": "not a list"}', None),
    ('not json', None),
])
def test_the_first_runs_plan_is_returned(run_module, root, text, plan):
    (root / 'qwen36-ct200' / 'campaign.json').write_text(text)
    result = run_module(campaign_status, dict(root=str(root), campaign='qwen36-ct200', stages=['tp1-autoregressive']))
    assert result['exit_code'] == 0 and result['plan'] == plan


@pytest.mark.parametrize(('args', 'text'), [
    (dict(campaign='../etc'), "'../etc' is not a campaign or stage id"),
    (dict(campaign='c', stages=['a/b']), "'a/b' is not a campaign or stage id; allowed: [a-z0-9][a-z0-9._-]*"),
    (dict(campaign='c', status_file='../x'), 'status_file must be a file name'),
    (dict(campaign='c', plan_file='/etc/passwd'), 'plan_file must be a file name'),
])
def test_ids_that_are_not_ids_are_refused(run_module, tmp_path, args, text):
    result = run_module(campaign_status, dict(root=str(tmp_path), **args))
    assert result['exit_code'] == 1 and text in result['msg']
