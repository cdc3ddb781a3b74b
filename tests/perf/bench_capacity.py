# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The capacity search against an exhaustive sweep, on the SGLang emulator: same capacity, fewer harness runs?

    .venv/bin/python tests/perf/bench_capacity.py [--max-concurrency 64] [--tpot-ms 60] [--p 95] [--budget 64]
                                                  [--prompts-per-client 2] [--input-len 128] [--output-len 32]
                                                  [--time-scale 0.2] [--concurrency 1,2,8] [--no-search]
                                                  [--rates 2,4,8,16] [--open-prompts 48] [--keep]

Per setting (autoregressive, DDTree B=<budget> k=4 of the sglang-ddtree-pr29907 build) one emulator
(tests/sim/sglang_emulator, the simulated CT200's GPU 1: an RTX PRO 6000, Qwen3.6-27B) on 127.0.0.1, and bench_run
(the module, as a process: the builtin harness, real HTTP, closed loop, seeded random prompts, one warm-up request)
for every run. On that one server:
- the exhaustive sweep: every concurrency 1..max (one repeat each, num_prompts = prompts-per-client x concurrency);
  each run judged by slo.evaluate_point on its raw records (plugins/module_utils/_stage/slo.py: the p-th percentile of
  TPOT, vLLM benchmark_serving's definition, against --tpot-ms of the modelled GPU, i.e. x the time scale in wall
  ms); the largest passing concurrency is its capacity;
- the capacity search (plugins/module_utils/_stage/load_search.search: bracket by doubling from 1, then bisect to
  resolution 1), each point a fresh run judged the same way;
- open loop: at each --rates (requests per second of the modelled GPU; Poisson arrivals from bench_run's seeded
  schedule, at most --max-concurrency in flight), TTFT p95 and TPOT: how latency grows with the offered load.
Then the table: each method's capacity from both and the harness runs each used; and the crossover (DDTree's output
throughput over AR's at the same concurrency falling to 1.0) from the sweep's every concurrency and from the
concurrencies both searches measured, by the report's own plugins/plugin_utils/report/pays.crossover (linear in
log c between the last point >= 1 and the next < 1), with the sweep's bracket (the concurrencies on either side).
One repeat per point (no medians to take: each figure is one run; the emulator's timing is deterministic up to its
scheduler's sleeps). SIM_SGLANG_TIME_SCALE scales every modelled delay alike, so the ratios hold at any scale, as
long as the host keeps up (--time-scale 0.2 is five times faster than the modelled GPU).
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(REPO, '.cache', 'collections')
sys.path.insert(0, COLLECTIONS)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_why import DRAFT, start  # noqa: E402 pylint: disable=wrong-import-position,import-error
from ansible_collections.specdec.bench.plugins.plugin_utils import sglang_build  # noqa: E402 pylint: disable=wrong-import-position
from ansible_collections.specdec.bench.plugins.module_utils._stage import load_search, slo  # noqa: E402 pylint: disable=wrong-import-position

try:
    from ansible_collections.specdec.bench.plugins.plugin_utils.report.pays import crossover  # noqa: E402 pylint: disable=wrong-import-position
    CROSSOVER_SOURCE = 'plugins/plugin_utils/report/pays.crossover'
except ImportError:  # part R's report not there yet: the same definition, here
    CROSSOVER_SOURCE = 'LOCAL log-linear interpolation (pays.crossover not importable)'

    def crossover(points):
        """Where the speedup falls to 1.0: linear in log c between the last point >= 1 and the next < 1."""
        points = sorted(points, key=lambda point: point['concurrency'])
        if not points:
            return {'status': None, 'concurrency': None}
        if points[0]['speedup'] < 1.0:
            return {'status': 'never', 'concurrency': None}
        for before, after in zip(points, points[1:]):
            if before['speedup'] >= 1.0 > after['speedup']:
                x0, x1 = math.log(before['concurrency']), math.log(after['concurrency'])
                share = (before['speedup'] - 1.0) / (before['speedup'] - after['speedup'])
                return {'status': 'crosses', 'concurrency': math.exp(x0 + share * (x1 - x0))}
        return {'status': 'pays', 'concurrency': None}


def settings(budget):
    """(label, server arguments, environment) of the two settings compared."""
    return [('AR', (), {}),
            ('DDTree B=%d k=4' % budget, ('--speculative-algorithm', 'DDTREE') + DRAFT +
             ('--speculative-ddtree-budget', str(budget), '--page-size', '1'), {'SGLANG_DDTREE_MAX_TOPK': '4'})]


def run_once(base, out_dir, concurrency, opts, rate=None):
    """One bench_run (one repeat) at a concurrency, closed loop, or open loop at a request rate (wall requests per
    second, Poisson arrivals, at most concurrency in flight, opts.open_prompts requests): (result row, raw records)."""
    options = dict(base_url=base, concurrency=concurrency, num_prompts=opts.prompts_per_client * concurrency, input_len=opts.input_len,
                   output_len=opts.output_len, seed=11, warmup_requests=1, output_dir=out_dir, stage='capacity', telemetry='off',
                   metrics=False)
    if rate is not None:
        options.update(request_rate=rate, burstiness=1.0, name_rate=True, num_prompts=opts.open_prompts)
    args = {'ANSIBLE_MODULE_ARGS': options}
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, 'args.json')
    with open(path, 'w', encoding='utf-8') as handle:
        json.dump(args, handle)
    env = dict(os.environ, PYTHONPATH=COLLECTIONS)
    done = subprocess.run([sys.executable, '-m', 'ansible_collections.specdec.bench.plugins.modules.bench_run', path],
                          env=env, capture_output=True, text=True, check=False, timeout=1800)
    result = json.loads(done.stdout)
    if result.get('failed'):
        raise SystemExit('bench_run failed at c=%d: %s' % (concurrency, result.get('msg')))
    (raw_path,) = glob.glob(os.path.join(out_dir, 'raw-*.jsonl'))
    with open(raw_path, encoding='utf-8') as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    return result['result'], records


