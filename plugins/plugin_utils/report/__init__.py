# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report: collected results of one or more hosts -> rows, Markdown, LaTeX, CSV, JSON, plots, comparison.

Controller side, the engine of the specdec.bench.report action: generate. The package has one axis per module.
Data (no text of the documents):
- schema: each collected file checked against the schema of its kind;
- read: the collected folders (<results>/<host>/<campaign>/, laid out as module_utils/_common.py RESULTS_LAYOUT
  names it; result files found by the layout's pattern), a bad file skipped and listed;
- keys: the columns of each file and the names of the methods and parameters;
- rows: rows per host, stage, dataset, temperature and concurrency (aggregated over the repeats), each repeat's row,
  the per-category rows, the datasets, the best settings;
- stats: the intervals (numpy and scipy, imported when used);
- compare: a row against its baseline (speedup, energy ratio, noisy) and one campaign against another;
- why: per run the acceptance in full, the papers' and Spec-Bench's speedups, the verify-cost factor, cache hits;
- pays: with the load family (SLOs, load runs, capacity searches), per run the SLO attainment and goodput, the
  capacity at SLO with its gain over AR, the crossover concurrency where the speedup falls to 1.0, the schedule;
- time: where a host's wall time went; interference: the stages re-run alone against the stages they re-run;
  checkpoints: tau and speedup against the training step of a checkpoint sweep, the best checkpoint;
- tables: the table builder both documents share (the per-setting groups, the papers' tables as cells and columns);
  figures: the plots as plain data.
Renderers (all the text): text (the words both documents share), markdown, markdown_sections, markdown_why and
markdown_pays (report.md, compare-<c>.md), latex, latex_sections, latex_why and latex_pays (report.tex), csv (results.csv and the
other CSV files, results.json, evaluation.json, schedule.json), plots (PNG, matplotlib).
Here: write_set, the only writer, which writes the files as a set and rewrites a file only when its content changed,
so a second run with the same results changes nothing.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from ansible_collections.specdec.bench.plugins.module_utils._common import ID_MAX_LEN, ID_PATTERN, RESULTS_LAYOUT, atomic_write, is_id
from ansible_collections.specdec.bench.plugins.plugin_utils import sandbox
from .checkpoints import checkpoint_report, EVALUATION
from .compare import compare_rows
from .csv import all_rows, render_csv, render_evaluation, render_json, render_schedule
from .keys import BASELINE_METHOD, CATEGORY_KEYS, COMPARE_KEYS, DEFAULT_NOISY_CV, REPEAT_KEYS
from .latex import render_latex
from .lossless import ACCURACY_KEYS, CODE_KINDS, COMPARE_ACCURACY_KEYS, compare_accuracy, EQUALITY_KEYS, execute_code_of, stage_references
from .markdown import render_comparison_markdown, render_markdown
from .pays import CAPACITY_KEYS, CROSSOVER_KEYS, pays_report, SLO_KEYS
from .plots import PLOT_CACHE, read_plot_cache, render_plot_cache, write_plots
from .read import find_hosts, MEASURED, read_host
from .rows import build_report
from .schedule_check import check_schedule
from .tables import named_runs
from .why import csv_rows as why_csv_rows, WHY_KEYS


# The files of the layout that the report reads.
LAYOUT_KEYS = ('campaign', 'status', 'result', 'server_info', 'gpus')


class ReportError(ValueError):
    """Bad input to the report: the message names the field and what is allowed."""


def check_id(field, value):
    if not is_id(value):
        raise ReportError('%s is %r; allowed: a campaign id matching %s, at most %d characters' % (field, value, ID_PATTERN, ID_MAX_LEN))
    return value


def check_layout(layout):
    """The layout's file names that the report reads, each a file name; result with its {concurrency}."""
    for key in LAYOUT_KEYS:
        if not isinstance(layout.get(key), str) or not layout[key]:
            raise ReportError('layout.%s is %r; allowed: a file name (module_utils/_common.py RESULTS_LAYOUT)' % (key, layout.get(key)))
    if '{concurrency}' not in layout['result']:
        raise ReportError('layout.result is %r; allowed: a file name with {concurrency}' % layout['result'])
    return layout


def _file_bytes(path):
    try:
        with open(path, 'rb') as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def write_set(folder, outputs):
    """Write the report's files {name: bytes} into folder as a set; the names whose content changed, in order.

    The changed files are first all written into a temporary folder inside folder, then renamed into place, so a
    failure while writing leaves the previous set as it was, never a new results.csv beside an old report.md.
    A file that already holds its bytes is not touched.
    """
    os.makedirs(folder, exist_ok=True)
    changed = [name for name, data in outputs.items() if _file_bytes(os.path.join(folder, name)) != data]
    if not changed:
        return []
    staging = tempfile.mkdtemp(prefix='.report-', dir=folder)
    try:
        for name in changed:
            atomic_write(os.path.join(staging, name), outputs[name])
        for name in changed:
            os.replace(os.path.join(staging, name), os.path.join(folder, name))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return changed


def check_noisy_cv(value):
    """The noisy threshold: a coefficient of variation, a number in (0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ReportError('noisy_cv is %r; allowed: a coefficient of variation, a number above 0 and at most 1 (0.05: 5%%)' % (value,))
    return float(value)


def code_runner(host_data):
    """The sandbox's runner (program -> passed) when a measured stage's plan sets accuracy.execute_code and has a code
    set with references; None otherwise. ReportError when the sandbox is needed and missing (sandbox.find_bwrap's
    message), before anything is written."""
    entries = dict(((data['host'], entry['stage']['id']), entry) for data in host_data for entry in data['stages'])
    if not any(execute_code_of(entries[(host, stage)]) and any(ref['kind'] in CODE_KINDS for ref in refs.values())
               for (host, stage, _dataset), refs in stage_references(host_data).items()):
        return None
    try:
        sandbox.find_bwrap()
    except sandbox.SandboxError as exc:
        raise ReportError(str(exc)) from exc
    return lambda program: sandbox.run_program(program)['passed']


def generate(results_root, campaign, output_dir, layout=None, hosts=None, compare_to=None, baseline_method=BASELINE_METHOD,
             plots=True, noisy_cv=DEFAULT_NOISY_CV, schedule_check=None, schedule_name=None):
    """Read, build and write the report. Returns {'files': {name: path}, 'changed': [names], 'report': report,
    'plots_skipped': reason or None, 'lines': summary lines, 'skipped_files': [{'path', 'reason'}] of this campaign
    and of compare_to, paths relative to results_root, 'evaluation': the path of evaluation.json or None}. The files
    are written as a set (write_set). evaluation.json is written only when a row has a step (a checkpoint sweep); an
    earlier one in output_dir is removed when none has. results-slo.csv, capacity.csv, crossover.csv and schedule.json
    are written only when the campaign has the load family and they have rows (pays.py).

    layout: the file names of the results folders, RESULTS_LAYOUT when None. noisy_cv: the coefficient of variation
    over the repeats above which a row is marked noisy. schedule_check: an earlier report's schedule (schedule.json's
    list) that this campaign measured again at its band edges (schedule_check.py; schedule_name names it in the
    report): report['schedule_check'], schedule-check.json and report.md's "Schedule check".
    """
    check_id('campaign', campaign)
    noisy_cv = check_noisy_cv(noisy_cv)
    if compare_to is not None:
        check_id('compare_to', compare_to)
    layout = check_layout(RESULTS_LAYOUT if layout is None else layout)
    if not os.path.isdir(results_root):
        raise ReportError('results_dir %s is not a folder; allowed: the folder collect fills (<host>/<campaign>/)' % results_root)
    chosen = hosts
    if hosts is None:
        hosts = find_hosts(results_root, campaign)
        if not hosts:
            raise ReportError('results_dir %s holds no host with campaign %s; allowed: a campaign collected there' % (results_root, campaign))
    host_data = [read_host(results_root, host, campaign, layout) for host in hosts]
    report = build_report(host_data, campaign, baseline_method, noisy_cv, code_runner(host_data))
    checkpoints = checkpoint_report(report, host_data)
    if checkpoints is not None:  # a checkpoint sweep: results.json, report.md and report.tex show it
        report['checkpoints'] = checkpoints
    pays = pays_report(report, host_data, baseline_method)
    if pays is not None:  # the load family (SLOs, load runs, searches): results.json, report.md and its own files show it
        report['pays'] = pays
    if schedule_check is not None:  # this campaign re-measured a schedule at its band edges
        report['schedule_check'] = dict(check_schedule(schedule_check, report['rows']), schedule=schedule_name)
    # Everything is made in memory first and written as a set at the end: a failure on the way writes nothing.
    outputs, files = {}, {}

    def write(name, data):
        files[name] = os.path.join(output_dir, name)
        outputs[name] = data if isinstance(data, bytes) else data.encode('utf-8')

    def keep(name):
        files[name] = os.path.join(output_dir, name)

    plot_files, plots_skipped, cache = {}, None, None
    if plots:
        try:
            plot_files, cache = write_plots(report, output_dir, write, keep, read_plot_cache(output_dir))
        except ImportError as exc:
            cache = None
            plots_skipped = 'matplotlib is not importable on the controller (%s); pip install matplotlib for the plots' % exc
    else:
        plots_skipped = 'plots=false'
    write('results.csv', render_csv(all_rows(report)))
    write('results-repeats.csv', render_csv(report['repeats'], REPEAT_KEYS))
    write('results-categories.csv', render_csv(report['categories'], CATEGORY_KEYS))
    write('results-why.csv', render_csv(why_csv_rows(report), WHY_KEYS))
    write('results.json', render_json(report))
    for name, key, columns in (('results-equality.csv', 'equality', EQUALITY_KEYS), ('results-accuracy.csv', 'accuracy', ACCURACY_KEYS)):
        if (report.get('lossless') or {}).get(key):  # only where stages kept outputs
            write(name, render_csv(report['lossless'][key], columns))
    for name, key, columns in (('results-slo.csv', 'slo_rows', SLO_KEYS), ('capacity.csv', 'capacity', CAPACITY_KEYS),
                               ('crossover.csv', 'crossover', CROSSOVER_KEYS)):
        if (pays or {}).get(key):  # only with something to put in it: a campaign without the load family writes what it did
            write(name, render_csv(pays[key], columns))
    if (pays or {}).get('schedule'):
        write('schedule.json', render_schedule(pays['schedule']))
    if schedule_check is not None:
        write('schedule-check.json', render_schedule(report['schedule_check']))
    write('report.md', render_markdown(report, plot_files))
    write('report.tex', render_latex(report))
    evaluation = render_evaluation(report, _file_bytes(os.path.join(output_dir, EVALUATION)))
    if evaluation is not None:
        write(EVALUATION, evaluation)
    skipped = list(report['skipped_files'])
    if compare_to is not None:
        before_hosts = chosen if chosen is not None else find_hosts(results_root, compare_to)
        before_data = [read_host(results_root, host, compare_to, layout) for host in before_hosts]
        before = build_report(before_data, compare_to, baseline_method, noisy_cv, code_runner(before_data))
        skipped += before['skipped_files']
        rows = compare_rows(report['rows'], before['rows'], report['repeats'], before['repeats'])
        write('compare-%s.csv' % compare_to, render_csv(rows, COMPARE_KEYS))
        accuracy = compare_accuracy((report.get('lossless') or {}).get('accuracy'), (before.get('lossless') or {}).get('accuracy'))
        if accuracy:
            write('compare-%s-accuracy.csv' % compare_to, render_csv(accuracy, COMPARE_ACCURACY_KEYS))
        write('compare-%s.md' % compare_to, render_comparison_markdown(campaign, compare_to, rows, skipped, accuracy))
    if cache is not None:
        outputs[PLOT_CACHE] = render_plot_cache(cache)
    changed = [name for name in write_set(output_dir, outputs) if name != PLOT_CACHE]
    stale = os.path.join(output_dir, EVALUATION)
    if evaluation is None and os.path.isfile(stale):  # an earlier report of a sweep: this one has no checkpoint to name
        os.remove(stale)
        changed.append(EVALUATION)
    measured = sum(1 for row in report['rows'] if row['status'] == MEASURED)
    lines = ['campaign %s: %d host(s), %d row(s), %d measured, %d stage(s) not measured; report in %s' % (
        campaign, len(hosts), len(report['rows']), measured, len(report['not_measured']), os.path.join(output_dir, 'report.md'))]
    named = named_runs(report['rows'])
    for best in report['best']:
        lines.append('%s %sTP%s c=%s: best %s %.1f tok/s%s' % (
            best['host'], '%s T=%g ' % (best['dataset'], best['temperature']) if named else '', best['tp'], best['concurrency'],
            best['setting'], best['output_throughput'], ', %.2fx' % best['speedup'] if best['speedup'] is not None else ''))
    best = (report.get('checkpoints') or {}).get('best')
    if best is not None:
        overall = best['checkpoint']['overall']
        lines.append('%s TP%s %s: best checkpoint %s (step %s), overall speedup %.2fx%s' % (
            best['host'], best['tp'], best['setting'], best['checkpoint']['name'], best['checkpoint']['step'], overall['speedup'],
            ' [%.2f, %.2f]' % (overall['speedup_ci_low'], overall['speedup_ci_high']) if overall['speedup_ci_low'] is not None else ''))
    for row in (pays or {}).get('capacity') or []:
        lines.append('%s TP%s %s: capacity at SLO %s %s%s' % (
            row['host'], row['tp'], row['setting'], row['kind'], '%g' % row['capacity'] if row['capacity'] is not None else 'none',
            ', %.2fx %s' % (row['gain'], pays['baseline']) if row['gain'] is not None and row['baseline_stage'] != row['stage'] else ''))
    for item in skipped:
        lines.append('skipped %s: %s' % (item['path'], item['reason']))
    return {'files': files, 'changed': changed, 'report': report, 'plots_skipped': plots_skipped, 'lines': lines,
            'skipped_files': skipped, 'evaluation': files.get(EVALUATION)}
