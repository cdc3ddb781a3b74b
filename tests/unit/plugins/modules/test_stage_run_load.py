# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""stage_run's load runs and capacity searches, after the grid, with bench_run's engine replaced by a scripted one
whose requests' TTFT grows with the load: the search file and the capacity that script implies."""

from __future__ import annotations

import json
import os
import sys

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._lease import Lease
from ansible_collections.specdec.bench.plugins.module_utils._stage import bench_run as _bench_run
from ansible_collections.specdec.bench.plugins.module_utils._stage import stage_run as _stage_run
from ansible_collections.specdec.bench.plugins.module_utils._stage.errors import StageError
from ansible_collections.specdec.bench.plugins.module_utils._common import rate_tag

STAGE = 'tp1-dflash-n16'
SLO = {'ttft_ms': {'p': 95.0, 'max': 200.0}}
SEARCH_FILE_KEYS = {'kind', 'lo', 'hi', 'resolution', 'max_runs', 'max_seconds', 'points', 'capacity', 'capacity_low',
                    'capacity_high', 'binding', 'bound_by', 'runs', 'seconds', 'schema_version', 'stage', 'dataset',
                    'temperature', 'slo'}


class Module:
    check_mode = False

    def __init__(self):
        self.warnings = []

    def warn(self, text):
        self.warnings.append(text)


class ScriptedBench:
    """bench_run's engine: each repeat's raw file gets 4 requests whose TTFT is 10 ms per unit of load (the
    concurrency at an infinite rate, else the request rate), with a spread of +-1 ms between repeats; `fail_at`
    names a (concurrency, rate) whose run fails."""

    def __init__(self, fail_at=None):
        self.calls = []
        self.fail_at = fail_at

    def __call__(self, _module, args):
        self.calls.append(args)
        rate = float('inf') if args['request_rate'] is None else args['request_rate']
        if self.fail_at == (args['concurrency'], rate):
            raise StageError('3 of 4 requests completed', {'result': {'repeats': args['repeats']}})
        load = args['concurrency'] if rate == float('inf') else rate
        rows = []
        for repeat in range(1, args['repeats'] + 1):
            name = '%s-t%g-c%d-q%s-r%d' % ((args.get('dataset') or {}).get('name') or 'random', args['temperature'],
                                           args['concurrency'], rate_tag(rate), repeat)
            raw = os.path.join(args['output_dir'], 'raw-%s.jsonl' % name)
            ttft = (load * 10.0 + (repeat - 2) * 1.0) / 1e3
            with open(raw, 'w', encoding='utf-8') as handle:
                handle.write(json.dumps({'warmup': True, 'success': True, 'ttft_s': 99.0, 'latency_s': 99.0,
                                         'output_tokens': 4}) + '\n')
                for _request in range(4):
                    handle.write(json.dumps({'warmup': False, 'success': True, 'ttft_s': ttft, 'latency_s': ttft + 0.1,
                                             'output_tokens': 4, 'itl_s': [0.03, 0.03, 0.04]}) + '\n')
            rows.append({'repeat': repeat, 'raw_file': raw, 'result_file': os.path.join(args['output_dir'], 'result-%s.json' % name)})
        return {'changed': True, 'result': {'repeats': args['repeats'], 'output_throughput': 100.0 / load},
                'results': rows, 'elapsed_s': 0.5, 'warmup_s': 0.1, 'measure_s': 0.3, 'idle_s': 0.0}


@pytest.fixture(name='bench')
def bench_fixture(monkeypatch):
    bench = ScriptedBench()
    monkeypatch.setattr(_bench_run, 'bench_run', bench)
    return bench


def run_options(concurrency, **extra):
    values = dict(concurrency=concurrency, num_prompts=4, input_len=16, output_len=4, seed=5, repeats=3, telemetry='off',
                  dataset={'name': 'gsm8k'}, temperature=0.0)
    values.update(extra)
    return values


def search_options(kind, **extra):
    if kind == 'concurrency':
        values = dict(kind=kind, base=run_options(1, request_rate='inf', name_rate=True), slo=SLO, min=1, max=64,
                      resolution=1, max_runs=40, max_seconds=1800.0)
    else:
        values = dict(kind=kind, base=run_options(64, request_rate=0.5, burstiness=1.0, name_rate=True), slo=SLO, min=0.5,
                      max=64.0, resolution=0.1, max_runs=60, max_seconds=1800.0)
    values.update(extra)
    return values


def params(tmp_path, runs=(), load_runs=(), searches=()):
    return dict(dir=str(tmp_path), port=31001, ready_timeout=1, lease_timeout=0, journal_lines=5, stop_timeout=1,
                status={'stage': STAGE}, mode='0640', runs=list(runs), load_runs=list(load_runs), searches=list(searches),
                unit='x.service', backend='supervisor', state_dir=str(tmp_path / 'services'))


