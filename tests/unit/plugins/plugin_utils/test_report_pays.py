# SPDX-License-Identifier: GPL-3.0-or-later
"""report pays.py: "Where speculation pays". crossover() on synthetic points with known answers (log-linear crossing,
'pays', 'never', the interval from the Fieller ends), the capacity gain and its interval, the schedule's bands, the
goodput of a run against an independent count of its good requests, and end to end a synthetic campaign with load
runs, an SLO and capacity searches: the section of report.md, results-slo.csv, capacity.csv, crossover.csv,
schedule.json and the plots."""
import json
import math
import os
import random
import sys
from pathlib import Path

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._common import temperature_tag
from ansible_collections.specdec.bench.plugins.module_utils._stage.harness import from_builtin
from ansible_collections.specdec.bench.plugins.plugin_utils.report import generate, pays
from ansible_collections.specdec.bench.plugins.plugin_utils.report.markdown_pays import crossover_cell, method_flags
from ansible_collections.specdec.bench.plugins.plugin_utils.report.read import find_load_runs, find_runs, find_searches, read_host
from ansible_collections.specdec.bench.plugins.plugin_utils.report.stats import fieller

sys.path.insert(0, str(Path(__file__).resolve().parent))
import report_helpers  # noqa: E402  pylint: disable=wrong-import-position
import synthetic_results as synth  # noqa: E402  pylint: disable=wrong-import-position


def _points(*triples):
    return [{'concurrency': c, 'speedup': s, 'ci_low': low, 'ci_high': high} for c, s, low, high in triples]


# --- crossover ---------------------------------------------------------------------------------------------------

def test_crossover_falls_between_4_and_8_at_the_log_linear_point():
    got = pays.crossover(_points((8, 0.8, None, None), (1, 2.0, None, None), (4, 1.2, None, None)))  # any order
    assert got['status'] == 'crosses'
    # halfway from 1.2 to 0.8 is halfway in log c from 4 to 8: 4 * 2 ** 0.5
    assert got['concurrency'] == pytest.approx(4 * math.sqrt(2))
    assert (got['max_measured'], got['points'], got['low'], got['high']) == (8, 3, None, None)


def test_crossover_interval_is_where_each_end_of_the_interval_falls_to_one():
    got = pays.crossover(_points((2, 1.5, 1.3, 1.7), (4, 1.1, 0.9, 1.3), (8, 0.9, 0.7, 1.1), (16, 0.6, 0.5, 0.7)))
    # speedup: 1.1 -> 0.9 between 4 and 8 at the middle; ci_low: 1.3 -> 0.9 between 2 and 4 at 3/4;
    # ci_high: 1.1 -> 0.7 between 8 and 16 at 1/4
    assert got['concurrency'] == pytest.approx(4 * 2 ** 0.5)
    assert got['low'] == pytest.approx(2 * 2 ** 0.75)
    assert got['high'] == pytest.approx(8 * 2 ** 0.25)
    assert got['low'] < got['concurrency'] < got['high']


def test_crossover_pays_when_every_point_is_at_least_one():
    got = pays.crossover(_points((1, 2.0, 1.8, 2.2), (64, 1.0, 0.95, 1.05)))
    assert (got['status'], got['concurrency'], got['max_measured']) == ('pays', None, 64)
    assert got['high'] is None  # ci_high never falls: unbounded
    assert got['low'] == pytest.approx(1 * 64 ** ((1.8 - 1) / (1.8 - 0.95)))
    assert crossover_cell(dict(got, series=[])) == 'pays at every load measured (up to c=64)'


def test_crossover_never_pays_when_the_first_point_is_below_one():
    got = pays.crossover(_points((2, 0.9, None, None), (4, 1.1, None, None)))
    assert (got['status'], got['concurrency']) == ('never', None)
    assert crossover_cell(dict(got, series=_points((2, 0.9, None, None)))).startswith('never pays')


