# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, data: where speculation pays. Pure functions of read.read_host's load family (a stage's
'load', 'load_raw', 'slo_raw' and 'searches') and of the grid's rows; docs/report.md "Where speculation pays" defines
each figure and names its reference.

- per run (grid and load runs of a stage whose plan has an SLO, stage['load']['slo']), its measured repeats: SLO
  attainment (good / completed requests), request goodput (good requests / duration: vLLM benchmark_serving's
  --goodput), token goodput (good requests' output tokens / duration: DistServe, inference-perf) and good tokens per
  joule, each from the raw records by module_utils/_stage/slo.py's goodput; completed and good summed over the
  repeats, attainment pooled, the rates the means over the repeats; the run's value of each SLO metric at its
  percentile, the mean over the repeats, and whether the run meets the SLO (slo.evaluate_point).
- capacity at SLO: each search file's capacity (the largest concurrency or request rate whose point met the SLO), its
  interval [capacity_low, capacity_high] (load_search.py), the binding SLO and why the search stopped; the gain over AR
  (the same host, TP, dataset, temperature and kind) is capacity / AR's, its interval [low / AR's high, high / AR's low].
- crossover: per host, TP, dataset, temperature and speculative setting, the concurrency where the serving speedup
  (output throughput over AR's) falls to 1.0 (crossover()), from the grid's rows (speedup and Fieller interval) and the
  load family's closed-loop runs that the setting and its AR baseline both measured (Fieller over the repeats).
- schedule: per host, TP, dataset and temperature, per concurrency that every setting measured, the setting with the
  highest output throughput (AR included), a concurrency whose best differs from the setting on both sides of it
  taking that setting when its best is not significantly faster there (Fieller's 95% interval reaches 1.0:
  steady_best), merged into bands of consecutive concurrencies with
  the same best; with two runs or more an
  'all' schedule ranks by the geometric mean over the runs of the throughput over AR's.
pays_report puts it together; None when no stage has an SLO, a search, load files or a load plan (the report is then
what it was).
"""

from __future__ import annotations

import math
import os

from ansible_collections.specdec.bench.plugins.module_utils._common import finite, temperature_tag
from .keys import BASELINE_METHOD, METHOD_NAMES
from .read import interference_of, LOAD_RESULT, MEASURED, slo_of
from .rows import setting_label
from .stats import fieller, fieller_moments


# The columns of results-slo.csv, capacity.csv and crossover.csv.
SLO_KEYS = (
    'host', 'campaign', 'stage', 'method', 'setting', 'tp', 'dataset', 'temperature', 'concurrency', 'request_rate',
    'burstiness', 'kind', 'repeats', 'slo', 'completed', 'good', 'slo_attainment', 'request_goodput', 'token_goodput',
    'goodput_tokens_per_j', 'output_throughput', 'ttft_ms', 'itl_ms', 'tpot_ms', 'e2e_ms', 'slo_passed', 'slo_sure',
    'binding', 'note')
CAPACITY_KEYS = (
    'host', 'campaign', 'stage', 'method', 'setting', 'tp', 'dataset', 'temperature', 'kind', 'slo', 'capacity',
    'capacity_low', 'capacity_high', 'binding', 'bound_by', 'runs', 'seconds', 'points', 'baseline_stage', 'gain',
    'gain_low', 'gain_high', 'file')
CROSSOVER_KEYS = (
    'host', 'campaign', 'tp', 'dataset', 'temperature', 'stage', 'method', 'setting', 'baseline_stage', 'status',
    'concurrency', 'low', 'high', 'max_measured', 'points')


METRIC_LABELS = {'ttft_ms': 'TTFT', 'itl_ms': 'ITL', 'tpot_ms': 'TPOT', 'e2e_ms': 'E2E'}


INF = float('inf')


def _slo_module():
    """module_utils/_stage/slo.py, imported when an SLO is to be evaluated (a report without one never needs it)."""
    from ansible_collections.specdec.bench.plugins.module_utils._stage import slo  # pylint: disable=import-outside-toplevel
    return slo


def slo_label(slo):
    """'TTFT p95 ≤ 2000 ms, TPOT p95 ≤ 60 ms': an SLO as the tables name it; None without one."""
    if not slo:
        return None
    order = [metric for metric in METRIC_LABELS if metric in slo]
    return ', '.join('%s p%g ≤ %g ms' % (METRIC_LABELS[metric], slo[metric].get('p', 95.0), slo[metric]['max']) for metric in order)


def rate_text(rate):
    """A request rate as the files and tables write it: 'inf' (closed loop), else '%g'."""
    return 'inf' if rate is None or rate == INF else '%g' % rate


def _mean(values):
    values = [value for value in values if value is not None]
    return math.fsum(values) / len(values) if values else None


def _complete(results):
    """[(repeat, result)] of the complete results of a run, by repeat."""
    return [(repeat, result) for repeat, result in sorted((results or {}).items()) if result is not None and result.get('complete')]


def run_goodput(results, raw, slo):
    """One run's SLO figures (the module docstring) from its results {repeat: result} and raw records {repeat:
    [record]}; the repeats counted are the complete ones with raw records. {'repeats', 'completed', 'good',
    'slo_attainment', 'request_goodput', 'token_goodput', 'goodput_tokens_per_j', 'output_throughput', <metric>,
    'slo_passed', 'slo_sure', 'binding', 'note'}."""
    slo_lib = _slo_module()
    used = [(result, raw[repeat]) for repeat, result in _complete(results) if (raw or {}).get(repeat) is not None]
    out = {'repeats': len(used), 'completed': None, 'good': None, 'slo_attainment': None, 'request_goodput': None,
           'token_goodput': None, 'goodput_tokens_per_j': None, 'output_throughput': None, 'slo_passed': None,
           'slo_sure': None, 'binding': None, 'note': None}
    out.update(dict.fromkeys(METRIC_LABELS))
    if not used:
        out['note'] = 'no complete repeat with its raw records: no goodput'
        return out
    figures = [slo_lib.goodput(records, slo, result.get('duration_s'), result.get('energy_j')) for result, records in used]
    completed, good = sum(item['completed'] for item in figures), sum(item['good'] for item in figures)
    point = slo_lib.evaluate_point([records for _result, records in used], slo)
    out.update(completed=completed, good=good, slo_attainment=good / float(completed) if completed else None,
               output_throughput=_mean(result.get('output_throughput') for result, _records in used),
               slo_passed=point['passed'], slo_sure=point['sure'], binding=point['binding'])
    for key in ('request_goodput', 'token_goodput', 'goodput_tokens_per_j'):
        out[key] = _mean(item[key] for item in figures)
    for metric, item in point['percentiles'].items():
        out[metric] = item['mean']
    return out


def _stage_base(host, campaign, stage):
    return {'host': host, 'campaign': campaign, 'stage': stage['id'], 'method': stage.get('method'),
            'setting': setting_label(stage.get('method'), stage.get('params')), 'tp': stage.get('tp')}


def _search_files(entry):
    """The result files the stage's searches measured (their points' result_files): those runs are 'search' runs."""
    names = set()
    for search in entry.get('searches') or []:
        for point in search.get('points') or []:
            names.update(os.path.basename(name) for name in point.get('result_files') or [] if isinstance(name, str))
    return names


def slo_rows(host_data, campaign):
    """results-slo.csv's rows (SLO_KEYS): per host, stage with an SLO and run (grid, then load), run_goodput."""
    rows = []
    for data in host_data:
        for entry in data['stages']:
            slo = slo_of(entry['stage'])
            if not slo or (entry.get('status') or {}).get('status') != MEASURED or interference_of(entry):
                continue  # an interference stage is a control measurement, no result row (rows.py)
            base = _stage_base(data['host'], campaign, entry['stage'])
            searched = _search_files(entry)
            grid_rate = finite((entry['stage'].get('workload') or {}).get('request_rate')) or INF  # 'inf' or a scalar rate
            runs = [(run + (grid_rate,), entry['results'][run], (entry.get('slo_raw') or {}).get(run), 'grid') for run in sorted(entry['results'])]
            for run in sorted(entry.get('load') or {}):
                results = entry['load'][run]
                kind = 'search' if not _planned_load(entry['stage'], run) and any(_load_name(run, repeat) in searched for repeat in results) else 'load'
                runs.append((run, results, (entry.get('load_raw') or {}).get(run), kind))
            for (dataset, temperature, concurrency, rate), results, raw, kind in runs:
                row = dict(base, dataset=dataset, temperature=temperature, concurrency=concurrency, request_rate=rate_text(rate),
                           kind=kind, slo=slo_label(slo))
                first = next((result for _repeat, result in _complete(results)), None) or {}
                row['burstiness'] = first.get('burstiness') if rate != INF else None
                row.update(run_goodput(results, raw or {}, slo))
                rows.append(row)
    return rows