def harness(tmp_path, **kwargs):
    """stage_run's harness step, as stage_run calls it after the server is ready: (out, progress data)."""
    p = params(tmp_path, **kwargs)
    _mode, runs, load_runs, searches = _stage_run.check_params(p)
    progress = _stage_run.Progress(Module(), str(tmp_path / 'progress.json'), 0o640, STAGE,
                                   len(runs) + len(load_runs) + len(searches), 0.0)
    out = {'attempt': None, 'ready': {'ready_seconds': 1.0}, 'runs': [], 'load_runs': [], 'searches': [], 'search_runs': []}
    try:
        _stage_run.harness_runs(Module(), p, runs, Lease(None, 0), progress, out, load_runs, searches)
    finally:
        out['progress'] = progress.data
    return out


def test_load_runs_follow_the_grid_named_with_their_rate_and_count_in_the_timings(tmp_path, bench):
    load_runs = [run_options(64, request_rate=2.0, burstiness=0.5), run_options(8, request_rate='inf')]
    out = harness(tmp_path, runs=[run_options(1)], load_runs=load_runs)
    assert [(call['concurrency'], call['request_rate'], call['name_rate']) for call in bench.calls] == [
        (1, None, False), (64, 2.0, True), (8, float('inf'), True)]
    assert bench.calls[1]['burstiness'] == 0.5 and len(out['runs']) == 1 and len(out['load_runs']) == 2
    labels = [entry['label'] for entry in out['progress']['runs']]
    assert labels == ['gsm8k t0 c1', 'gsm8k t0 c64 q2', 'gsm8k t0 c8 qinf'] and out['progress']['runs_done'] == 3
    assert out['progress']['runs'][1]['request_rate'] == '2' and 'request_rate' not in out['progress']['runs'][0]
    status = _stage_run.ok_status({'stage': STAGE}, 'now', out['ready'], out['runs'], out['load_runs'] + out['search_runs'])
    assert len(status['headline']) == 1  # the grid's runs only
    assert status['timings']['harness_s'] == 1.5 and status['timings']['measure_s'] == pytest.approx(0.9)


def test_a_failed_load_run_fails_the_stage_after_every_run(tmp_path, bench):
    bench.fail_at = (64, 2.0)
    with pytest.raises(StageError) as failure:
        harness(tmp_path, runs=[run_options(1)], load_runs=[run_options(64, request_rate=2.0), run_options(8, request_rate='inf')])
    assert failure.value.reason == 'gsm8k t0 c64 q2: 3 of 4 requests completed'
    assert failure.value.evidence['step'] == _stage_run.STEP_RUNS and len(bench.calls) == 3


def read_search(tmp_path, kind):
    with open(str(tmp_path / ('search-gsm8k-t0-%s.json' % kind)), encoding='utf-8') as handle:
        return json.load(handle)


def test_a_concurrency_search_writes_its_file_with_the_capacity_the_script_implies(tmp_path, bench):
    out = harness(tmp_path, searches=[search_options('concurrency')])
    found = read_search(tmp_path, 'concurrency')
    assert set(found) == SEARCH_FILE_KEYS
    # TTFT 10 ms per request in flight against 200 ms: 20 is the most that meets it
    assert found['capacity'] == 20 and found['bound_by'] == 'resolution' and found['binding'] == 'ttft_ms'
    assert (found['schema_version'], found['stage'], found['dataset'], found['temperature'], found['slo']) == (
        1, STAGE, 'gsm8k', 0.0, SLO)
    values = [point['value'] for point in found['points']]
    assert values == [1, 2, 4, 8, 16, 32, 24, 20, 22, 21]
    assert [call['concurrency'] for call in bench.calls] == values
    assert all(call['request_rate'] == float('inf') and call['name_rate'] for call in bench.calls)
    assert found['runs'] == 3 * len(values) and all(point['runs'] == 3 for point in found['points'])
    assert found['points'][0]['result_files'] == ['result-gsm8k-t0-c1-qinf-r%d.json' % repeat for repeat in (1, 2, 3)]
    assert found['points'][0]['percentiles']['ttft_ms']['values'] == pytest.approx([9.0, 10.0, 11.0])  # the warm-up left out
    # the repeats' TTFT spread 1 ms: the t interval is +-2.5 ms (t(2) = 4.303, s = 1, n = 3); 20 (200 ms) is unsure, 16
    # the largest sure pass, 21 (210 ms) the smallest sure failure
    assert found['capacity_low'] == 16 and found['capacity_high'] == 20
    assert [point['sure'] for point in found['points'] if point['value'] in (20, 21)] == ['unsure', 'fail']
    assert out['searches'] == [{'kind': 'concurrency', 'dataset': 'gsm8k', 'temperature': 0.0, 'capacity': 20,
                                'capacity_low': 16, 'capacity_high': 20, 'binding': 'ttft_ms', 'bound_by': 'resolution',
                                'runs': 30, 'points': 10, 'search_file': str(tmp_path / 'search-gsm8k-t0-concurrency.json')}]
    assert out['progress']['runs'][-1]['capacity'] == 20 and out['progress']['runs'][-1]['failed'] is False