def test_crossover_of_no_point_has_no_status():
    assert pays.crossover([])['status'] is None


# --- capacity, schedule, pareto, goodput ---------------------------------------------------------------------------

def test_capacity_gain_and_its_interval():
    mine = {'capacity': 16, 'capacity_low': 12, 'capacity_high': 20}
    base = {'capacity': 8, 'capacity_low': 6, 'capacity_high': 10}
    assert pays.capacity_gain(mine, base) == (2.0, 1.2, pytest.approx(20 / 6.0))
    assert pays.capacity_gain(mine, dict(base, capacity_low=None)) == (2.0, 1.2, None)  # AR's low unknown: unbounded
    assert pays.capacity_gain(mine, None) == (None, None, None)


def _row(stage, method, concurrency, throughput, dataset='random', temperature=0.0):
    return {'host': 'h', 'tp': 1, 'dataset': dataset, 'temperature': temperature, 'stage': stage, 'method': method,
            'concurrency': concurrency, 'output_throughput': throughput, 'status': 'ok'}


STAGES = {'tp1-autoregressive': {'id': 'tp1-autoregressive', 'method': 'autoregressive', 'params': {}, 'tp': 1,
                                 'argv': ['--model-path=/m', '--tp-size=1', '--port=31000']},
          'tp1-dflash-n16': {'id': 'tp1-dflash-n16', 'method': 'dflash', 'params': {'num_draft_tokens': 16}, 'tp': 1,
                             'argv': ['--model-path=/m', '--tp-size=1', '--port=31001', '--speculative-algorithm=DFLASH',
                                      '--speculative-num-draft-tokens=16']}}


def _host_data(load=None):
    return [{'host': 'h', 'stages': [{'stage': stage, 'status': {'status': 'ok'}, 'results': {}, 'load': (load or {}).get(sid) or {}}
                                     for sid, stage in STAGES.items()]}]


def test_schedule_merges_consecutive_concurrencies_with_the_same_best_into_bands():
    rows = [_row('tp1-autoregressive', 'autoregressive', c, t) for c, t in ((1, 100), (2, 190), (4, 360), (8, 700), (16, 1300))]
    rows += [_row('tp1-dflash-n16', 'dflash', c, t) for c, t in ((1, 250), (2, 400), (4, 500), (8, 650), (16, 1000))]
    got = pays.schedule({'rows': rows, 'campaign': 'x'}, _host_data())
    assert len(got) == 1 and (got[0]['host'], got[0]['tp'], got[0]['dataset']) == ('h', 1, 'random')
    assert [(band['from'], band['to'], band['stage']) for band in got[0]['bands']] == [
        (1, 4, 'tp1-dflash-n16'), (8, 16, 'tp1-autoregressive')]
    assert got[0]['bands'][0]['sglang_args'][-1] == '--speculative-num-draft-tokens=16'
    assert method_flags(got[0]['bands'][1]['sglang_args']) == '(none: autoregressive)'
    assert method_flags(got[0]['bands'][0]['sglang_args']) == '`--speculative-algorithm=DFLASH` `--speculative-num-draft-tokens=16`'


def test_schedule_adds_the_closed_loop_load_runs_and_an_all_runs_schedule():
    rows = [_row('tp1-autoregressive', 'autoregressive', 1, 100), _row('tp1-dflash-n16', 'dflash', 1, 300)]
    rows += [_row('tp1-autoregressive', 'autoregressive', 1, 100, 'gsm8k'), _row('tp1-dflash-n16', 'dflash', 1, 90, 'gsm8k')]
    ok = {'complete': True}
    load = {'tp1-autoregressive': {('random', 0.0, 32, float('inf')): {1: dict(ok, output_throughput=2000.0)}},
            'tp1-dflash-n16': {('random', 0.0, 32, float('inf')): {1: dict(ok, output_throughput=1500.0)}}}
    got = pays.schedule({'rows': rows, 'campaign': 'x'}, _host_data(load))
    by_run = dict((item['dataset'], item['bands']) for item in got)
    assert [(b['from'], b['to'], b['stage']) for b in by_run['random']] == [(1, 1, 'tp1-dflash-n16'), (32, 32, 'tp1-autoregressive')]
    assert [(b['from'], b['stage']) for b in by_run['gsm8k']] == [(1, 'tp1-autoregressive')]
    # over both runs at c=1: dflash's geometric mean of 3.0x and 0.9x is sqrt(2.7) > 1: dflash
    assert [(b['from'], b['stage']) for b in by_run['all']] == [(1, 'tp1-dflash-n16')]