def _planned_load(stage, run):
    """True when the plan's load names the run: an open-loop rate of its list at max_concurrency, or a closed-loop
    concurrency of crossover_concurrency (a search point at the same file is that run)."""
    load = stage.get('load') or {}
    _dataset, _temperature, concurrency, rate = run
    if rate == INF:
        return concurrency in (load.get('crossover_concurrency') or [])
    return rate in (load.get('request_rates') or []) and concurrency == load.get('max_concurrency')


def _load_name(run, repeat):
    """The load family's result file name of a run's repeat (read.LOAD_RESULT)."""
    dataset, temperature, concurrency, rate = run
    return LOAD_RESULT.format(dataset=dataset, temperature=temperature_tag(temperature), concurrency=concurrency, rate=rate_text(rate), repeat=repeat)


def capacity_gain(mine, base):
    """(gain, low, high) of a capacity over its AR baseline's: capacity / AR's, the interval [low / AR's high,
    high / AR's low] (each end None when a figure is missing or its denominator 0)."""
    def ratio(numerator, denominator):
        return numerator / float(denominator) if numerator is not None and denominator else None
    if base is None:
        return None, None, None
    return (ratio(mine.get('capacity'), base.get('capacity')), ratio(mine.get('capacity_low'), base.get('capacity_high')),
            ratio(mine.get('capacity_high'), base.get('capacity_low')))


