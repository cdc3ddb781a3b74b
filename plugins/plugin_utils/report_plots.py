# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, step 3 too: the PNG plots (matplotlib, imported only to draw) and their cache.

plot_series and plot_figures are plain data of the report's rows (testable without matplotlib); _draw turns a figure
into PNG bytes; write_plots draws only the figures whose input or file changed since the cache was written.
The papers' figures (paper_figures) follow report_tables.paper_rows: per host and TP, speedup and tau per dataset as
grouped bars per method, and speedup against the DDTree budget with one line per dataset; whiskers are the 95%
intervals over the repeats (none with one repeat).
With energy measured (issue 17), each host and run also gets tokens per joule against concurrency, one line per
setting (each method's best when there are more than MAX_THROUGHPUT_LINES), whiskers the 95% intervals.
A checkpoint sweep (issue 18, report_checkpoints.figure_specs) gets per host, TP and dataset tau and speedup against
the drafter's training step (checkpoints-<host>-tp<N>-<dataset>.png), one line per setting, whiskers the intervals.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re

from ansible_collections.specdec.bench.plugins.module_utils._common import file_sha256, temperature_tag
from ansible_collections.specdec.bench.plugins.plugin_utils.report_checkpoints import figure_specs as checkpoint_figures
from ansible_collections.specdec.bench.plugins.plugin_utils.report_read import MEASURED
from ansible_collections.specdec.bench.plugins.plugin_utils.report_render import named_runs
from ansible_collections.specdec.bench.plugins.plugin_utils.report_rows import BASELINE_METHOD, METHOD_NAMES
from ansible_collections.specdec.bench.plugins.plugin_utils.report_tables import figure_key, paper_rows

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
# Fixed margins, not constrained layout: the layout pass redraws every figure and doubled the time of the plots.
FIGURE_MARGINS = {'left': 0.07, 'bottom': 0.15, 'top': 0.86, 'wspace': 0.28}
LEGEND_INCHES = 1.9
PANEL_INCHES = (4.2, 3.6)


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


def _log2_axis(axis, values, label):
    """Values evenly spaced as powers of two, labelled as they are (drawn on a linear axis: cheaper than a log one)."""
    kept = []
    for value in values:  # a tick only where its label does not run into the previous one (24 next to 32)
        if not kept or math.log2(value) - math.log2(kept[-1]) >= 0.5:
            kept.append(value)
    axis.set_xticks([math.log2(value) for value in kept], [str(value) for value in kept])
    axis.set_xlabel(label)


# Bump when the drawing below changes, so figures kept from an earlier run are drawn again (2: text is plain text).
PLOT_STYLE = 2
PLOT_CACHE = '.plots.json'
# Every text of a figure is plain text: a host's setting, host or dataset name in a title, label, legend or annotation
# is shown as it is, never parsed as mathtext ($\undefinedmacro$ raised ValueError and wrote no file) or sent to
# LaTeX, whatever the controller's matplotlibrc says. The figures' own text has no math (τ is a Unicode letter).
PLAIN_TEXT = {'text.parse_math': False, 'text.usetex': False, 'axes.formatter.use_mathtext': False}


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
    return figures + paper_figures(report) + checkpoint_figures(report)


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


def _draw(spec):
    """The PNG bytes of one figure spec (see plot_figures), its text plain (PLAIN_TEXT: the Text objects are made,
    tick labels included, and drawn inside the context). Imports matplotlib: raises ImportError without it."""
    import matplotlib  # pylint: disable=import-outside-toplevel

    with matplotlib.rc_context(PLAIN_TEXT):
        return _PAPER_DRAW.get(spec['kind'], _draw_lines)(spec)


def _draw_lines(spec):
    """The budget and throughput figures of one host and run: one panel per TP."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # pylint: disable=import-outside-toplevel
    from matplotlib.figure import Figure  # pylint: disable=import-outside-toplevel
    from matplotlib.ticker import MaxNLocator  # pylint: disable=import-outside-toplevel

    count = len(spec['panels'])
    width = PANEL_INCHES[0] * count + 0.6 + LEGEND_INCHES
    figure = Figure(figsize=(width, PANEL_INCHES[1]))
    FigureCanvasAgg(figure)
    axes = [figure.add_subplot(1, count, number + 1) for number in range(count)]
    figure.subplots_adjust(right=1.0 - LEGEND_INCHES / width, **dict(FIGURE_MARGINS, left=0.55 / width))
    for axis, panel in zip(axes, spec['panels']):
        axis.yaxis.set_major_locator(MaxNLocator(5))
        if spec['kind'] == 'budget':
            reference_labelled = False
            for number, (concurrency, points, references) in enumerate(panel['lines']):
                color = 'C%d' % (number % 10)
                if points:
                    axis.plot([math.log2(x) for x, _y in points], [y for _x, y in points], marker='o', color=color,
                              label='concurrency %s' % concurrency)
                for setting, value in references:
                    axis.axhline(value, linestyle='--', linewidth=0.9, color=color,
                                 label=None if reference_labelled else '%s (dashed)' % setting)
                    reference_labelled = True
            if spec['metric'] == 'speedup':
                axis.axhline(1.0, linestyle=':', linewidth=0.8, color='black')
            if not any(points for _c, points, _r in panel['lines']):
                why = 'no %s baseline measured' % spec['baseline'] if spec['metric'] == 'speedup' else 'none reported'
                axis.text(0.5, 0.5, 'no %s at TP%s\n(%s)' % (spec['label'], panel['tp'], why),
                          transform=axis.transAxes, ha='center', va='center', fontsize=9, color='grey')
            _log2_axis(axis, panel['x'], 'DDTree budget B (tree nodes)')
            axis.set_ylabel(spec['label'])
        else:
            for legend, points, baseline in panel['lines']:
                axis.plot([math.log2(x) for x, _y in points], [y for _x, y in points], marker='o', label=legend,
                          linestyle='--' if baseline else '-')
            _log2_axis(axis, panel['x'], 'concurrency (requests in flight)')
            axis.set_ylabel('output throughput (tok/s)')
        axis.set_title(panel['title'], fontsize=9, y=1.0)  # a fixed y skips matplotlib's title placement pass
        axis.grid(True, alpha=0.3)
    _figure_legend(figure, axes)
    figure.suptitle(spec['title'], fontsize=10)
    return _png(figure)


def _new_figure(count, width=None):
    """A figure of count panels side by side, the legend at the right (as _draw lays them out)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # pylint: disable=import-outside-toplevel
    from matplotlib.figure import Figure  # pylint: disable=import-outside-toplevel

    width = width or PANEL_INCHES[0] * count + 0.6 + LEGEND_INCHES
    figure = Figure(figsize=(width, PANEL_INCHES[1]))
    FigureCanvasAgg(figure)
    axes = [figure.add_subplot(1, count, number + 1) for number in range(count)]
    figure.subplots_adjust(right=1.0 - LEGEND_INCHES / width, **dict(FIGURE_MARGINS, left=0.55 / width))
    return figure, axes


def _whiskers(points):
    """Matplotlib's yerr ([below], [above]) of (mean, low, high) points; None when no point has an interval."""
    if not any(point[1] is not None and point[2] is not None for point in points):
        return None
    return ([point[0] - point[1] if point[1] is not None else 0.0 for point in points],
            [point[2] - point[0] if point[2] is not None else 0.0 for point in points])


def _draw_per_dataset(spec):
    """Grouped bars: per run a group, per method a bar (its chosen setting written above it), whiskers the intervals."""
    count = len(spec['runs'])
    figure, axes = _new_figure(2, width=max(PANEL_INCHES[0], 0.9 * count + 1.2) * 2 + 0.6 + LEGEND_INCHES)
    for axis, panel in zip(axes, spec['panels']):
        width = 0.8 / max(len(panel['bars']), 1)
        for number, (label, values, choices) in enumerate(panel['bars']):
            xs = [run + (number - (len(panel['bars']) - 1) / 2.0) * width for run in range(count)]
            kept = [(x, value, choice) for x, value, choice in zip(xs, values, choices) if value is not None]
            if not kept:
                continue
            points = [value for _x, value, _c in kept]
            axis.bar([x for x, _v, _c in kept], [point[0] for point in points], width, yerr=_whiskers(points), capsize=2,
                     color='C%d' % (number % 10), label=label, error_kw={'linewidth': 0.8})
            for x, value, choice in kept:
                if choice:
                    axis.text(x, (value[2] if value[2] is not None else value[0]), choice, ha='center', va='bottom',
                              fontsize=6, rotation=90)
        if panel['metric'] == 'speedup':
            axis.axhline(1.0, linestyle=':', linewidth=0.8, color='black', label='%s (1.0x)' % spec['baseline'])
        axis.set_xticks(list(range(count)), spec['runs'], fontsize=7)
        axis.set_ylabel(panel['label'])
        axis.set_title(panel['label'], fontsize=9, y=1.0)
        axis.grid(True, axis='y', alpha=0.3)
    _figure_legend(figure, axes)
    figure.suptitle(spec['title'], fontsize=10)
    return _png(figure)


def _draw_energy(spec):
    """Tokens per joule against concurrency, one panel per TP, one line per setting, whiskers the 95% intervals."""
    figure, axes = _new_figure(len(spec['panels']))
    for axis, panel in zip(axes, spec['panels']):
        for legend, points, baseline in panel['lines']:
            axis.errorbar([math.log2(point[0]) for point in points], [point[1] for point in points],
                          yerr=_whiskers([point[1:] for point in points]), marker='o', capsize=2, label=legend,
                          linestyle='--' if baseline else '-')
        _log2_axis(axis, panel['x'], 'concurrency (requests in flight)')
        axis.set_ylabel('output tokens per joule')
        axis.set_title(panel['title'], fontsize=9, y=1.0)
        axis.grid(True, alpha=0.3)
    _figure_legend(figure, axes)
    figure.suptitle(spec['title'], fontsize=10)
    return _png(figure)


def _draw_budget_per_dataset(spec):
    """Speedup against the budget, one line per run, whiskers the intervals."""
    figure, axes = _new_figure(1)
    axis = axes[0]
    for number, (legend, points) in enumerate(spec['lines']):
        values = [(speedup, low, high) for _b, speedup, low, high in points]
        axis.errorbar([math.log2(point[0]) for point in points], [value[0] for value in values], yerr=_whiskers(values),
                      marker='o', capsize=2, color='C%d' % (number % 10), label=legend)
    axis.axhline(1.0, linestyle=':', linewidth=0.8, color='black')
    _log2_axis(axis, spec['x'], 'DDTree budget B (tree nodes)')
    axis.set_ylabel('speedup over %s' % spec['baseline'])
    axis.grid(True, alpha=0.3)
    _figure_legend(figure, axes)
    figure.suptitle(spec['title'], fontsize=10)
    return _png(figure)


def _draw_checkpoints(spec):
    """Two panels, tau and speedup against the training step, one line per setting, whiskers the 95% intervals; the
    baseline is the dotted speedup 1.0 line."""
    figure, axes = _new_figure(2)
    colors = {}
    for axis, panel in zip(axes, spec['panels']):
        for legend, points in panel['lines']:
            color = colors.setdefault(legend, 'C%d' % (len(colors) % 10))
            values = [point[1:] for point in points]
            axis.errorbar([point[0] for point in points], [value[0] for value in values], yerr=_whiskers(values), marker='o',
                          capsize=2, color=color, label=legend)
        if panel['metric'] == 'speedup':
            axis.axhline(1.0, linestyle=':', linewidth=0.8, color='black', label='%s (1.0x)' % spec['baseline'])
        if not panel['lines']:
            axis.text(0.5, 0.5, 'no %s measured' % panel['label'], transform=axis.transAxes, ha='center', va='center',
                      fontsize=9, color='grey')
        axis.set_xlabel('training step of the drafter checkpoint')
        axis.set_ylabel(panel['label'])
        axis.set_title(panel['label'], fontsize=9, y=1.0)
        axis.grid(True, alpha=0.3)
    _figure_legend(figure, axes)
    figure.suptitle(spec['title'], fontsize=10)
    return _png(figure)


_PAPER_DRAW = {'per_dataset': _draw_per_dataset, 'budget_per_dataset': _draw_budget_per_dataset, 'energy': _draw_energy,
               'checkpoints': _draw_checkpoints}


def write_plots(report, output_dir, write, keep=None, cache=None):
    """Draw the plots; {(host, dataset, temperature, 'speedup'|'accept_length'|'throughput'|'energy'): file name}, plus
    {report_tables.figure_key(host, tp, 'per_dataset'|'speedup_vs_budget_per_dataset'): file name} and
    {report_checkpoints.figure_key(host, tp, dataset): file name}, and the new cache.

    write(name, data) stores a drawn file, keep(name) registers one left as it is. A figure whose input (and the drawing
    code's PLOT_STYLE) is what cache says it was when its file, still unchanged, was drawn is not drawn again: the same
    results give the same figure. Raises ImportError when a figure must be drawn and matplotlib is missing.
    """
    cache = cache or {}
    made, new_cache = {}, {}
    for file_name, key, spec in plot_figures(report):
        digest = hashlib.sha256(repr((PLOT_STYLE, spec)).encode('utf-8')).hexdigest()
        path = os.path.join(output_dir, file_name)
        old = cache.get(file_name) or {}
        if keep is not None and old.get('input') == digest and _unchanged(path, old.get('sha256')):
            keep(file_name)
            new_cache[file_name] = old
        else:
            data = _draw(spec)
            write(file_name, data)
            new_cache[file_name] = {'input': digest, 'sha256': hashlib.sha256(data).hexdigest()}
        made[key] = file_name
    return made, new_cache


def _unchanged(path, sha256):
    """True when the file at path is still the one whose sha256 the cache holds; False when it is gone or unreadable."""
    try:
        return bool(sha256) and file_sha256(path) == sha256
    except OSError:
        return False


def _figure_legend(figure, axes):
    """One legend per figure, right of the panels (the lines mean the same in every panel); one per panel was a
    quarter of the drawing time."""
    handles, labels = {}, []
    for axis in axes:
        for handle, label in zip(*axis.get_legend_handles_labels()):
            if label not in handles:
                handles[label] = handle
                labels.append(label)
    labels.sort(key=lambda label: label.endswith('(dashed)'))  # the reference lines after the measured ones
    if labels:
        figure.legend([handles[label] for label in labels], labels, loc='center right', fontsize=7, frameon=False)


def _png(figure):
    buffer = io.BytesIO()
    # No software tag or date in the file, so the same results make the same bytes (a rerun changes nothing).
    # zlib level 1: a third of the encoding time for files about a third larger.
    figure.savefig(buffer, format='png', dpi=100, metadata={'Software': None}, pil_kwargs={'compress_level': 1})
    return buffer.getvalue()


def read_plot_cache(output_dir):
    """The plot cache of the report in output_dir; a missing or broken one only means every figure is drawn again."""
    try:
        with open(os.path.join(output_dir, PLOT_CACHE), 'rb') as handle:
            cache = json.loads(handle.read())
    except (OSError, ValueError):
        return {}
    return cache if isinstance(cache, dict) and all(isinstance(value, dict) for value in cache.values()) else {}


def render_plot_cache(cache):
    """The bytes of PLOT_CACHE, written with the report's files (write_set) so it never describes other files."""
    return (json.dumps(cache, indent=1, sort_keys=True) + '\n').encode('utf-8')