def test_a_one_point_band_on_noise_joins_its_neighbours_and_a_real_change_stays():
    # DFlash leads at 1, 2 and 8; at 4 AR's mean is 2% higher but within the noise (sd 20 over 3 repeats): DFlash there
    cells = {1: {'ar': (100.0, 2.0, 3), 'dflash': (250.0, 2.0, 3)}, 2: {'ar': (190.0, 2.0, 3), 'dflash': (300.0, 2.0, 3)},
             4: {'ar': (510.0, 20.0, 3), 'dflash': (500.0, 20.0, 3)}, 8: {'ar': (600.0, 5.0, 3), 'dflash': (900.0, 5.0, 3)}}
    assert pays.steady_best(cells) == [(1, 'dflash'), (2, 'dflash'), (4, 'dflash'), (8, 'dflash')]
    # AR clearly faster at 4: a band of its own
    cells[4] = {'ar': (700.0, 5.0, 3), 'dflash': (500.0, 5.0, 3)}
    assert pays.steady_best(cells) == [(1, 'dflash'), (2, 'dflash'), (4, 'ar'), (8, 'dflash')]
    # a change that lasts is taken where the means say, noisy or not: the best at 4 and at 8 is AR
    cells[4] = {'ar': (510.0, 20.0, 3), 'dflash': (500.0, 20.0, 3)}
    cells[8] = {'ar': (900.0, 5.0, 3), 'dflash': (600.0, 5.0, 3)}
    assert pays.steady_best(cells) == [(1, 'dflash'), (2, 'dflash'), (4, 'ar'), (8, 'ar')]
    # one repeat each (no interval): the point estimates decide
    single = dict((c, dict((k, (v[0], None, 1)) for k, v in cell.items())) for c, cell in cells.items())
    single[8] = {'ar': (600.0, None, 1), 'dflash': (900.0, None, 1)}
    assert pays.steady_best(single) == [(1, 'dflash'), (2, 'dflash'), (4, 'ar'), (8, 'dflash')]


def test_pareto_front_keeps_the_points_no_other_beats_on_both():
    points = [(100, 10), (200, 12), (150, 15), (300, 30), (250, 40), (300, 35)]
    assert pays.pareto_front(points) == [(100, 10), (200, 12), (300, 30)]


def _requests(tpots_ms, ttft_s=0.1, tokens=11):
    return [{'warmup': False, 'success': True, 'ttft_s': ttft_s, 'latency_s': ttft_s + tpot / 1e3 * (tokens - 1),
             'output_tokens': tokens, 'itl_s': [tpot / 1e3] * (tokens - 1)} for tpot in tpots_ms]


