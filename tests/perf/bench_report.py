"""Time to write a campaign report from 1,000 collected stages x 4 concurrencies, against just reading the files.

    .venv/bin/python tests/perf/bench_report.py [--runs 5] [--hosts 5] [--keep DIR] [--datasets gsm8k,mt-bench]
                                                [--temperatures 0,0.7] [--repeats 3]

The repeats' case (1,000 stages x 4 concurrencies x 3 datasets x 3 repeats, Spec-Bench's categories from its raw records):
    .venv/bin/python tests/perf/bench_report.py --datasets gsm8k,mt-bench,spec-bench --repeats 3 --runs 3

The results are synthetic but complete and laid out as bench_stage writes them (tests/unit/plugins/plugin_utils/
synthetic_results.py: status, result, raw records, server_info, GPU snapshot per stage, campaign.json per host):
5 hosts x TP 1/2/4/8 x (AR, DFlash, DDTree 12 budgets x 4 top-k) = 1,000 stages, concurrency 1/4/16/64
(--hosts 2: 31 budgets, 1,008 stages). The tables cost per stage; the plots per host and TP (one panel each).
--datasets / --temperatures: every stage runs those prompt sets at those temperatures (rows and plots multiply by
their count: one row per stage, dataset, temperature and concurrency); default: random prompts at T=0, as before.
--repeats N: every run measured N times (N result and raw files; a row aggregates them with its intervals, the
speedup with Fieller's); a dataset with categories (spec-bench) also has its raw records read for the per-category rows.
Each run is a fresh Python process, so imports (matplotlib included) are counted, and writes into a fresh folder.

  read      json.load of every file the report of campaign perf reads, the categorized sets' raw records line by
            line included (the floor: no report can do less; compare reads a second campaign as large)
  report    specdec.bench report without plots (rows, speedups, CSV, JSON, Markdown, LaTeX)
  plots     the same with the PNG plots (3 per host)
  compare   the same with plots and a comparison against a second campaign of the same size
  rerun     the report with plots again into the same folder (nothing changes, nothing is rewritten)

Medians of --runs runs, wall and CPU time (the CPU time of the process is what a busy machine does not inflate);
ratios against `read` measured in the same run. Target: under 3 s.
"""
import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / 'tests' / 'unit'))
sys.path.insert(0, str(REPO / 'tests' / 'unit' / 'plugins' / 'plugin_utils'))
import conftest  # noqa: E402,F401  pylint: disable=unused-import,wrong-import-position  # makes the collection importable
import synthetic_results as synth  # noqa: E402  pylint: disable=wrong-import-position

TPS = (1, 2, 4, 8)
TOPKS = (1, 2, 4, 8)
CONCURRENCY = (1, 4, 16, 64)
STAGES = 1000
# the budgets of the default 5 hosts (12 x 4 top-k + AR + DFlash = 50 stages per TP); fewer hosts sweep more budgets
BUDGETS = (4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 512)

CHILD = r'''
import json, os, sys, time
start, cpu = time.perf_counter(), time.process_time()
variant, root, out, tree, categorized = sys.argv[1:6]
categorized = [name for name in categorized.split(',') if name]
sys.path.insert(0, tree)
if variant == 'read':
    count = 0
    for current, _dirs, names in os.walk(root):
        if os.sep + 'perf' + os.sep not in current + os.sep:
            continue  # the campaign reported ('perf'), not the one compare reads beside it
        for name in names:
            if name.endswith('.json'):
                with open(os.path.join(current, name), 'rb') as handle:
                    json.loads(handle.read())
                count += 1
            elif name.endswith('.jsonl') and any(name.startswith('raw-%s-' % dataset) for dataset in categorized):
                with open(os.path.join(current, name), 'rb') as handle:
                    for line in handle.read().splitlines():
                        json.loads(line)
                count += 1
else:
    from ansible_collections.specdec.bench.plugins.plugin_utils.report import generate
    made = generate(root, 'perf', out, plots=variant != 'report', compare_to='perf-before' if variant == 'compare' else None)
    count = len(made['report']['rows'])
print('%.6f %.6f %d' % (time.perf_counter() - start, time.process_time() - cpu, count))
'''