def capacity_rows(host_data, campaign, baseline_method=BASELINE_METHOD):
    """capacity.csv's rows (CAPACITY_KEYS): one per search file, with the gain over the AR search of the same host,
    TP, dataset, temperature and kind (on the same GPUs when several AR stages have one)."""
    rows = []
    for data in host_data:
        for entry in data['stages']:
            for search in entry.get('searches') or []:
                stage = entry['stage']
                row = _stage_base(data['host'], campaign, stage)
                row.update(dataset=search.get('dataset'), temperature=search.get('temperature'), kind=search['kind'],
                           slo=slo_label(search.get('slo') or slo_of(stage)), points=len(search.get('points') or []),
                           file=search.get('file'), gpus=tuple(stage.get('gpus') or ()))
                row.update((key, search.get(key)) for key in ('capacity', 'capacity_low', 'capacity_high', 'binding', 'bound_by',
                                                              'runs', 'seconds'))
                rows.append(row)
    for row in rows:
        bases = [item for item in rows if item['method'] == baseline_method and all(
            item[key] == row[key] for key in ('host', 'tp', 'dataset', 'temperature', 'kind'))]
        if len(bases) > 1:
            bases = [item for item in bases if item['gpus'] == row['gpus']]
        base = bases[0] if len(bases) == 1 else None
        row['baseline_stage'] = base['stage'] if base else None
        row['gain'], row['gain_low'], row['gain_high'] = capacity_gain(row, base)
        if base is row:  # the baseline over itself is 1 by definition: no interval
            row['gain_low'] = row['gain_high'] = None
    for row in rows:
        row.pop('gpus')
    return rows


def _log_point(c1, s1, c2, s2):
    """The concurrency where a series falls to 1.0 between (c1, s1 >= 1) and (c2, s2 < 1), linear in log c."""
    share = (s1 - 1.0) / (s1 - s2)
    return math.exp(math.log(c1) + share * (math.log(c2) - math.log(c1)))


def _falls(points, key):
    """Where the series points[key] falls to 1.0: between its first point below 1.0 and the point before it (linear
    in log concurrency); None when no point has the value, when its first point is below 1.0 already, or when it never
    falls below 1.0 (unbounded: outside what was measured)."""
    series = [(point['concurrency'], point[key]) for point in points if point.get(key) is not None]
    if not series or series[0][1] < 1.0:
        return None
    for (c1, s1), (c2, s2) in zip(series, series[1:]):
        if s2 < 1.0:
            return _log_point(c1, s1, c2, s2)
    return None