def test_run_goodput_counts_the_requests_that_meet_the_slo():
    slo = {'tpot_ms': {'p': 95.0, 'max': 40.0}}
    raw = {1: _requests([10, 20, 50, 60]) + [{'warmup': True, 'success': True, 'ttft_s': 0.1, 'latency_s': 9.0, 'output_tokens': 11}],
           2: _requests([10, 30, 35, 45])}
    results = {1: {'complete': True, 'duration_s': 2.0, 'output_throughput': 22.0, 'energy_j': 100.0},
               2: {'complete': True, 'duration_s': 4.0, 'output_throughput': 11.0, 'energy_j': None}}
    got = pays.run_goodput(results, raw, slo)
    assert (got['repeats'], got['completed'], got['good'], got['slo_attainment']) == (2, 8, 5, 5 / 8.0)
    assert got['request_goodput'] == pytest.approx((2 / 2.0 + 3 / 4.0) / 2)  # the mean of the repeats' good req/s
    assert got['token_goodput'] == pytest.approx((2 * 11 / 2.0 + 3 * 11 / 4.0) / 2)
    assert got['goodput_tokens_per_j'] == pytest.approx(22 / 100.0)  # the repeat with energy only
    assert got['output_throughput'] == pytest.approx(16.5)
    assert got['slo_passed'] is False and got['binding'] == 'tpot_ms'  # each repeat's p95 TPOT is above 40 ms


def test_run_goodput_without_raw_records_says_so():
    got = pays.run_goodput({1: {'complete': True, 'duration_s': 1.0}}, {}, {'ttft_ms': {'p': 95.0, 'max': 1.0}})
    assert got['good'] is None and 'raw records' in got['note']


def test_the_load_family_names_are_not_the_grids():
    names = ['result-gsm8k-t0-c16-r1.json', 'result-gsm8k-t0-c16-q2-r1.json', 'result-gsm8k-t0-c32-qinf-r2.json',
             'result-gsm8k-t0.7-c16-q0.5-r1.json', 'search-gsm8k-t0-concurrency.json', 'search-gsm8k-t0.7-request_rate.json']
    assert list(find_runs(names, synth.LAYOUT)) == [('gsm8k', 0.0, 16)]
    load = find_load_runs(names, synth.LAYOUT)
    assert sorted(load) == [('gsm8k', 0.0, 16, 2.0), ('gsm8k', 0.0, 32, float('inf')), ('gsm8k', 0.7, 16, 0.5)]
    assert load[('gsm8k', 0.0, 32, float('inf'))][2] == ('result-gsm8k-t0-c32-qinf-r2.json', 'raw-gsm8k-t0-c32-qinf-r2.jsonl')
    assert find_searches(names, synth.LAYOUT) == [('gsm8k', 0.0, 'concurrency', 'search-gsm8k-t0-concurrency.json'),
                                                  ('gsm8k', 0.7, 'request_rate', 'search-gsm8k-t0.7-request_rate.json')]


# --- end to end --------------------------------------------------------------------------------------------------

SLO = {'ttft_ms': {'p': 95.0, 'max': 2000.0}, 'tpot_ms': {'p': 95.0, 'max': 40.0}}
MATRIX = [(1, 'autoregressive', {}), (1, 'dflash', {'num_draft_tokens': 16}), (1, 'ddtree', {'budget': 64, 'topk': 4})]
RATES = (2.0, 8.0)
CROSS_C = 32
# At the extra closed-loop concurrency the method's throughput over AR's (the synthetic model's speedup does not
# fall with concurrency; this one does): dflash falls below 1.0 there.
CLOSED_LOOP = {'autoregressive': (1000.0, 1040.0), 'dflash': (500.0, 540.0)}
SEARCHES = {'autoregressive': (8, 6, 10), 'dflash': (16, 12, 20)}
SEARCH_POINT = 6


def _load_result(stage_dir, stage, rng, dataset, concurrency, rate, repeat, model_concurrency):
    names = {'dataset': dataset, 'temperature': temperature_tag(0.0), 'concurrency': concurrency,
             'rate': 'inf' if rate == float('inf') else '%g' % rate, 'repeat': repeat}
    records = synth.request_records(rng, stage['method'], stage['params'], stage['tp'], model_concurrency, 8, 64, 32)
    raw = 'raw-{dataset}-t{temperature}-c{concurrency}-q{rate}-r{repeat}.jsonl'.format(**names)
    (stage_dir / raw).write_text(''.join(json.dumps(record) + '\n' for record in records))
    measured = [r for r in records if not r['warmup']]
    row = from_builtin(records, max(r['end_s'] for r in measured), concurrency, 8, 64, 32, seed=1, raw_file=raw, stage=stage['id'])
    row.update(request_rate=None if rate == float('inf') else rate, burstiness=1.0, repeat=repeat, repeats=2)
    return 'result-{dataset}-t{temperature}-c{concurrency}-q{rate}-r{repeat}.json'.format(**names), row


