# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign's decisions and lines: what is done, what changed since the first run, what a person reads."""

from __future__ import annotations

import os

import yaml

from ansible_collections.specdec.bench.plugins.filter import campaign, conflicts
from ansible_collections.specdec.bench.plugins.filter import plan_lines as plan_lines_module
from ansible_collections.specdec.bench.plugins.filter.campaign import (
    campaign_done, campaign_spec_changes, campaign_summary_lines, stage_progress_line, truncate)
from ansible_collections.specdec.bench.plugins.filter.plan_lines import plan_lines

PLAN = [
    {'id': 'tp1-autoregressive', 'index': 0, 'method': 'autoregressive', 'params': {}, 'tp': 1, 'gpu_indices': [1],
     'port': 31000, 'feasible': True, 'blocked': False, 'conflicts': ['ddtree-qwen.service'], 'holders': [],
     'workload': {'num_prompts': 16}, 'concurrency': [1, 4]},
    {'id': 'tp1-dflash-n16', 'index': 1, 'method': 'dflash', 'params': {'num_draft_tokens': 16}, 'tp': 1,
     'gpu_indices': [1], 'port': 31001, 'feasible': True, 'blocked': False, 'conflicts': [], 'holders': [],
     'workload': {'num_prompts': 16}, 'concurrency': [1, 4]},
    {'id': 'tp8-autoregressive', 'index': 2, 'method': 'autoregressive', 'params': {}, 'tp': 8, 'gpu_indices': [],
     'port': 31002, 'feasible': False, 'reason': 'too few GPUs: TP8 needs 8, the host has 6', 'blocked': True,
     'conflicts': [], 'workload': {'num_prompts': 16}, 'concurrency': [1, 4],
     'holders': [{'gpu_index': 0, 'pid': 812, 'unit': None, 'cmdline': 'python3 train.py --run x', 'used_memory_mib': 1024,
                  'stoppable': False},
                 {'gpu_index': 1, 'pid': None, 'unit': None, 'cmdline': None, 'used_memory_mib': 512, 'stoppable': False},
                 {'gpu_index': 1, 'pid': 47, 'unit': 'ddtree-qwen.service', 'cmdline': None, 'used_memory_mib': 9,
                  'stoppable': True}]},
]
STATUS = {
    'counts': {'ok': 1, 'failed': 1, 'infeasible': 1},
    'stages': {
        'tp1-autoregressive': {'status': 'ok', 'headline': [
            {'concurrency': 1, 'output_throughput': 41.25, 'accept_length': None},
            {'concurrency': 4, 'output_throughput': None, 'accept_length': 3.456}]},
        'tp1-dflash-n16': {'status': 'failed', 'reason': '/health_generate did not answer within 900 s'},
        'tp8-autoregressive': {'status': 'infeasible', 'reason': 'too few GPUs'},
    },
    'plan': None,
}


def test_done_is_ok_and_still_infeasible_unless_forced():
    assert campaign_done(PLAN, STATUS) == ['tp1-autoregressive', 'tp8-autoregressive']
    assert campaign_done(PLAN, STATUS, force=True) == []
    assert campaign_done(PLAN, {'stages': {}}) == [] and campaign_done(PLAN, None) == []


def test_a_stage_recorded_infeasible_that_fits_now_runs():
    fits = [dict(PLAN[2], feasible=True)]
    assert campaign_done(fits, STATUS) == []


def test_spec_changes_name_the_stage_and_the_keys():
    recorded = [dict(PLAN[0], workload={'num_prompts': 8}, concurrency=[1]), dict(PLAN[1]), {'id': 'gone'}]
    assert campaign_spec_changes(PLAN, recorded) == ['tp1-autoregressive (workload, concurrency)']
    assert campaign_spec_changes(PLAN, None) == []
    # a key the recorded stage lacks differs; a key the plan lacks is not compared
    assert campaign_spec_changes([{'id': 'a', 'draft_path': '/d'}], [{'id': 'a'}]) == ['a (draft_path)']


