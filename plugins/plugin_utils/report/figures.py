# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, data: the plots as plain data (testable without matplotlib), drawn by plots.

plot_series and plot_figures: per host and run, throughput against concurrency and speedup and tau against the
DDTree budget (each method's best settings when there are more than MAX_THROUGHPUT_LINES), and with energy measured
tokens per joule against concurrency. paper_figures follow tables.paper_rows: per host and TP, speedup and tau per
dataset as grouped bars per method, and speedup against the DDTree budget with one line per dataset. figure_specs: a
checkpoint sweep's tau and speedup against the drafter's training step per host, TP and dataset. why.why_figures:
per host, TP, dataset and temperature with a budget sweep, both speedups, tau and the verify-cost factor. pays_figures
(with the load family, pays.py), per host, TP, dataset and temperature: goodput and SLO attainment against the request
rate per stage, the speedup against concurrency with its Fieller band and the crossover marked, and the Pareto front of
median TPOT against output throughput per method. Whiskers are the 95% intervals over the repeats (none with one repeat).
"""

from __future__ import annotations

import re

from ansible_collections.specdec.bench.plugins.module_utils._common import temperature_tag
from .checkpoints import figure_key as checkpoint_figure_key
from .keys import BASELINE_METHOD, METHOD_NAMES
from .pays import pareto_front
from .read import MEASURED
from .tables import figure_key, named_runs, paper_rows
from .why import why_figures


# The sweep parameter of the budget plots.
BUDGET_PARAM = 'budget'


def plot_series(rows, host, baseline_method=BASELINE_METHOD, run=None):
    """What the plots of one host show, as plain data (so it is testable without matplotlib).

    run: (dataset, temperature) to plot only that run's rows (None: every row of the host).
    {'tps': [...], 'budget': {tp: {(topk, concurrency): [(budget, speedup, tau)]}}, 'reference': {tp: {(setting,
    concurrency): (speedup, tau)}}, 'throughput': {tp: {setting: [(concurrency, tok/s)]}}, 'energy': {tp: {setting:
    [(concurrency, tokens per joule, ci low, ci high)]}} (the rows with energy only)}
    """
    measured = [r for r in rows if r['host'] == host and r['status'] == MEASURED and r['output_throughput'] is not None
                and (run is None or (r['dataset'], r['temperature']) == tuple(run))]
    series = {'tps': sorted(set(r['tp'] for r in measured if r['tp'] is not None)), 'budget': {}, 'reference': {}, 'throughput': {},
              'energy': {}}
    for row in measured:
        tp = row['tp']
        if row[BUDGET_PARAM] is not None:
            series['budget'].setdefault(tp, {}).setdefault((row['topk'], row['concurrency']), []).append(
                (row[BUDGET_PARAM], row['speedup'], row['accept_length']))
        elif row['method'] != baseline_method:
            series['reference'].setdefault(tp, {})[(row['setting'], row['concurrency'])] = (row['speedup'], row['accept_length'])
        series['throughput'].setdefault(tp, {}).setdefault(row['setting'], []).append((row['concurrency'], row['output_throughput']))
        if row.get('output_tokens_per_j') is not None:
            series['energy'].setdefault(tp, {}).setdefault(row['setting'], []).append(
                (row['concurrency'], row['output_tokens_per_j'], row.get('output_tokens_per_j_ci_low'),
                 row.get('output_tokens_per_j_ci_high')))
    for per_tp in series['budget'].values():
        for points in per_tp.values():
            points.sort(key=lambda point: point[0])
    for per_tp in list(series['throughput'].values()) + list(series['energy'].values()):
        for points in per_tp.values():
            points.sort(key=lambda point: point[0])
    return series


MAX_THROUGHPUT_LINES = 8


def _throughput_lines(per_setting, methods):
    """The settings drawn: all when there are at most MAX_THROUGHPUT_LINES, else the best one of each method.

    per_setting: {setting: [(concurrency, value, ...)]}; methods: {setting: method}. Best = the highest mean value.
    Returns [(setting, legend label)], the baseline first.
    """
    def mean(setting):
        points = per_setting[setting]
        return sum(point[1] for point in points) / len(points)
    ranked = sorted(per_setting, key=lambda setting: -mean(setting))
    if len(ranked) <= MAX_THROUGHPUT_LINES:
        return [(setting, setting) for setting in ranked]
    best, counts = {}, {}
    for setting in ranked:
        method = methods.get(setting)
        counts[method] = counts.get(method, 0) + 1
        best.setdefault(method, setting)
    return [(setting, '%s (best of %d)' % (setting, counts[method]) if counts[method] > 1 else setting)
            for method, setting in best.items()]


def _best_topk(points_by_key, index):
    """Of the top-k values swept at one TP, the one whose budget sweep reaches the highest value at any concurrency."""
    def peak(topk):
        return max([p[index] for key, points in points_by_key.items() if key[0] == topk for p in points if p[index] is not None]
                   or [float('-inf')])
    return max(sorted(set(key[0] for key in points_by_key), key=lambda k: k or 0), key=peak)


def plot_figures(report):
    """Every figure of the report as plain data: [(file name, (host, dataset, temperature, kind), spec)]; _draw turns a
    spec into a PNG.

    One set of figures per host and run (dataset, temperature), so no line mixes datasets; the file names carry the run
    (speedup_vs_budget-<host>-<dataset>-t<T>.png) unless every run of the report is random prompts at temperature 0.

    Against the budget (speedup, acceptance length), each concurrency is one line of one top-k (the one with the highest
    peak when several were swept, named in the panel's title); other speculative methods are dashed lines of the same
    colour. Against concurrency, every setting is a line, or each method's best one when there are more than
    MAX_THROUGHPUT_LINES. One panel per TP.
    """
    baseline_label = METHOD_NAMES.get(report['baseline_method'], report['baseline_method'])
    methods = dict((row['setting'], row['method']) for row in report['rows'])
    figures = []
    named = named_runs(report['rows'])
    for host in report['hosts']:
        runs = []
        for row in report['rows']:
            if row['host'] == host['host'] and (row['dataset'], row['temperature']) not in runs:
                runs.append((row['dataset'], row['temperature']))
        for run in runs:
            figures += _run_figures(report, host['host'], run, named, methods, baseline_label)
    return figures + paper_figures(report) + figure_specs(report) + why_figures(report) + pays_figures(report)


def _interval(cell, metric):
    """(mean, ci low, ci high) of a cell's metric; the ends are None without repeats."""
    if cell is None or cell.get(metric) is None:
        return None
    return (cell[metric], cell.get(metric + '_ci_low'), cell.get(metric + '_ci_high'))


def paper_figures(report):
    """The papers' figures as plain data, [(file name, figure_key(host, tp, kind), spec)], per table of paper_rows:

    'per_dataset': two panels, speedup and tau, each a group of bars per run (dataset, temperature) with one bar per
    speculative method at the setting the table chose (named above the bar), whiskers its 95% interval;
    'speedup_vs_budget_per_dataset': per run one line of speedup against the DDTree budget, at the run's concurrency
    and the top-k the table's chosen setting has, whiskers the speedup's interval. Only where a budget was swept.
    """
    baseline = report['baseline_method']
    baseline_label = METHOD_NAMES.get(baseline, baseline)
    figures = []
    for table in paper_rows(report):
        host, tp = table['host'], table['tp']
        safe = '%s-tp%s' % (re.sub('[^A-Za-z0-9._-]', '_', host), tp)
        runs = ['%s\nT=%g' % (row['dataset'], row['temperature']) for row in table['rows']]
        methods = [item for item in table['methods'] if item['method'] != baseline]
        panels = []
        for metric, label in (('speedup', 'speedup over %s' % baseline_label), ('accept_length', 'acceptance length τ')):
            bars = [(item['label'], [_interval(row['cells'].get(item['method']), metric) for row in table['rows']],
                     [(row['cells'].get(item['method']) or {}).get('choice') for row in table['rows']]) for item in methods]
            panels.append({'metric': metric, 'label': label, 'bars': bars})
        figures.append(('per_dataset-%s.png' % safe, figure_key(host, tp, 'per_dataset'), {
            'kind': 'per_dataset', 'runs': runs, 'panels': panels, 'baseline': baseline_label,
            'title': 'Speedup and τ per dataset, %s TP%s (campaign %s; best setting per method)' % (host, tp, report['campaign'])}))
        lines = _budget_lines(report, table)
        if lines:
            figures.append(('speedup_vs_budget_per_dataset-%s.png' % safe, figure_key(host, tp, 'speedup_vs_budget_per_dataset'), {
                'kind': 'budget_per_dataset', 'lines': lines, 'baseline': baseline_label,
                'x': sorted(set(point[0] for _label, points in lines for point in points)),
                'title': 'Speedup vs DDTree budget per dataset, %s TP%s (campaign %s)' % (host, tp, report['campaign'])}))
    return figures


def _budget_lines(report, table):
    """[(legend, [(budget, speedup, ci low, ci high)])] of one papers' table: per run the budget sweep of the method
    the table chose a budget for, at the chosen top-k and the run's concurrency."""
    lines = []
    for paper in table['rows']:
        cell = next((cell for cell in paper['cells'].values() if cell.get(BUDGET_PARAM) is not None), None)
        if cell is None:
            continue
        method = next(row['method'] for row in report['rows'] if row['stage'] == cell['stage'] and row['host'] == table['host'])
        points = sorted((row[BUDGET_PARAM], row['speedup'], row.get('speedup_ci_low'), row.get('speedup_ci_high'))
                        for row in report['rows']
                        if row['host'] == table['host'] and row['tp'] == table['tp'] and row['method'] == method
                        and row['status'] == MEASURED and row['speedup'] is not None and row[BUDGET_PARAM] is not None
                        and row['topk'] == cell['topk'] and (row['dataset'], row['temperature'], row['concurrency']) == (
                            paper['dataset'], paper['temperature'], paper['concurrency']))
        if points:
            topk = ', top-k %s' % cell['topk'] if cell['topk'] is not None else ''
            lines.append(('%s, T=%g (c=%s%s)' % (paper['dataset'], paper['temperature'], paper['concurrency'], topk), points))
    return lines


def _run_figures(report, name, run, named, methods, baseline_label):
    """The figures of one host and run (see plot_figures)."""
    figures = []
    series = plot_series(report['rows'], name, report['baseline_method'], run)
    safe = re.sub('[^A-Za-z0-9._-]', '_', name)
    suffix = ''
    if named:
        safe += '-%s-t%s' % (re.sub('[^A-Za-z0-9._-]', '_', run[0]), temperature_tag(run[1]))
        suffix = ', %s at T=%g' % (run[0], run[1])
    budget_tps = [tp for tp in series['tps'] if tp in series['budget']]
    for metric, index, label in (('speedup', 1, 'speedup over %s' % baseline_label), ('accept_length', 2, 'acceptance length τ')):
        if not budget_tps:
            break
        panels = []
        for tp in budget_tps:
            per_key = series['budget'][tp]
            topks = sorted(set(key[0] for key in per_key), key=lambda k: k or 0)
            topk = _best_topk(per_key, index)
            lines = []
            for concurrency in sorted(set(key[1] for key in per_key)):
                points = [(p[0], p[index]) for p in per_key.get((topk, concurrency), []) if p[index] is not None]
                references = [(setting, values[index - 1]) for (setting, ref_c), values in sorted(series['reference'].get(tp, {}).items())
                              if ref_c == concurrency and values[index - 1] is not None]
                lines.append((concurrency, points, references))
            title = '%s TP%s' % (name, tp)
            if topk is not None:
                title += ', top-k %s%s' % (topk, ' (best of %s)' % ', '.join(str(k) for k in topks) if len(topks) > 1 else '')
            budgets = sorted(set(point[0] for points in per_key.values() for point in points))
            panels.append({'tp': tp, 'title': title, 'x': budgets, 'lines': lines})
        figures.append(('%s_vs_budget-%s.png' % (metric, safe), (name, run[0], run[1], metric), {
            'kind': 'budget', 'metric': metric, 'label': label, 'baseline': baseline_label, 'panels': panels,
            'title': '%s vs DDTree budget (campaign %s%s)' % (label[0].upper() + label[1:], report['campaign'], suffix)}))
    if series['tps']:
        panels = []
        for tp in series['tps']:
            per_setting = series['throughput'].get(tp, {})
            panels.append({'tp': tp, 'title': '%s TP%s' % (name, tp),
                           'x': sorted(set(p[0] for points in per_setting.values() for p in points)),
                           'lines': [(legend, per_setting[setting], setting == baseline_label)
                                     for setting, legend in _throughput_lines(per_setting, methods)]})
        figures.append(('throughput_vs_concurrency-%s.png' % safe, (name, run[0], run[1], 'throughput'), {
            'kind': 'throughput', 'panels': panels,
            'title': 'Output throughput vs concurrency per method (campaign %s%s)' % (report['campaign'], suffix)}))
    energy_tps = [tp for tp in series['tps'] if series['energy'].get(tp)]
    if energy_tps:
        panels = []
        for tp in energy_tps:
            per_setting = series['energy'][tp]
            panels.append({'tp': tp, 'title': '%s TP%s' % (name, tp),
                           'x': sorted(set(p[0] for points in per_setting.values() for p in points)),
                           'lines': [(legend, per_setting[setting], setting == baseline_label)
                                     for setting, legend in _throughput_lines(per_setting, methods)]})
        figures.append(('tokens_per_joule_vs_concurrency-%s.png' % safe, (name, run[0], run[1], 'energy'), {
            'kind': 'energy', 'panels': panels,
            'title': 'Output tokens per joule vs concurrency per method (campaign %s%s)' % (report['campaign'], suffix)}))
    return figures


def figure_specs(report):
    """The checkpoint figures as plain data: [(file name, checkpoint_figure_key, spec)], one per host, TP and dataset: two panels,
    tau and speedup against the step, one line per setting, whiskers the 95% intervals where repeats exist, the
    baseline as the speedup 1.0 line."""
    data = report.get('checkpoints')
    if not data:
        return []
    baseline = METHOD_NAMES.get(report['baseline_method'], report['baseline_method'])
    figures = []
    for table in data['tables']:
        for dataset in table['datasets']:
            panels = []
            for metric, label in (('accept_length', 'acceptance length τ'), ('speedup', 'speedup over %s' % baseline)):
                lines = []
                for line in table['lines']:
                    points = [(entry['step'], entry['cells'][dataset][metric], entry['cells'][dataset].get(metric + '_ci_low'),
                               entry['cells'][dataset].get(metric + '_ci_high'))
                              for entry in line['checkpoints']
                              if dataset in entry['cells'] and entry['cells'][dataset].get(metric) is not None]
                    if points:
                        lines.append((line['setting'], points))
                panels.append({'metric': metric, 'label': label, 'lines': lines})
            safe = '-'.join(_safe(part) for part in (table['host'], 'tp%s' % table['tp'], dataset))
            figures.append(('checkpoints-%s.png' % safe, checkpoint_figure_key(table['host'], table['tp'], dataset), {
                'kind': 'checkpoints', 'panels': panels, 'baseline': baseline,
                'title': 'τ and speedup vs training step, %s TP%s, %s at T=%g, c=%s (campaign %s)' % (
                    table['host'], table['tp'], dataset, table['temperature'], table['concurrency'], report['campaign'])}))
    return figures


def _safe(text):
    return ''.join(char if char.isascii() and (char.isalnum() or char in '._-') else '_' for char in str(text))


def pays_figure_key(kind, host, tp, dataset, temperature):
    """The key of a figure of "Where speculation pays" ('goodput', 'speedup' or 'pareto') in write_plots' {key: file name}."""
    return ('pays', kind, host, tp, dataset, temperature)


def _pays_name(kind, host, tp, dataset, temperature):
    return '%s-%s.png' % (kind, '-'.join(_safe(part) for part in (host, 'tp%s' % tp, dataset, 't%s' % temperature_tag(temperature))))


def pays_figures(report):
    """The figures of "Where speculation pays" as plain data, [(file name, pays_figure_key, spec)], per host, TP, dataset
    and temperature: goodput-vs-rate (request goodput and SLO attainment against the offered request rate, one line per
    stage, the open-loop runs), speedup-vs-concurrency (one line per setting, its Fieller band, the crossover marked) and
    pareto (median TPOT against output throughput, every run of each method, its Pareto front drawn)."""
    pays = report.get('pays')
    if not pays:
        return []
    figures, title = [], ' %s TP%s, %s at T=%g (campaign %s)'
    goodput = {}
    for row in pays['slo_rows']:
        if row['kind'] == 'load' and row['request_rate'] != 'inf' and row['request_goodput'] is not None:
            goodput.setdefault((row['host'], row['tp'], row['dataset'], row['temperature']), {}).setdefault(row['setting'], []).append(
                (float(row['request_rate']), row['request_goodput'], row['slo_attainment']))
    for key, lines in sorted(goodput.items(), key=lambda item: str(item[0])):
        spec = {'kind': 'goodput_rate', 'lines': [(setting, sorted(points)) for setting, points in lines.items()],
                'title': 'Goodput vs request rate,' + title % (key + (report['campaign'],))}
        figures.append((_pays_name('goodput-vs-rate', *key), pays_figure_key('goodput', *key), spec))
    speedup = {}
    for row in pays['crossover']:
        speedup.setdefault((row['host'], row['tp'], row['dataset'], row['temperature']), []).append(
            (row['setting'], [(p['concurrency'], p['speedup'], p['ci_low'], p['ci_high']) for p in row['series']], row['concurrency']))
    for key, lines in sorted(speedup.items(), key=lambda item: str(item[0])):
        spec = {'kind': 'speedup_concurrency', 'lines': lines, 'baseline': pays['baseline'],
                'x': sorted(set(point[0] for _s, points, _c in lines for point in points)),
                'title': 'Speedup vs concurrency,' + title % (key + (report['campaign'],))}
        figures.append((_pays_name('speedup-vs-concurrency', *key), pays_figure_key('speedup', *key), spec))
    pareto = {}
    for point in pays['pareto']:
        pareto.setdefault((point['host'], point['tp'], point['dataset'], point['temperature']), {}).setdefault(
            METHOD_NAMES.get(point['method'], point['method']), []).append((point['output_throughput'], point['median_tpot_ms']))
    for key, methods in sorted(pareto.items(), key=lambda item: str(item[0])):
        spec = {'kind': 'pareto', 'lines': [(method, sorted(points), pareto_front(points)) for method, points in methods.items()],
                'title': 'Median TPOT vs throughput, front per method,' + title % (key + (report['campaign'],))}
        figures.append((_pays_name('pareto', *key), pays_figure_key('pareto', *key), spec))
    return figures