def test_a_request_rate_search_bisects_to_within_its_relative_resolution(tmp_path, bench):
    harness(tmp_path, searches=[search_options('request_rate')])
    found = read_search(tmp_path, 'request_rate')
    passes = [point['value'] for point in found['points'] if point['passed']]
    fails = [point['value'] for point in found['points'] if not point['passed']]
    assert found['capacity'] == max(passes) <= 20.0 < min(fails) <= found['capacity'] * 1.1
    assert all(call['concurrency'] == 64 and call['name_rate'] for call in bench.calls)
    assert [call['request_rate'] for call in bench.calls] == [point['value'] for point in found['points']]


def test_a_search_whose_run_fails_fails_the_stage_and_writes_no_file(tmp_path, bench):
    bench.fail_at = (4, float('inf'))
    with pytest.raises(StageError) as failure:
        harness(tmp_path, searches=[search_options('concurrency'), search_options('request_rate', max_runs=6)])
    assert failure.value.reason == 'gsm8k t0 search concurrency: gsm8k t0 c4 qinf: 3 of 4 requests completed'
    assert not (tmp_path / 'search-gsm8k-t0-concurrency.json').exists()
    assert read_search(tmp_path, 'request_rate')['bound_by'] == 'max_runs'  # the next search still ran


@pytest.mark.parametrize('change, message', [
    (dict(slo={}), 'searches[0].slo must be a mapping'),
    (dict(slo={'latency_ms': {'max': 1}}), 'searches[0].slo.latency_ms is not an SLO metric; allowed: ttft_ms'),
    (dict(slo={'ttft_ms': {'max': 0}}), 'searches[0].slo.ttft_ms.max must be a number of milliseconds above 0'),
    (dict(slo={'ttft_ms': {'max': 1, 'p': 101}}), 'searches[0].slo.ttft_ms.p must be a percentile in (0, 100]'),
    (dict(slo={'itl_ms': {'max': 1}, 'tpot_ms': {'max': 1}}), 'both itl_ms and tpot_ms'),
    (dict(min=0), 'searches[0]: min and max must satisfy'),
    (dict(max_runs=0), 'searches[0].max_runs must be an integer of 1 or more'),
    (dict(base=run_options(1, harness='sglang')), 'searches[0].base.harness must be builtin'),
    (dict(base=run_options(1, concurency=2)), 'searches[0].base has invalid options'),
])
def test_a_search_that_cannot_run_is_refused_before_anything_starts(tmp_path, change, message):
    with pytest.raises(StageError) as failure:
        _stage_run.check_params(params(tmp_path, searches=[search_options('concurrency', **change)]))
    assert message in failure.value.reason


def test_a_search_with_keys_missing_is_refused_naming_them(tmp_path):
    search = search_options('concurrency')
    del search['max_seconds']
    with pytest.raises(StageError, match=r'searches\[0\] must have the keys kind, base, slo'):
        _stage_run.check_params(params(tmp_path, searches=[search]))


# ---- end to end: the SGLang emulator under the supervisor, the builtin harness's real requests (test_stage_run's stage)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_stage_run import stage_fixture  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import
from ansible_collections.specdec.bench.plugins.modules import stage_run  # noqa: E402  pylint: disable=wrong-import-position


def test_a_stage_runs_its_grid_then_its_load_runs_then_its_searches_on_one_server(run_module, stage):
    stage.define()
    search = dict(kind='concurrency', base=stage.run(1, request_rate='inf', name_rate=True), slo={'e2e_ms': {'p': 95, 'max': 60000}},
                  min=1, max=4, resolution=1, max_runs=10, max_seconds=600)
    result = run_module(stage_run, stage.args([stage.run(1)], load_runs=[stage.run(2, request_rate=50.0, burstiness=0.5)],
                                              searches=[search]))
    assert result['exit_code'] == 0, result
    status = stage.read('status.json')
    assert status['status'] == 'ok', status
    assert [row['concurrency'] for row in status['headline']] == [1]
    names = set(os.listdir(str(stage.dir)))
    assert {'result-random-t0-c1-r1.json', 'result-random-t0-c2-q50-r1.json', 'arrivals-random-t0-c2-q50.json',
            'search-random-t0-concurrency.json'} <= names
    load_row = stage.read('result-random-t0-c2-q50-r1.json')
    assert (load_row['request_rate'], load_row['burstiness'], load_row['complete']) == (50.0, 0.5, True)
    found = stage.read('search-random-t0-concurrency.json')
    assert found['capacity'] == 4 and found['bound_by'] == 'highest_passes' and found['stage'] == STAGE
    assert [point['value'] for point in found['points']] == [1, 2, 4] and found['runs'] == 3
    assert found['points'][0]['result_files'] == ['result-random-t0-c1-qinf-r1.json']
    assert found['points'][0]['percentiles']['e2e_ms']['mean'] > 0
    assert result['searches'][0]['capacity'] == 4 and len(result['search_runs']) == 3 and len(result['load_runs']) == 1
    assert stage.state()['state'] != 'running'