def crossover(points):
    """Where the serving speedup falls to 1.0, from points [{'concurrency', 'speedup', 'ci_low', 'ci_high'}] (any order).

    {'status': 'crosses' (it falls below 1.0 within the points) | 'pays' (every point >= 1.0) | 'never' (the first is
    below 1.0) | None (no point), 'concurrency': the c where the speedup falls to 1.0 (linear in log c between the last
    point >= 1 and the next < 1; None unless it crosses), 'low': where ci_low falls to 1.0, 'high': where ci_high falls
    to 1.0 (the same interpolation; the speedup falls between them; None when unbounded within the points),
    'max_measured': the largest c, 'points': n}."""
    points = sorted((point for point in points if point.get('speedup') is not None), key=lambda point: point['concurrency'])
    out = {'status': None, 'concurrency': None, 'low': _falls(points, 'ci_low'), 'high': _falls(points, 'ci_high'),
           'max_measured': points[-1]['concurrency'] if points else None, 'points': len(points)}
    if not points:
        return out
    if points[0]['speedup'] < 1.0:
        out['status'] = 'never'
    elif any(point['speedup'] < 1.0 for point in points):
        out.update(status='crosses', concurrency=_falls(points, 'speedup'))
    else:
        out['status'] = 'pays'
    return out


def _closed_loop(host_data):
    """{(host, stage): {(dataset, temperature, concurrency): [output throughput per complete repeat]}} of the load
    family's closed-loop runs (rate inf)."""
    out = {}
    for data in host_data:
        for entry in data['stages']:
            for (dataset, temperature, concurrency, rate), results in sorted((entry.get('load') or {}).items()):
                values = [result['output_throughput'] for _repeat, result in _complete(results) if result.get('output_throughput')]
                if rate == INF and values:
                    out.setdefault((data['host'], entry['stage']['id']), {})[(dataset, temperature, concurrency)] = values
    return out


def crossover_points(report, host_data, baseline_method=BASELINE_METHOD):
    """{(host, tp, dataset, temperature, stage): {'row': a row of the stage, 'baseline_stage', 'points': [...]}} of every
    speculative setting: the grid rows' speedup and Fieller interval per concurrency, and the closed-loop load runs
    both it and its grid baseline (AR) measured at a concurrency the grid has not (fieller over the repeats' output
    throughputs)."""
    groups, baselines = {}, {}
    for row in report['rows']:
        if row['status'] != MEASURED or row['speedup'] is None or row['method'] == baseline_method:
            continue
        group = groups.setdefault((row['host'], row['tp'], row['dataset'], row['temperature'], row['stage']),
                                  {'row': row, 'baseline_stage': row['baseline_stage'], 'points': []})
        group['points'].append({'concurrency': row['concurrency'], 'speedup': row['speedup'], 'ci_low': row['speedup_ci_low'],
                                'ci_high': row['speedup_ci_high'], 'source': 'grid'})
        baselines[(row['host'], row['stage'])] = row['baseline_stage']
    loads = _closed_loop(host_data)
    for (host, _tp, dataset, temperature, stage), group in groups.items():
        mine, base = loads.get((host, stage)) or {}, loads.get((host, baselines[(host, stage)])) or {}
        have = set(point['concurrency'] for point in group['points'])
        for (run_dataset, run_temperature, concurrency), values in sorted(mine.items()):
            ar = base.get((run_dataset, run_temperature, concurrency))
            if (run_dataset, run_temperature) != (dataset, temperature) or concurrency in have or not ar:
                continue
            interval = fieller(values, ar) or {}
            group['points'].append({'concurrency': concurrency, 'speedup': _mean(values) / _mean(ar), 'ci_low': interval.get('low'),
                                    'ci_high': interval.get('high'), 'source': 'load'})
        group['points'].sort(key=lambda point: point['concurrency'])
    return groups


def crossover_rows(report, host_data, baseline_method=BASELINE_METHOD):
    """crossover.csv's rows (CROSSOVER_KEYS) with each one's 'series' (its points, for the plot and results.json)."""
    rows = []
    for (host, tp, dataset, temperature, stage), group in crossover_points(report, host_data, baseline_method).items():
        row = {'host': host, 'campaign': report['campaign'], 'tp': tp, 'dataset': dataset, 'temperature': temperature,
               'stage': stage, 'method': group['row']['method'], 'setting': group['row']['setting'],
               'baseline_stage': group['baseline_stage']}
        row.update(crossover(group['points']))
        row['series'] = group['points']
        rows.append(row)
    return rows