def judged(row, records, target, scale):
    """A run as a search point: slo.evaluate_point over its one repeat (the SLO's max in wall ms: the modelled
    figure x the time scale), plus its throughput, TPOT and TTFT p95 in modelled ms (wall / scale)."""
    point = slo.evaluate_point([records], target)
    good = slo.measured(records)
    ttft = slo.percentile([slo.request_values(record)['ttft_ms'] for record in good], 95)
    return dict(point, runs=1, output_throughput=row['output_throughput'] * scale, ttft_p95_ms=ttft / scale,
                tpot=point['percentiles']['tpot_ms']['mean'] / scale)


def measure_setting(label, args, env, work, options, target, opts, concurrencies):
    """The sweep's points and the search's result for one setting, on one emulator."""
    proc, base = start(work, options, args, env, opts.time_scale)
    tag = label.split(' ', 1)[0]
    try:
        started = time.monotonic()
        sweep = {}
        for concurrency in concurrencies:
            measured = run_once(base, os.path.join(work, '%s-sweep-c%d' % (tag, concurrency)), concurrency, opts)
            sweep[concurrency] = judged(*measured, target, opts.time_scale)
        sweep_s = time.monotonic() - started
        found, search_s = None, 0.0
        if not opts.no_search:
            started = time.monotonic()

            def measure(value):
                row, records = run_once(base, os.path.join(work, '%s-search-c%d' % (tag, value)), value, opts)
                return judged(row, records, target, opts.time_scale)
            found = load_search.search(measure, 1, opts.max_concurrency, kind='concurrency', resolution=1, max_runs=40,
                                       max_seconds=1800.0, repeats=1)
            search_s = time.monotonic() - started
        open_loop = {}
        for rate in opts.rates:
            row, records = run_once(base, os.path.join(work, '%s-open-q%g' % (tag, rate)), opts.max_concurrency, opts,
                                    rate=rate / opts.time_scale)
            open_loop[rate] = judged(row, records, target, opts.time_scale)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {'sweep': sweep, 'sweep_s': sweep_s, 'search': found, 'search_s': search_s, 'open_loop': open_loop}


def largest_passing(sweep):
    """The sweep's capacity: the largest concurrency whose run passed (None if none did)."""
    passing = [concurrency for concurrency, point in sweep.items() if point['passed']]
    return max(passing) if passing else None