def test_summary_lines():
    lines = campaign_summary_lines(STATUS, PLAN + [{'id': 'tp2-autoregressive'}], 'qwen36-ct200', 'ct200', '/root/bench_results')
    assert lines == [
        'qwen36-ct200 on ct200: 1 failed, 1 infeasible, 1 ok',
        'tp1-autoregressive: ok | c1 41.2 tok/s | c4 - tok/s tau 3.46',
        'tp1-dflash-n16: failed (/health_generate did not answer within 900 s)',
        'tp8-autoregressive: infeasible (too few GPUs)',
        'tp2-autoregressive: missing',
        'Results on the host: /root/bench_results/qwen36-ct200/',
    ]


def test_progress_line():
    ok = dict(STATUS['stages']['tp1-autoregressive'], stage='tp1-autoregressive', timings={'ready_s': '84.25'})
    assert stage_progress_line(ok, 'stage 1 of 3') == (
        'stage 1 of 3 tp1-autoregressive: ok | c1 41.2 tok/s | c4 - tok/s tau 3.46 | ready 84.2 s')
    assert stage_progress_line({'stage': 'x', 'status': 'skipped', 'headline': []}) == 'x: skipped'
    assert stage_progress_line({'stage': 'x', 'status': 'failed', 'reason': None}) == 'x: failed (no reason recorded)'
    long = stage_progress_line({'stage': 'x', 'status': 'failed', 'reason': 'word ' * 100})
    assert long.endswith('...)') and len(long) < len('x: failed ()') + 300


def test_truncate_is_jinjas():
    assert truncate('a' * 205, 200) == 'a' * 205
    assert truncate('abc def ' * 40, 20) == 'abc def abc def...'


def test_plan_lines():
    lines = plan_lines(PLAN, 'qwen36-ct200', 'ct200')
    assert lines == [
        'qwen36-ct200 on ct200: 3 stage(s), 2 feasible, 1 blocked',
        'stage 1/3 tp1-autoregressive: autoregressive, TP1 on GPU(s) 1, port 31000, feasible, stops ddtree-qwen.service',
        'stage 2/3 tp1-dflash-n16: dflash num_draft_tokens=16, TP1 on GPU(s) 1, port 31001, feasible',
        'stage 3/3 tp8-autoregressive: autoregressive, TP8 on GPU(s) none, port 31002, infeasible: too few GPUs: TP8 '
        'needs 8, the host has 6, BLOCKED by GPU0 pid 812 unit none (python3 train.py --run x) 1024 MiB; '
        'GPU1 pid none unit none 512 MiB',
    ]


def test_each_filter_has_its_documentation():
    folder = os.path.dirname(campaign.__file__)
    for module in (campaign, conflicts, plan_lines_module):
        for name in module.FilterModule().filters():
            with open(os.path.join(folder, name + '.yml'), encoding='utf-8') as handle:
                docs = yaml.safe_load(handle)
            assert docs['DOCUMENTATION']['name'] == name and docs['RETURN']['_value']['description'], name


def test_plan_lines_show_the_workload_once():
    workload = {'datasets': [{'name': 'gsm8k', 'num_prompts': 128, 'turns': 'all', 'max_new_tokens': 2048},
                             {'name': 'spec-bench', 'num_prompts': None, 'categories': ['coding', 'math_reasoning'],
                              'turns': 'first', 'max_new_tokens': 128},
                             {'name': 'random', 'num_prompts': 16, 'input_len': 512, 'output_len': 128}],
                'temperature': [0.0, 0.7], 'top_p': 1.0, 'top_k': -1, 'stop_at_eos': False,
                'chat_template_kwargs': {'enable_thinking': False}}
    stages = [dict(stage, workload=workload) for stage in PLAN]
    lines = plan_lines(stages, 'qwen36-ct200', 'ct200')
    assert lines[1] == (
        'workload: gsm8k (128 prompts, all turns, max 2048 new tokens), spec-bench (all prompts, categories '
        'coding,math_reasoning, first turns, max 128 new tokens), random (16 prompts, 512 in / 128 out); '
        'temperature 0, 0.7; top_p 1.0, top_k -1; ignores EOS; chat template kwargs {"enable_thinking": false}')
    assert len(lines) == len(PLAN) + 2 and lines[2].startswith('stage 1/3 ')