def _flags(stage):
    """The stage's server command line as the plan has it: its argv, else its sglang_args flattened ('--flag=value')."""
    if isinstance(stage.get('argv'), list):
        return list(stage['argv'])
    return [item if isinstance(item, str) else '%s=%s' % tuple(item[:2]) for item in stage.get('sglang_args') or []]


def _bands(best, stages):
    """Consecutive concurrencies with the same best stage merged: [{'from', 'to', 'stage', 'setting', 'method',
    'params', 'sglang_args'}]; best: [(concurrency, (host, stage id))] sorted."""
    bands = []
    for concurrency, key in best:
        if bands and bands[-1]['_key'] == key:
            bands[-1]['to'] = concurrency
            continue
        stage = stages[key]
        bands.append({'_key': key, 'from': concurrency, 'to': concurrency, 'stage': stage['id'],
                      'setting': setting_label(stage.get('method'), stage.get('params')), 'method': stage.get('method'),
                      'params': dict(stage.get('params') or {}), 'sglang_args': _flags(stage)})
    for band in bands:
        band.pop('_key')
    return bands


def schedule(report, host_data, baseline_method=BASELINE_METHOD):
    """schedule.json: [{'host', 'tp', 'dataset', 'temperature', 'bands'}] (the module docstring); dataset 'all' and
    temperature None for the schedule over every run of a host and TP."""
    stages = dict(((data['host'], entry['stage']['id']), entry['stage']) for data in host_data for entry in data['stages'])
    loads = _closed_loop(host_data)
    measured = {}  # (host, tp) -> {(dataset, temperature): {concurrency: {stage: throughput}}}
    for row in report['rows']:
        if row['status'] == MEASURED and row['output_throughput'] is not None:
            runs = measured.setdefault((row['host'], row['tp']), {})
            runs.setdefault((row['dataset'], row['temperature']), {}).setdefault(row['concurrency'], {})[row['stage']] = (
                row['output_throughput'], row.get('output_throughput_sd'), row.get('repeats'))
    for (host, stage_id), runs in loads.items():
        tp = stages[(host, stage_id)].get('tp')
        if (host, tp) not in measured:
            continue
        for (dataset, temperature, concurrency), values in runs.items():
            cell = measured[(host, tp)].setdefault((dataset, temperature), {}).setdefault(concurrency, {})
            cell.setdefault(stage_id, (_mean(values), _sd(values), len(values)))
    out = []
    for (host, tp), runs in sorted(measured.items(), key=lambda item: (item[0][0], item[0][1] or 0)):
        for run, cells in list(runs.items()):  # a concurrency that only some settings measured (a search's point) is no fair match
            settings = set().union(*cells.values())
            runs[run] = dict((c, cell) for c, cell in cells.items() if set(cell) == settings)
        for (dataset, temperature), cells in sorted(runs.items()):
            best = [(c, (host, stage_id)) for c, stage_id in steady_best(cells)]
            out.append({'host': host, 'tp': tp, 'dataset': dataset, 'temperature': temperature, 'bands': _bands(best, stages)})
        if len(runs) > 1:
            best = _best_over_runs(host, runs, stages, baseline_method)
            if best:
                out.append({'host': host, 'tp': tp, 'dataset': 'all', 'temperature': None, 'bands': _bands(best, stages)})
    return out


def _sd(values):
    """The sample standard deviation (ddof=1) of values; None for fewer than two."""
    if len(values) < 2:
        return None
    mean = sum(values) / len(values)
    return math.sqrt(sum((value - mean) ** 2 for value in values) / (len(values) - 1))


def _not_faster(top, current):
    """True when top (mean, sd, n) is not significantly faster than current: Fieller's 95% interval of top / current
    reaches down to 1.0 (None without an interval: the point estimates decide)."""
    interval = fieller_moments(top[0], top[1], top[2], current[0], current[1], current[2])
    return interval is not None and interval['low'] is not None and interval['low'] <= 1.0