def noise_ms(data):
    """Run-to-run spread of the SLO metric: the largest |difference| of TPOT's p-th percentile (modelled ms) between the
    sweep's run and the search's run at a concurrency both measured (None if none)."""
    pairs = [abs(data['sweep'][point['value']]['tpot'] - point['tpot']) for point in (data['search'] or {}).get('points', [])
             if point['value'] in data['sweep'] and point['tpot'] is not None and data['sweep'][point['value']]['tpot'] is not None]
    return max(pairs) if pairs else None


def sweep_band(sweep, limit, noise):
    """The sweep's capacity as one run cannot tell it apart: (the last c before the first whose TPOT is within noise
    of the limit or above, the largest c whose TPOT is at most limit + noise)."""
    ordered = sorted(sweep)
    low = None
    for concurrency in ordered:
        tpot = sweep[concurrency]['tpot']
        if tpot is None or tpot > limit - noise:
            break
        low = concurrency
    highs = [c for c in ordered if sweep[c]['tpot'] is not None and sweep[c]['tpot'] <= limit + noise]
    return low, max(highs) if highs else None


def bracket(points):
    """The concurrencies either side of the first fall below 1.0 (the sweep's own interval), or None."""
    points = sorted(points, key=lambda point: point['concurrency'])
    for before, after in zip(points, points[1:]):
        if before['speedup'] >= 1.0 > after['speedup']:
            return before['concurrency'], after['concurrency']
    return None


def speedups(mine, base, concurrencies):
    """pays.crossover's points: the setting's output throughput over AR's at each concurrency both measured."""
    return [{'concurrency': c, 'speedup': mine[c]['output_throughput'] / base[c]['output_throughput'], 'ci_low': None, 'ci_high': None}
            for c in sorted(concurrencies) if c in mine and c in base]


def fmt(value, digits=1):
    return '-' if value is None else '%.*f' % (digits, value)


