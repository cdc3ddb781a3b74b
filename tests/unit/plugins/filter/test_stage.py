# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""What one stage_run call of a stage gets (its harness runs, its load family and capacity searches, status base,
files), and how the campaign groups waves."""

from __future__ import annotations

import copy
import inspect

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.specdec.bench.plugins.filter.stage import campaign_waves, stage_run_args, stage_wave_line
from ansible_collections.specdec.bench.plugins.module_utils._stage.builtin_harness import arrival_times
from ansible_collections.specdec.bench.plugins.plugin_utils.plan import campaign_plan

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


# --- the load family and the capacity searches ---------------------------------------------------------------------

LOAD = {'request_rates': [2.0, 8.0], 'burstiness': 0.5, 'max_concurrency': 16,
        'slo': {'ttft_ms': {'p': 95.0, 'max': 2000.0}, 'tpot_ms': {'p': 90.0, 'max': 60.0}},
        'search': {'concurrency': {'min': 1, 'max': 16, 'resolution': 1}, 'request_rate': {'min': 0.5, 'max': 32.0, 'resolution': 0.1},
                   'max_runs': 24, 'max_seconds': 600.0},
        'crossover_concurrency': [2, 8]}
# what a stage of the plan names of itself in a run; everything else is the spec's
STAGE_KEYS = ('stage', 'base_url', 'output_dir', 'gpus', 'metrics')


def test_a_stage_planned_without_load_or_with_none_has_no_load_run_and_no_search():
    args = stage_run_args(STAGE, SETTINGS)
    assert args['load_runs'] == [] and args['searches'] == []
    quiet = dict(LOAD, request_rates=[], search=None, crossover_concurrency=[])
    args = stage_run_args(dict(STAGE, load=quiet), SETTINGS)
    assert args['load_runs'] == [] and args['searches'] == []
    assert args['runs'] == stage_run_args(STAGE, SETTINGS)['runs']  # the grid is today's


def test_the_load_runs_follow_the_grid_per_dataset_and_temperature_rates_then_crossover():
    args = stage_run_args(dict(STAGE, load=LOAD), dict(SETTINGS, datasets=[GSM8K]))
    runs, grid = args['load_runs'], args['runs']
    assert [(run['temperature'], run['concurrency'], run['request_rate']) for run in runs] == [
        (0.0, 16, 2.0), (0.0, 16, 8.0), (0.0, 2, 'inf'), (0.0, 8, 'inf'),
        (0.6, 16, 2.0), (0.6, 16, 8.0), (0.6, 2, 'inf'), (0.6, 8, 'inf')]
    assert all(run['name_rate'] is True for run in runs)
    assert [run.get('burstiness') for run in runs[:4]] == [0.5, 0.5, None, None]  # arrivals only where the rate is finite
    # every other field that shapes the requests is the grid run's of the same dataset and temperature
    shaping = set(grid[0]) - {'concurrency', 'request_rate'}
    for run in runs:
        same_cell = next(cell for cell in grid if cell['temperature'] == run['temperature'])
        assert dict((key, run[key]) for key in shaping) == dict((key, same_cell[key]) for key in shaping)
        assert set(run) - set(same_cell) <= {'name_rate', 'burstiness'}
    assert all('name_rate' not in run and 'burstiness' not in run for run in grid)


def test_the_searches_follow_the_load_runs_concurrency_then_rate_with_the_plans_slo_and_budget():
    searches = stage_run_args(dict(STAGE, load=LOAD), SETTINGS)['searches']
    assert [(search['kind'], search['base']['temperature']) for search in searches] == [
        ('concurrency', 0.0), ('request_rate', 0.0), ('concurrency', 0.6), ('request_rate', 0.6)]
    by_concurrency, by_rate = searches[:2]
    assert (by_concurrency['min'], by_concurrency['max'], by_concurrency['resolution']) == (1, 16, 1)
    assert (by_rate['min'], by_rate['max'], by_rate['resolution']) == (0.5, 32.0, 0.1)
    for search in searches:
        assert search['slo'] == LOAD['slo'] and search['slo'] is not LOAD['slo']
        assert (search['max_runs'], search['max_seconds']) == (24, 600.0)
        assert search['base']['name_rate'] is True and search['base']['output_dir'] == '/root/bench_results/c1/tp1-dflash-n16'
    # a concurrency point is closed-loop; a rate point arrives at the rate, capped at max_concurrency, with the burstiness
    assert (by_concurrency['base']['concurrency'], by_concurrency['base']['request_rate']) == (1, 'inf')
    assert 'burstiness' not in by_concurrency['base']
    assert (by_rate['base']['concurrency'], by_rate['base']['request_rate'], by_rate['base']['burstiness']) == (16, 0.5, 0.5)
    only_rate = dict(LOAD, search=dict(LOAD['search'], concurrency=None))
    assert [search['kind'] for search in stage_run_args(dict(STAGE, load=only_rate), SETTINGS)['searches']] == ['request_rate'] * 2


def test_a_scalar_finite_rate_sends_its_burstiness_to_the_grid_only_when_not_poisson():
    paced = dict(STAGE, workload=dict(STAGE['workload'], request_rate=4))
    poisson = stage_run_args(dict(paced, load=dict(LOAD, burstiness=1.0)), SETTINGS)['runs']
    assert all('burstiness' not in run and run['request_rate'] == 4 for run in poisson)
    assert poisson == stage_run_args(paced, SETTINGS)['runs']
    bursty = stage_run_args(dict(paced, load=LOAD), SETTINGS)['runs']
    assert all(run['burstiness'] == 0.5 for run in bursty)


def test_arrivals_other_than_poisson_are_refused_with_the_sglang_client_before_the_stage_starts():
    with pytest.raises(AnsibleFilterError, match=r'settings.harness \(with workload.burstiness 0.5\) is .sglang.; allowed: builtin'):
        stage_run_args(dict(STAGE, load=LOAD), dict(SETTINGS, harness='sglang'))
    closed = dict(LOAD, request_rates=[], search=dict(LOAD['search'], request_rate=None))
    assert stage_run_args(dict(STAGE, load=closed), dict(SETTINGS, harness='sglang'))['load_runs']  # closed-loop only: taken
    assert stage_run_args(dict(STAGE, load=dict(LOAD, burstiness=1.0)), dict(SETTINGS, harness='sglang'))['searches']


def _arrivals(run):
    """The run's seeded arrival schedule as the built-in harness computes it (with its burstiness where it takes one)."""
    if 'burstiness' in inspect.signature(arrival_times).parameters:
        return arrival_times(run['seed'], run['num_prompts'], run['request_rate'], burstiness=run.get('burstiness', 1.0))
    return arrival_times(run['seed'], run['num_prompts'], run['request_rate'])