def make_load_campaign(root, host='ct200', campaign='pays'):
    """A campaign with the load family: the grid (c 1, 4, 16, two repeats), an SLO on TTFT and TPOT, open-loop runs at
    RATES, a closed-loop run at CROSS_C (AR and DFlash only), and a concurrency search of AR and DFlash."""
    stages = synth.make_campaign(root, host, campaign, MATRIX, concurrency=(1, 4, 16), repeats=2)
    folder = Path(root) / host / campaign
    rng = random.Random(7)
    for stage in stages:
        stage['load'] = {'request_rates': list(RATES), 'burstiness': 1.0, 'max_concurrency': 16, 'slo': SLO, 'search': None,
                         'crossover_concurrency': [CROSS_C]}
        stage['argv'] = ['--model-path=/models/Qwen3.6-27B', '--tp-size=1', '--port=%d' % stage['port']] + (
            ['--speculative-algorithm=%s' % stage['method'].upper()] if stage['method'] != 'autoregressive' else [])
        stage_dir = folder / stage['id']
        for rate in RATES:
            for repeat in (1, 2):
                name, row = _load_result(stage_dir, stage, rng, 'random', 16, rate, repeat, int(rate))
                synth.write_json(stage_dir / name, row)
        if stage['method'] in CLOSED_LOOP:
            for repeat, throughput in enumerate(CLOSED_LOOP[stage['method']], 1):
                name, row = _load_result(stage_dir, stage, rng, 'random', CROSS_C, float('inf'), repeat, CROSS_C)
                synth.write_json(stage_dir / name, dict(row, output_throughput=throughput))
        search_files = []
        if stage['method'] == 'autoregressive':  # a point of AR's search: c=6 closed loop, a run no other stage has
            for repeat in (1, 2):
                name, row = _load_result(stage_dir, stage, rng, 'random', SEARCH_POINT, float('inf'), repeat, SEARCH_POINT)
                synth.write_json(stage_dir / name, row)
                search_files.append(name)
            search_files.append('result-random-t0-c16-q8-r1.json')  # a planned load run the search measured too
        if stage['method'] in SEARCHES:
            capacity, low, high = SEARCHES[stage['method']]
            synth.write_json(stage_dir / 'search-random-t0-concurrency.json', {
                'schema_version': 1, 'stage': stage['id'], 'dataset': 'random', 'temperature': 0.0, 'slo': SLO,
                'kind': 'concurrency', 'lo': 1, 'hi': 64, 'resolution': 1, 'max_runs': 40, 'max_seconds': 1800.0,
                'points': [{'value': capacity, 'passed': True, 'sure': 'unsure', 'runs': 2, 'result_files': search_files}],
                'capacity': capacity, 'capacity_low': low, 'capacity_high': high, 'binding': 'tpot_ms',
                'bound_by': 'resolution', 'runs': 12, 'seconds': 300.0})
    synth.write_json(folder / synth.LAYOUT['campaign'], {'campaign': campaign, 'host': host, 'stages': stages})
    return stages


@pytest.fixture(name='campaign', scope='module')
def fixture_campaign(tmp_path_factory):
    pytest.importorskip('matplotlib')
    root = tmp_path_factory.mktemp('pays') / 'results'
    make_load_campaign(root)
    out = root.parent / 'report'
    made = generate(str(root), 'pays', str(out))
    return {'root': root, 'out': out, 'made': made}


