# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""What one stage_run call of a stage gets (its harness runs, status base, files), and how the campaign groups waves."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.specdec.bench.plugins.filter.stage import campaign_waves, stage_run_args, stage_wave_line

SETTINGS = {'results_root': '/root/bench_results', 'campaign': 'c1', 'keep': ['result-*.json']}
STAGE = {'id': 'tp1-dflash-n16', 'unit': 'specdec-c1-tp1-dflash-n16.service', 'port': 31001, 'gpus': ['GPU-1'],
         'gpu_indices': [1], 'concurrency': [1, 4], 'repeats': 3, 'sglang_build': {'name': 'b'}, 'wave': 2,
         'interference_of': None, 'feasible': True,
         'workload': {'input_len': 32, 'output_len': 64, 'num_prompts': 8, 'temperature': [0, 0.6], 'seed': 7}}
GSM8K = {'name': 'gsm8k', 'kind': 'builtin', 'count': 5, 'max_new_tokens': 128, 'prompts_sha256': 'ab' * 32,
         'prompts_path': '/home/me/.cache/x.jsonl', 'notes': ['fetched'], 'turns': 'all'}


def test_random_prompts_run_every_temperature_and_concurrency_in_order():
    args = stage_run_args(STAGE, SETTINGS)
    runs = args['runs']
    assert [(run['dataset']['name'], run['temperature'], run['concurrency']) for run in runs] == [
        ('random', 0.0, 1), ('random', 0.0, 4), ('random', 0.6, 1), ('random', 0.6, 4)]
    first = runs[0]
    assert (first['num_prompts'], first['input_len'], first['output_len']) == (8, 32, 64)
    assert first['ignore_eos'] is True and 'prompts_file' not in first and 'max_new_tokens' not in first
    assert first['base_url'] == 'http://127.0.0.1:31001' and first['stage'] == 'tp1-dflash-n16'
    assert first['output_dir'] == '/root/bench_results/c1/tp1-dflash-n16' == args['dir']
    assert first['repeats'] == 3 and first['gpus'] == ['GPU-1'] and first['seed'] == 7 and first['request_rate'] == 'inf'
    assert all(key not in first for key in ('request_timeout', 'request_deadline', 'run_deadline'))


def test_a_prompt_set_sends_its_host_file_and_stops_at_eos():
    run = stage_run_args(STAGE, dict(SETTINGS, datasets=[GSM8K], request_timeout=30.0))['runs'][0]
    assert run['prompts_file'] == '/var/lib/specdec/datasets/%s.jsonl' % ('ab' * 32)
    assert (run['num_prompts'], run['max_new_tokens'], run['ignore_eos']) == (5, 128, False)
    assert run['request_timeout'] == 30.0
    # controller paths and notes stay on the controller
    assert 'prompts_path' not in run['dataset'] and 'notes' not in run['dataset'] and run['dataset']['turns'] == 'all'


def test_a_workload_may_ask_to_ignore_eos_and_an_entry_sizes_its_random_prompts():
    stage = dict(STAGE, workload=dict(STAGE['workload'], stop_at_eos=False))
    sized = {'name': 'random', 'kind': 'random', 'num_prompts': 2, 'input_len': None, 'output_len': 16}
    runs = stage_run_args(stage, dict(SETTINGS, datasets=[GSM8K, sized]))['runs']
    assert runs[0]['ignore_eos'] is True
    assert (runs[-1]['num_prompts'], runs[-1]['input_len'], runs[-1]['output_len']) == (2, 32, 16)


def test_the_status_base_names_the_stages_beside_it():
    args = stage_run_args(STAGE, dict(SETTINGS, datasets=[GSM8K]), ['tp1-autoregressive', 'tp1-dflash-n16', 'tp1-ddtree-b32-k4'])
    status = args['status']
    assert status['ran_beside'] == ['tp1-autoregressive', 'tp1-ddtree-b32-k4']
    assert status['wave'] == 2 and status['repeats'] == 3 and status['stage'] == 'tp1-dflash-n16'
    assert status['datasets'] == [dict((k, v) for k, v in GSM8K.items() if k not in ('prompts_path', 'notes'))]
    assert stage_run_args(STAGE, SETTINGS)['status']['ran_beside'] == []
    # control files stay out of the results folder (an attempt's rotation and the results never see them)
    assert args['progress_file'] == '/var/lib/specdec/stages/c1/tp1-dflash-n16.progress.json'
    assert args['lease_file'] == '/var/lib/specdec/stages/c1/tp1-dflash-n16.lease'
    assert args['keep'] == ['result-*.json']


@pytest.mark.parametrize('settings, field', [
    (dict(SETTINGS, colour='red'), 'settings.colour'),
    ({'results_root': '/r'}, 'settings.campaign'),
    (dict(SETTINGS, lease_timeout=8, poll=5), r'settings.lease_timeout \(bench_stage_lease_timeout\) is 8.0; allowed: 0 \(off\) or more than twice'),
    (dict(SETTINGS, poll=0), r'settings.poll \(bench_stage_poll\) is 0.0'),
])
def test_bad_settings_are_refused_naming_the_field(settings, field):
    with pytest.raises(AnsibleFilterError, match=field):
        stage_run_args(STAGE, settings)


def test_a_lease_of_more_than_two_polls_or_none_is_taken():
    assert stage_run_args(STAGE, dict(SETTINGS, lease_timeout=10.5, poll=5))['lease_timeout'] == 10.5
    assert stage_run_args(STAGE, dict(SETTINGS, lease_timeout=0, poll=60))['lease_timeout'] == 0.0


def test_a_stage_without_a_port_is_refused():
    with pytest.raises(AnsibleFilterError, match='one stage of specdec.bench.campaign_plan'):
        stage_run_args({'id': 'x'}, SETTINGS)


def _stage(stage_id, wave, feasible=True, path=None):
    return {'id': stage_id, 'wave': wave, 'feasible': feasible, 'gpu_indices': [1],
            'draft_checkpoint': {'path': path} if path else None}


def test_waves_group_consecutive_stages_of_one_wave_and_leave_out_what_does_not_run():
    stages = [_stage('a', 1), _stage('b', 1), _stage('x', None, feasible=False), _stage('c', 2),
              _stage('d', 2, path='/ckpt/600'), _stage('e', None), _stage('f', None)]
    waves = campaign_waves(stages, {'/ckpt/600': 'corrupted'})
    assert [[stage['id'] for stage in wave] for wave in waves] == [['a', 'b'], ['c'], ['e'], ['f']]
    assert campaign_waves([]) == []
    with pytest.raises(AnsibleFilterError, match='campaign_waves'):
        campaign_waves([{'wave': 1}])


def test_the_wave_line_names_each_stage_and_its_gpus_or_why_it_runs_alone():
    two = [dict(_stage('a', 1), gpu_indices=[1]), dict(_stage('b', 1), gpu_indices=[2])]
    assert stage_wave_line(two, 'wave 1 of 3') == 'wave 1 of 3: 2 stages at once: a (GPU 1), b (GPU 2)'
    alone = [dict(_stage('t', 3), gpu_indices=list(range(8)), alone='stops ddtree-qwen.service')]
    assert stage_wave_line(alone) == 't (GPU 0,1,2,3,4,5,6,7) alone: stops ddtree-qwen.service'
    with pytest.raises(AnsibleFilterError):
        stage_wave_line([])