def report(measured, labels, opts, concurrencies):
    """Print the tables."""
    print('SLO: tpot_ms p%g <= %g ms of the modelled GPU (%g ms wall at time scale %g; slo.evaluate_point, one repeat a '
          'point). Times and throughputs below are the modelled GPU\'s (wall x or / the scale).\n'
          % (opts.p, opts.tpot_ms, opts.tpot_ms * opts.time_scale, opts.time_scale))
    print('| setting | capacity (sweep) | noise band (sweep) | runs (sweep) | capacity (search) | bound by | runs (search) | '
          'runs ratio | search points (c: pass/fail) | run-to-run TPOT noise ms | wall s sweep / search |')
    print('| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- | ---: | --- |')
    for label in labels:
        data = measured[label]
        found = data['search'] or {}
        runs = found.get('runs')
        path = ' '.join('%d:%s' % (point['value'], 'P' if point['passed'] else 'F') for point in found.get('points', []))
        noise = noise_ms(data)
        band = '-' if noise is None else '%s..%s' % sweep_band(data['sweep'], opts.tpot_ms, noise)
        print('| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %.0f / %.0f |' % (
            label, largest_passing(data['sweep']), band, len(data['sweep']), found.get('capacity', '-'), found.get('bound_by', '-'),
            '-' if runs is None else runs, '-' if runs is None else '1/%.1f' % (len(data['sweep']) / runs), path or '-',
            fmt(noise, 2), data['sweep_s'], data['search_s']))
    print('\n(noise band: from the last concurrency before the first whose TPOT is within the run-to-run noise of the limit, '
          'to the largest whose TPOT is at most limit + noise; the noise is the largest |TPOT difference| between the '
          'sweep\'s run and the search\'s run at the concurrencies both measured)')
    base, mine = measured[labels[0]], measured[labels[1]]
    every = speedups(mine['sweep'], base['sweep'], concurrencies)
    sweep_cross = crossover(every)
    searched = set(point['value'] for point in (base['search'] or {}).get('points', [])) & \
        set(point['value'] for point in (mine['search'] or {}).get('points', []))
    search_points = speedups(dict((p['value'], p) for p in (mine['search'] or {}).get('points', [])),
                             dict((p['value'], p) for p in (base['search'] or {}).get('points', [])), searched)
    search_cross = crossover(search_points)
    print('\nCrossover of %s over %s (output throughput ratio falls to 1.0; %s):\n' % (labels[1], labels[0], CROSSOVER_SOURCE))
    print('| from | points | status | crossover c | bracket (last >= 1, first < 1) |')
    print('| --- | ---: | --- | ---: | --- |')
    for name, points, cross in (('exhaustive sweep', every, sweep_cross), ('the searches\' common points', search_points, search_cross)):
        edges = bracket(points)
        print('| %s | %d | %s | %s | %s |' % (name, len(points), cross.get('status'), fmt(cross.get('concurrency')),
                                              '-' if edges is None else '%d..%d' % edges))
    print('\nPer concurrency (sweep): TPOT p%g ms, TTFT p95 ms, output tok/s, speedup' % opts.p)
    print('| c | %s TPOT | %s TTFT | %s tok/s | %s TPOT | %s TTFT | %s tok/s | speedup |' % ((labels[0],) * 3 + (labels[1],) * 3))
    print('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
    for point in every:
        c = point['concurrency']
        a, d = base['sweep'][c], mine['sweep'][c]
        print('| %d | %s | %s | %s | %s | %s | %s | %.2f |' % (
            c, fmt(a['tpot']), fmt(a['ttft_p95_ms'], 0), fmt(a['output_throughput'], 0),
            fmt(d['tpot']), fmt(d['ttft_p95_ms'], 0), fmt(d['output_throughput'], 0), point['speedup']))
    if opts.rates:
        print('\nOpen loop (Poisson arrivals at the rate, at most %d in flight, %d requests; modelled req/s and ms): '
              'TTFT p95 and TPOT p%g grow with the offered load' % (opts.max_concurrency, opts.open_prompts, opts.p))
        print('| rate req/s | %s TTFT p95 | %s TPOT | %s tok/s | %s TTFT p95 | %s TPOT | %s tok/s |' % ((labels[0],) * 3 + (labels[1],) * 3))
        print('| ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
        for rate in opts.rates:
            a, d = base['open_loop'][rate], mine['open_loop'][rate]
            print('| %g | %s | %s | %s | %s | %s | %s |' % (
                rate, fmt(a['ttft_p95_ms'], 0), fmt(a['tpot']), fmt(a['output_throughput'], 0),
                fmt(d['ttft_p95_ms'], 0), fmt(d['tpot']), fmt(d['output_throughput'], 0)))
    print('\none run per point; %d random prompts per client of %d tokens, %d new tokens each; emulator time scale %s'
          % (opts.prompts_per_client, opts.input_len, opts.output_len, opts.time_scale))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--max-concurrency', type=int, default=64)
    parser.add_argument('--concurrency', default=None, help='the sweep\'s concurrencies (default 1..max-concurrency)')
    parser.add_argument('--tpot-ms', type=float, default=60.0)
    parser.add_argument('--p', type=float, default=95.0)
    parser.add_argument('--budget', type=int, default=64)
    parser.add_argument('--prompts-per-client', type=int, default=2)
    parser.add_argument('--input-len', type=int, default=128)
    parser.add_argument('--output-len', type=int, default=32)
    parser.add_argument('--time-scale', type=float, default=0.2)
    parser.add_argument('--no-search', action='store_true')
    parser.add_argument('--rates', default='2,4,8,16', help='open-loop request rates of the modelled GPU (req/s), run after the search; '
                                                            'empty for none')
    parser.add_argument('--open-prompts', type=int, default=48)
    parser.add_argument('--keep', action='store_true', help='keep the runs\' folders (default: removed at the end)')
    opts = parser.parse_args()
    concurrencies = ([int(value) for value in opts.concurrency.split(',')] if opts.concurrency
                     else list(range(1, opts.max_concurrency + 1)))
    opts.rates = [float(value) for value in opts.rates.split(',') if value.strip()]
    target = {'tpot_ms': {'p': opts.p, 'max': opts.tpot_ms * opts.time_scale}}  # wall ms at this time scale
    work = tempfile.mkdtemp(prefix='specdec-capacity-')
    options = os.path.join(work, 'options')
    sglang_build.write_option_lists(options)
    measured, labels = {}, []
    for label, args, env in settings(opts.budget):
        labels.append(label)
        measured[label] = measure_setting(label, args, env, work, options, target, opts, concurrencies)
    report(measured, labels, opts, concurrencies)
    if opts.keep:
        print('runs kept in %s' % work)
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