def _independent_goodput(records, duration):
    """Good requests of a run counted here: TTFT <= 2000 ms and (latency - TTFT) / (tokens - 1) <= 40 ms."""
    done = [r for r in records if not r['warmup'] and r['success']]
    good = [r for r in done if r['ttft_s'] * 1e3 <= 2000.0 and (r['latency_s'] - r['ttft_s']) / (r['output_tokens'] - 1) * 1e3 <= 40.0]
    return len(done), len(good), len(good) / duration


def test_results_slo_csv_has_each_runs_goodput(campaign):
    rows = report_helpers.csv_rows(campaign['out'] / 'results-slo.csv')
    kinds = sorted(set((row['stage'], row['kind'], row['concurrency'], row['request_rate']) for row in rows))
    assert ('tp1-autoregressive', 'grid', '16', 'inf') in kinds and ('tp1-dflash-n16', 'load', '16', '8') in kinds
    assert ('tp1-dflash-n16', 'load', '32', 'inf') in kinds and ('tp1-ddtree-b64-k4', 'load', '32', 'inf') not in kinds
    # a run only the search measured is a search run; a planned load run the search also measured stays a load run
    assert ('tp1-autoregressive', 'search', '6', 'inf') in kinds and ('tp1-autoregressive', 'load', '16', '8') in kinds
    data = read_host(str(campaign['root']), 'ct200', 'pays')
    entry = next(e for e in data['stages'] if e['stage']['id'] == 'tp1-autoregressive')
    for row in rows:
        if row['stage'] != 'tp1-autoregressive' or row['kind'] != 'grid':
            continue
        run = ('random', 0.0, int(row['concurrency']))
        counts = [_independent_goodput(entry['slo_raw'][run][r], entry['results'][run][r]['duration_s']) for r in (1, 2)]
        assert int(row['completed']) == sum(c[0] for c in counts) and int(row['good']) == sum(c[1] for c in counts)
        assert float(row['request_goodput']) == pytest.approx(sum(c[2] for c in counts) / 2)
    ar = dict((row['concurrency'], row) for row in rows if row['stage'] == 'tp1-autoregressive' and row['kind'] == 'grid')
    # the model's AR TPOT: 20 ms at c=1, 20 * 2.8 = 56 ms at c=16 (above the SLO's 40)
    assert float(ar['1']['slo_attainment']) == 1.0 and ar['1']['slo_passed'] == 'true'
    assert float(ar['16']['slo_attainment']) == 0.0 and ar['16']['slo_passed'] == 'false' and ar['16']['binding'] == 'tpot_ms'
    assert all(row['slo'] == 'TTFT p95 ≤ 2000 ms, TPOT p95 ≤ 40 ms' for row in rows)


def test_capacity_csv_has_the_gain_over_ar(campaign):
    rows = dict((row['stage'], row) for row in report_helpers.csv_rows(campaign['out'] / 'capacity.csv'))
    assert sorted(rows) == ['tp1-autoregressive', 'tp1-dflash-n16']
    dflash = rows['tp1-dflash-n16']
    assert (dflash['capacity'], dflash['baseline_stage'], dflash['bound_by'], dflash['binding']) == (
        '16', 'tp1-autoregressive', 'resolution', 'tpot_ms')
    assert (float(dflash['gain']), float(dflash['gain_low']), float(dflash['gain_high'])) == (2.0, 1.2, pytest.approx(20 / 6.0))
    assert float(rows['tp1-autoregressive']['gain']) == 1.0