def test_stage_progress_line_names_each_runs_dataset_and_temperature():
    ok = {'stage': 'tp1-dflash-n16', 'status': 'ok', 'headline': [
        {'dataset': 'gsm8k', 'temperature': 0.0, 'concurrency': 1, 'output_throughput': 41.24, 'accept_length': 3.456},
        {'dataset': 'mt-bench', 'temperature': 0.7, 'concurrency': 4, 'output_throughput': None, 'accept_length': None}]}
    assert stage_progress_line(ok) == (
        'tp1-dflash-n16: ok | gsm8k T0 c1 41.2 tok/s tau 3.46 | mt-bench T0.7 c4 - tok/s')


def test_an_ok_stage_is_done_only_with_the_planned_repeats():
    planned = [dict(PLAN[0], repeats=3), dict(PLAN[1], repeats=3), dict(PLAN[2], repeats=3)]
    status = {'stages': {'tp1-autoregressive': {'status': 'ok', 'repeats': 2},
                         'tp1-dflash-n16': {'status': 'ok', 'repeats': 3},
                         'tp8-autoregressive': {'status': 'infeasible'}}}
    # fewer repeats than planned: runs again (filling in); infeasible does not count repeats
    assert campaign_done(planned, status) == ['tp1-dflash-n16', 'tp8-autoregressive']
    # more recorded than planned is done; a status from before repeats counts as 1, a plan without as 1
    status['stages']['tp1-autoregressive']['repeats'] = 5
    assert campaign_done(planned, status) == ['tp1-autoregressive', 'tp1-dflash-n16', 'tp8-autoregressive']
    assert campaign_done([dict(PLAN[0], repeats=2)], STATUS) == []
    assert campaign_done([dict(PLAN[0], repeats=1)], STATUS) == ['tp1-autoregressive']
    assert campaign_done(PLAN, {'stages': {'tp1-autoregressive': {'status': 'ok', 'repeats': True}}}) == ['tp1-autoregressive']
    assert campaign_done([dict(PLAN[0], repeats=2)], {'stages': {'tp1-autoregressive': {'status': 'ok', 'repeats': '3'}}}) == []
    assert campaign_done(planned, status, force=True) == []


def test_an_ok_stage_is_done_only_with_the_load_study_its_plan_asks_for():
    load = {'request_rates': [2.0], 'burstiness': 1.0, 'max_concurrency': 4, 'slo': None, 'search': None, 'crossover_concurrency': []}
    slo_only = dict(load, request_rates=[], slo={'tpot_ms': {'p': 95.0, 'max': 50.0}})
    ok = {'status': 'ok', 'repeats': 1}
    # a load study added to a finished stage: it runs again (its measured runs are reused), until its status records it
    assert campaign_done([dict(PLAN[0], load=load)], {'stages': {'tp1-autoregressive': ok}}) == []
    assert campaign_done([dict(PLAN[0], load=load)], {'stages': {'tp1-autoregressive': dict(ok, load=load)}}) == ['tp1-autoregressive']
    changed = dict(load, request_rates=[2.0, 4.0])
    assert campaign_done([dict(PLAN[0], load=changed)], {'stages': {'tp1-autoregressive': dict(ok, load=load)}}) == []
    # an SLO alone is read off the grid's runs: nothing more to measure
    assert campaign_done([dict(PLAN[0], load=slo_only)], {'stages': {'tp1-autoregressive': ok}}) == ['tp1-autoregressive']


def test_raising_repeats_is_not_a_spec_change():
    assert campaign_spec_changes([dict(PLAN[0], repeats=3)], [dict(PLAN[0], repeats=1)]) == []
    assert campaign_spec_changes([dict(PLAN[0], repeats=3)], [PLAN[0]]) == []