def budgets_for(hosts):
    """Budgets so that hosts x TPs x (AR, DFlash, budgets x top-k) is about STAGES."""
    count = -(-(STAGES // hosts // len(TPS) - 2) // len(TOPKS))
    return BUDGETS if count == len(BUDGETS) else tuple(8 * i for i in range(1, count + 1))


def matrix(budgets=BUDGETS):
    stages = []
    for tp in TPS:
        stages.append((tp, 'autoregressive', {}))
        stages.append((tp, 'dflash', {'num_draft_tokens': 16}))
        for budget in budgets:
            for topk in TOPKS:
                stages.append((tp, 'ddtree', {'budget': budget, 'topk': topk}))
    return stages


def run_child(variant, root, out, tree, categorized=()):
    done = subprocess.run([sys.executable, '-c', CHILD, variant, str(root), str(out), tree, ','.join(categorized)],
                          check=True, capture_output=True, text=True)
    seconds, cpu, count = done.stdout.split()
    return float(seconds), float(cpu), int(count)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--runs', type=int, default=5)
    parser.add_argument('--hosts', type=int, default=5)
    parser.add_argument('--keep', help='make the results here and keep them')
    parser.add_argument('--datasets', help='comma-separated prompt set names (default: none, random prompts)')
    parser.add_argument('--temperatures', help='comma-separated temperatures (default: 0)')
    parser.add_argument('--repeats', type=int, default=1, help='measured repeats of every run (default: 1, one result as before)')
    args = parser.parse_args()
    datasets = args.datasets.split(',') if args.datasets else None
    temperatures = [float(t) for t in args.temperatures.split(',')] if args.temperatures else None
    runs_per_stage = len(datasets or [None]) * len(temperatures or [0])
    repeats = args.repeats if args.repeats > 1 else None
    categorized = [name for name in datasets or [] if name in synth.DATASET_CATEGORIES]
    work = pathlib.Path(args.keep or tempfile.mkdtemp(prefix='specdec-bench-report-'))
    root = work / 'results'
    tree = conftest._collection_tree()  # pylint: disable=protected-access
    began = time.perf_counter()
    budgets = budgets_for(args.hosts)
    for number in range(args.hosts):
        host = 'host%02d' % number
        for campaign, seed in (('perf', number), ('perf-before', 100 + number)):
            if not (root / host / campaign).exists():
                synth.make_campaign(root, host, campaign, matrix(budgets), concurrency=CONCURRENCY, num_prompts=4, input_len=64,
                                    output_len=8, seed=seed, datasets=datasets, temperatures=temperatures, repeats=repeats)
    stages = args.hosts * len(matrix(budgets))
    print('synthetic results: %d host(s), %d stages x %d run(s) x %d concurrencies x %d repeat(s) = %d rows of %d results, '
          '%d files (two campaigns), made in %.1f s' % (
              args.hosts, stages, runs_per_stage, len(CONCURRENCY), args.repeats, stages * runs_per_stage * len(CONCURRENCY),
              stages * runs_per_stage * len(CONCURRENCY) * args.repeats, sum(len(files) for _d, _s, files in os.walk(root)),
              time.perf_counter() - began))
    print('(each run is a fresh process; %s)' % ('files kept in %s' % work if args.keep else 'files removed afterwards'))
    variants = ('read', 'report', 'plots', 'compare', 'rerun')
    times = {variant: [] for variant in variants}
    cpus = {variant: [] for variant in variants}
    rows = {}
    for run in range(args.runs):
        for variant in variants:
            out = work / 'reports' / ('rerun' if variant == 'rerun' else '%s-%d' % (variant, run))
            if variant == 'rerun' and not out.exists():
                run_child('plots', root, out, tree, categorized)  # the first report, not timed
            seconds, cpu, count = run_child(variant, root, out, tree, categorized)
            times[variant].append(seconds)
            cpus[variant].append(cpu)
            rows[variant] = count
            if variant not in ('rerun',):
                shutil.rmtree(out, ignore_errors=True)
    floor = statistics.median(times['read'])
    cpu_floor = statistics.median(cpus['read'])
    print()
    print('load average at the end: %s' % ' '.join('%.1f' % value for value in os.getloadavg()))
    print()
    print('| variant | median s | min s | max s | vs read | median CPU s | CPU vs read | rows |')
    print('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
    for variant in variants:
        values = times[variant]
        print('| %s | %.3f | %.3f | %.3f | %.1fx | %.3f | %.1fx | %s |' % (
            variant, statistics.median(values), min(values), max(values), statistics.median(values) / floor,
            statistics.median(cpus[variant]), statistics.median(cpus[variant]) / cpu_floor,
            rows[variant] if variant != 'read' else '%d files' % rows[variant]))
    print()
    for variant in ('report', 'plots'):
        target = statistics.median(times[variant])
        print('target: %s for %d stages x %d concurrencies under 3 s: %s (median %.2f s wall, %.2f s CPU)' % (
            variant, stages, len(CONCURRENCY), 'met' if target < 3.0 else 'NOT met', target, statistics.median(cpus[variant])))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