def test_crossover_csv_locates_the_fall_with_the_load_runs(campaign):
    made = campaign['made']['report']
    rows = dict((row['stage'], row) for row in report_helpers.csv_rows(campaign['out'] / 'crossover.csv'))
    grid = dict((row['concurrency'], row) for row in made['rows'] if row['stage'] == 'tp1-dflash-n16')
    ratio = fieller(CLOSED_LOOP['dflash'], CLOSED_LOOP['autoregressive'])
    s16, s32 = grid[16]['speedup'], ratio['ratio']
    assert s16 > 1.0 > s32
    expected = 16 * 2 ** ((s16 - 1.0) / (s16 - s32))
    assert rows['tp1-dflash-n16']['status'] == 'crosses' and float(rows['tp1-dflash-n16']['concurrency']) == pytest.approx(expected)
    assert rows['tp1-dflash-n16']['points'] == '4' and rows['tp1-dflash-n16']['max_measured'] == '32'
    # DDTree has no closed-loop run at 32: it pays at every concurrency of the grid
    assert (rows['tp1-ddtree-b64-k4']['status'], rows['tp1-ddtree-b64-k4']['max_measured']) == ('pays', '16')


def test_schedule_json_bands(campaign):
    schedule = json.loads((campaign['out'] / 'schedule.json').read_text())
    assert [(item['host'], item['tp'], item['dataset']) for item in schedule] == [('ct200', 1, 'random')]
    # c=32 (DDTree did not measure it) and AR's search point c=6 are no fair match: left out
    assert [(band['from'], band['to'], band['stage']) for band in schedule[0]['bands']] == [(1, 16, 'tp1-ddtree-b64-k4')]
    assert schedule[0]['bands'][0]['sglang_args'][-1] == '--speculative-algorithm=DDTREE'


def test_report_md_has_the_section_and_the_files_and_plots_are_there(campaign):
    md = (campaign['out'] / 'report.md').read_text()
    section = md[md.index('## Where speculation pays'):]
    for needle in ('### Capacity at SLO', '2.00× [1.20, 3.33]', '### Crossover', 'c ≈ ', 'pays at every load measured (up to c=16)',
                   '### SLO attainment and goodput', '### Schedule', '`--speculative-algorithm=', 'vLLM', 'DistServe'):
        assert needle in section, needle
    files = sorted(path.name for path in campaign['out'].iterdir() if path.is_file())
    for name in ('results-slo.csv', 'capacity.csv', 'crossover.csv', 'schedule.json', 'goodput-vs-rate-ct200-tp1-random-t0.png',
                 'speedup-vs-concurrency-ct200-tp1-random-t0.png', 'pareto-ct200-tp1-random-t0.png'):
        assert name in files
        if name.endswith('.png'):
            assert '(%s)' % name in section
    assert 'ct200 TP1 DFlash n=16: capacity at SLO concurrency 16, 2.00x AR' in campaign['made']['lines']
    doc = json.loads((campaign['out'] / 'results.json').read_text())
    assert sorted(doc['pays']) == ['baseline', 'capacity', 'crossover', 'pareto', 'schedule', 'slo_rows']


def test_a_second_report_of_the_same_results_changes_nothing(campaign):
    again = generate(str(campaign['root']), 'pays', str(campaign['out']))
    assert again['changed'] == []


def test_a_campaign_without_the_load_family_has_no_pays(tmp_path):
    synth.make_campaign(tmp_path / 'results', 'h', 'plain', MATRIX[:2])
    made = generate(str(tmp_path / 'results'), 'plain', str(tmp_path / 'report'), plots=False)
    assert 'pays' not in made['report']
    assert not set(path.name for path in (tmp_path / 'report').iterdir()) & {'results-slo.csv', 'capacity.csv', 'crossover.csv', 'schedule.json'}
    assert 'Where speculation pays' not in (tmp_path / 'report' / 'report.md').read_text()


# --- golden ------------------------------------------------------------------------------------------------------

GOLDEN = Path(__file__).resolve().parent / 'golden' / 'pays'
GOLDEN_FILES = ('results-slo.csv', 'capacity.csv', 'crossover.csv', 'schedule.json')