def test_the_stages_of_a_host_get_the_same_load_runs_and_arrivals_a_paired_design():
    facts = {'nvidia_gpus': [{'index': i, 'uuid': 'GPU-%d' % i, 'memory_total_mib': 97887, 'processes': []} for i in range(2)],
             'specdec_host': {'listening_ports': []}}
    spec = {'campaign': 'c1', 'model': {'path': '/models/Qwen3.6-27B', 'bytes': 55 * 10 ** 9}, 'draft': '/models/Qwen3.6-27B-DFlash',
            'tp': [{'size': 1, 'pool': [0, 1]}], 'parallel': True, 'enable_metrics': True,
            'methods': {'autoregressive': {}, 'ddtree': {'budget': [32], 'topk': [4]}},
            'workload': {'input_len': 64, 'output_len': 32, 'num_prompts': 24, 'seed': 11, 'temperature': [0, 0.6],
                         'request_rate': [4, 1.5, 'inf'], 'burstiness': 0.7},
            'concurrency': [1, 4], 'crossover': {'concurrency': [2, 4, 8]},
            'slo': {'ttft_ms': {'max': 500}}, 'search': {'request_rate': {'min': 1, 'max': 16}}}
    autoregressive, ddtree = (stage for stage in campaign_plan(facts, spec, {'build': 'sglang-ddtree-pr29907'}) if not stage['alone'])
    assert (autoregressive['method'], ddtree['method']) == ('autoregressive', 'ddtree')
    assert autoregressive['gpus'] != ddtree['gpus'] and autoregressive['port'] != ddtree['port']
    ar_args, dd_args = (stage_run_args(stage, SETTINGS, [autoregressive['id'], ddtree['id']]) for stage in (autoregressive, ddtree))
    assert len(ar_args['load_runs']) == len(dd_args['load_runs']) == 2 * (2 + 2)  # 2 temperatures x (2 rates + c2, c8)

    def shared(run):
        return dict((key, value) for key, value in run.items() if key not in STAGE_KEYS)
    assert [shared(run) for run in ar_args['load_runs']] == [shared(run) for run in dd_args['load_runs']]
    for ar_run, dd_run in zip(ar_args['load_runs'], dd_args['load_runs']):
        assert (ar_run['stage'], dd_run['stage']) == (autoregressive['id'], ddtree['id'])
        assert _arrivals(ar_run) == _arrivals(dd_run)
    open_loop = [run for run in ar_args['load_runs'] if run['request_rate'] != 'inf']
    assert [(run['request_rate'], run['burstiness'], run['seed'], run['num_prompts']) for run in open_loop] == [
        (1.5, 0.7, 11, 24), (4.0, 0.7, 11, 24)] * 2
    assert len(set(_arrivals(open_loop[0]))) == 24  # a real schedule (not all at once) that both stages share
    ar_searches, dd_searches = ar_args['searches'], dd_args['searches']
    assert [dict(search, base=shared(search['base'])) for search in ar_searches] == [
        dict(search, base=shared(search['base'])) for search in dd_searches]
    assert _arrivals(ar_searches[0]['base']) == _arrivals(dd_searches[0]['base'])
    # the spec stays the same object to plan again: the same plan, the same runs
    again = campaign_plan(facts, copy.deepcopy(spec), {'build': 'sglang-ddtree-pr29907'})
    assert stage_run_args(again[0], SETTINGS, [autoregressive['id'], ddtree['id']]) == ar_args