def steady_best(cells):
    """[(concurrency, stage)]: per concurrency (cells {c: {stage: (mean, sd, n)}}) the setting with the highest mean
    output throughput, except that a concurrency whose best differs from the same setting on both sides of it takes
    that setting when its own best is not significantly faster there (_not_faster): no one-point band on noise."""
    order = sorted(cells)
    best = [max(sorted(cells[c]), key=lambda stage_id, c=c: cells[c][stage_id][0]) for c in order]
    for index in range(1, len(order) - 1):
        around, cell = best[index - 1], cells[order[index]]
        if best[index + 1] == around != best[index] and around in cell and _not_faster(cell[best[index]], cell[around]):
            best[index] = around
    return list(zip(order, best))


def _best_over_runs(host, runs, stages, baseline_method):
    """[(concurrency, (host, stage))]: per concurrency that every run measured with AR, of the settings measured in every
    run there, the one with the highest geometric mean over the runs of its throughput over AR's."""
    concurrencies = set.intersection(*[set(cells) for cells in runs.values()])
    best = []
    for concurrency in sorted(concurrencies):
        cells = [cells[concurrency] for cells in runs.values()]
        bases = [next((value for stage_id, value in cell.items() if stages[(host, stage_id)].get('method') == baseline_method), None)
                 for cell in cells]
        common = set.intersection(*[set(cell) for cell in cells])
        if None in bases or not common:
            continue
        score = dict((stage_id, sum(math.log(cell[stage_id][0] / base[0]) for cell, base in zip(cells, bases))) for stage_id in common)
        best.append((concurrency, (host, max(sorted(score), key=score.get))))
    return best


def pareto_points(report, host_data):
    """Every measured run's (output throughput, median TPOT): the grid rows and the load family's runs (means over
    their complete repeats), [{'host', 'tp', 'dataset', 'temperature', 'stage', 'method', 'setting', 'concurrency',
    'request_rate', 'output_throughput', 'median_tpot_ms'}]."""
    keys = ('host', 'tp', 'dataset', 'temperature', 'stage', 'method', 'setting', 'concurrency', 'output_throughput', 'median_tpot_ms')
    points = [dict(((key, row[key]) for key in keys), request_rate='grid')
              for row in report['rows'] if row['status'] == MEASURED and None not in (row['output_throughput'], row['median_tpot_ms'])]
    for data in host_data:
        for entry in data['stages']:
            base = _stage_base(data['host'], report['campaign'], entry['stage'])
            for (dataset, temperature, concurrency, rate), results in sorted((entry.get('load') or {}).items()):
                used = [result for _repeat, result in _complete(results)]
                throughput, tpot = _mean(r.get('output_throughput') for r in used), _mean(r.get('median_tpot_ms') for r in used)
                if throughput is not None and tpot is not None:
                    points.append(dict(base, dataset=dataset, temperature=temperature, concurrency=concurrency,
                                       request_rate=rate_text(rate), output_throughput=throughput, median_tpot_ms=tpot))
    for point in points:
        point.pop('campaign', None)
    return points


def pareto_front(points):
    """The points no other point beats on both throughput (higher) and median TPOT (lower), by throughput ascending:
    [(output_throughput, median_tpot_ms)] of points [(output_throughput, median_tpot_ms)]."""
    front, best = [], INF
    for throughput, tpot in sorted(points, key=lambda point: (-point[0], point[1])):
        if tpot < best:
            front.append((throughput, tpot))
            best = tpot
    return sorted(front)


def has_load(host_data):
    """True when a stage of any host has an SLO, a search, load files, or a load plan with rates or crossover
    concurrencies: the report then has the section "Where speculation pays"."""
    for data in host_data:
        for entry in data['stages']:
            load = entry['stage'].get('load') or {}
            if entry.get('load') or entry.get('searches') or load.get('slo') or load.get('request_rates') or load.get('crossover_concurrency'):
                return True
    return False


def pays_report(report, host_data, baseline_method=BASELINE_METHOD):
    """report['pays']: {'slo_rows', 'capacity', 'crossover', 'schedule', 'pareto', 'baseline'}; None when has_load is False."""
    if not has_load(host_data):
        return None
    return {'slo_rows': slo_rows(host_data, report['campaign']), 'capacity': capacity_rows(host_data, report['campaign'], baseline_method),
            'crossover': crossover_rows(report, host_data, baseline_method), 'schedule': schedule(report, host_data, baseline_method),
            'pareto': pareto_points(report, host_data), 'baseline': METHOD_NAMES.get(baseline_method, baseline_method)}