def _golden_outputs(out):
    md = (out / 'report.md').read_text()
    start = md.index('## Where speculation pays')
    section = md[start:md.index('\n## ', start + 1) + 1]
    outputs = {name: (out / name).read_bytes() for name in GOLDEN_FILES}
    outputs['report-pays-section.md'] = section.encode('utf-8')
    return outputs


def test_the_pays_files_are_the_golden_ones(campaign):
    """The section and the files of the load campaign byte for byte against golden/pays/; after a deliberate change,
    SPECDEC_REPORT_GOLDEN=write python -m pytest tests/unit/plugins/plugin_utils/test_report_pays.py rewrites them
    (review their diff)."""
    outputs = _golden_outputs(campaign['out'])
    if os.environ.get('SPECDEC_REPORT_GOLDEN') == 'write':
        GOLDEN.mkdir(parents=True, exist_ok=True)
        for name, data in outputs.items():
            (GOLDEN / name).write_bytes(data)
    assert sorted(path.name for path in GOLDEN.iterdir()) == sorted(outputs)
    for name, data in outputs.items():
        assert data == (GOLDEN / name).read_bytes(), '%s differs from golden/pays/%s' % (name, name)


def test_report_tex_has_the_capacity_and_crossover_tables_and_compiles(campaign, tmp_path):
    tex = (campaign['out'] / 'report.tex').read_text()
    assert r'\label{tab:pays-ct200-capacity}' in tex and r'\label{tab:pays-ct200-crossover}' in tex
    assert r'2.00 {\tiny[1.20, 3.33]}' in tex and r'pays up to $c=16$' in tex and '≤' not in tex
    report_helpers.compile_tex(campaign['out'] / 'report.tex', tmp_path)


def test_a_load_plan_with_nothing_measured_says_so():
    from ansible_collections.specdec.bench.plugins.plugin_utils.report.markdown_pays import pays_markdown  # pylint: disable=import-outside-toplevel
    empty = {'slo_rows': [], 'capacity': [], 'crossover': [], 'schedule': [], 'pareto': [], 'baseline': 'AR'}
    lines = pays_markdown({'pays': empty})
    assert lines[0] == '## Where speculation pays' and 'no run measured' in lines[-2]
    assert pays_markdown({'pays': None}) == [] and pays_markdown({}) == []


def test_a_schedule_checked_against_the_rows_it_came_from_holds(campaign, tmp_path):
    schedule = json.loads((campaign['out'] / 'schedule.json').read_text())
    made = generate(str(campaign['root']), 'pays', str(tmp_path / 'check'), plots=False, schedule_check=schedule,
                    schedule_name='schedule.json')
    check = made['report']['schedule_check']
    assert check['passed'] and check['entries'] == 1 and check['checked'] == 0  # one band: no edge
    assert json.loads((tmp_path / 'check' / 'schedule-check.json').read_text())['passed'] is True
    assert '## Schedule check' in (tmp_path / 'check' / 'report.md').read_text()


def test_a_schedule_whose_band_loses_at_its_edge_fails_the_check(campaign, tmp_path):
    schedule = json.loads((campaign['out'] / 'schedule.json').read_text())
    ddtree = dict(schedule[0]['bands'][0], to=4)
    ar = dict(ddtree, **{'from': 16, 'to': 16, 'stage': 'tp1-autoregressive', 'method': 'autoregressive', 'params': {}})
    made = generate(str(campaign['root']), 'pays', str(tmp_path / 'check'), plots=False,
                    schedule_check=[dict(schedule[0], bands=[ddtree, ar])])
    check = made['report']['schedule_check']
    verdicts = dict((edge['concurrency'], edge['verdict']) for edge in check['edges'])
    assert verdicts[4] in ('holds', 'tie') and verdicts[16] == 'reversed' and not check['passed']
    text = (tmp_path / 'check' / 'report.md').read_text()
    assert '**failed**: 1 comparison(s) reversed' in text