def test_the_progress_line_says_a_runs_figures_are_the_means_of_its_repeats():
    ok = {'stage': 'tp1-dflash-n16', 'status': 'ok', 'repeats': 3, 'headline': [
        {'dataset': 'gsm8k', 'temperature': 0.0, 'concurrency': 1, 'output_throughput': 41.24, 'accept_length': 3.456,
         'repeats': 3},
        {'dataset': 'gsm8k', 'temperature': 0.0, 'concurrency': 4, 'output_throughput': 90.0, 'accept_length': None,
         'repeats': 1}]}
    assert stage_progress_line(ok) == (
        'tp1-dflash-n16: ok | gsm8k T0 c1 41.2 tok/s tau 3.46 (mean of 3) | gsm8k T0 c4 90.0 tok/s')


def test_a_stage_from_a_pool_is_compared_by_its_pool_not_by_the_gpu_it_got():
    pool = {'tp': 'tp1', 'gpus': [1, 2, 3], 'size': 1, 'slots': [[1], [2], [3]], 'unused': []}
    recorded = [dict(PLAN[1], gpus=['GPU-2'], pool=pool)]
    # another wave gave it another GPU of the same pool: the same experiment
    assert campaign_spec_changes([dict(PLAN[1], gpus=['GPU-3'], pool=dict(pool, slots=[[3]]))], recorded) == []
    # another pool, or pins instead of the pool: another experiment
    assert campaign_spec_changes([dict(PLAN[1], gpus=['GPU-2'], pool=dict(pool, gpus=[1, 2]))], recorded) == ['tp1-dflash-n16 (gpus)']
    assert campaign_spec_changes([dict(PLAN[1], gpus=['GPU-2'], pool=None)], recorded) == ['tp1-dflash-n16 (gpus)']


def test_todo_is_what_the_run_does():
    stages = [
        dict(PLAN[0], model_path='/m', wave=0),
        dict(PLAN[1], model_path='/m', draft_path='/d/step-1', wave=0,
             draft_checkpoint={'path': '/d/step-1', 'present': False, 'source_host': 'trainer'}),
        dict(PLAN[2], model_path='/m'),
        {'id': 'tp1-dflash-n8', 'feasible': True, 'model_path': '/m', 'draft_path': '/d/step-2', 'wave': 1,
         'draft_checkpoint': {'path': '/d/step-2', 'present': True, 'source_host': 'trainer'}},
    ]
    todo = campaign.campaign_todo(stages, STATUS)
    assert todo['done'] == ['tp1-autoregressive', 'tp8-autoregressive']
    assert [stage['id'] for stage in todo['todo']] == ['tp1-dflash-n16', 'tp1-dflash-n8']
    assert todo['preflight'] == todo['todo']
    assert todo['ship'] == [stages[1]['draft_checkpoint']]
    assert [[stage['id'] for stage in wave] for wave in todo['waves']] == [['tp1-dflash-n16'], ['tp1-dflash-n8']]
    assert todo['not_running'] == [] and todo['weights'] == ['/m', '/d/step-1', '/d/step-2']
    # a checkpoint that could not be copied: its stage is in no wave and its folder is not read
    failed = campaign.campaign_todo(stages, STATUS, False, {'/d/step-1': 'no space'})
    assert [stage['id'] for stage in failed['not_running']] == ['tp1-dflash-n16']
    assert failed['weights'] == ['/m', '/d/step-2']
    # forced: everything runs; the infeasible stage is in no wave and is not parsed
    forced = campaign.campaign_todo(stages, STATUS, True)
    assert forced['done'] == [] and [stage['id'] for stage in forced['not_running']] == ['tp8-autoregressive']
    assert [wave[0]['id'] for wave in forced['waves']] == ['tp1-autoregressive', 'tp1-dflash-n8']
    assert len(forced['waves'][0]) == 2 and len(forced['preflight']) == 3
    assert campaign.campaign_todo(None, None)['todo'] == []
