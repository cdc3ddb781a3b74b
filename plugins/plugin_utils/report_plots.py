# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, step 3 too: the PNG plots (matplotlib, imported only to draw) and their cache.

plot_series and plot_figures are plain data of the report's rows (testable without matplotlib); _draw turns a figure
into PNG bytes; write_plots draws only the figures whose input or file changed since the cache was written.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re

from ansible_collections.specdec.bench.plugins.module_utils._common import file_sha256, temperature_tag
from ansible_collections.specdec.bench.plugins.plugin_utils.report_read import MEASURED
from ansible_collections.specdec.bench.plugins.plugin_utils.report_render import named_runs
from ansible_collections.specdec.bench.plugins.plugin_utils.report_rows import BASELINE_METHOD, METHOD_NAMES

# The sweep parameter of the budget plots.
BUDGET_PARAM = 'budget'


def plot_series(rows, host, baseline_method=BASELINE_METHOD, run=None):
    """What the plots of one host show, as plain data (so it is testable without matplotlib).

    run: (dataset, temperature) to plot only that run's rows (None: every row of the host).
    {'tps': [...], 'budget': {tp: {(topk, concurrency): [(budget, speedup, tau)]}}, 'reference': {tp: {(setting,
    concurrency): (speedup, tau)}}, 'throughput': {tp: {setting: [(concurrency, tok/s)]}}}
    """
    measured = [r for r in rows if r['host'] == host and r['status'] == MEASURED and r['output_throughput'] is not None
                and (run is None or (r['dataset'], r['temperature']) == tuple(run))]
    series = {'tps': sorted(set(r['tp'] for r in measured if r['tp'] is not None)), 'budget': {}, 'reference': {}, 'throughput': {}}
    for row in measured:
        tp = row['tp']
        if row[BUDGET_PARAM] is not None:
            series['budget'].setdefault(tp, {}).setdefault((row['topk'], row['concurrency']), []).append(
                (row[BUDGET_PARAM], row['speedup'], row['accept_length']))
        elif row['method'] != baseline_method:
            series['reference'].setdefault(tp, {})[(row['setting'], row['concurrency'])] = (row['speedup'], row['accept_length'])
        series['throughput'].setdefault(tp, {}).setdefault(row['setting'], []).append((row['concurrency'], row['output_throughput']))
    for per_tp in series['budget'].values():
        for points in per_tp.values():
            points.sort(key=lambda point: point[0])
    for per_tp in series['throughput'].values():
        for points in per_tp.values():
            points.sort()
    return series


MAX_THROUGHPUT_LINES = 8
# Fixed margins, not constrained layout: the layout pass redraws every figure and doubled the time of the plots.
FIGURE_MARGINS = {'left': 0.07, 'bottom': 0.15, 'top': 0.86, 'wspace': 0.28}
LEGEND_INCHES = 1.9
PANEL_INCHES = (4.2, 3.6)


def _throughput_lines(per_setting, methods):
    """The settings drawn: all when there are at most MAX_THROUGHPUT_LINES, else the best one of each method.

    per_setting: {setting: [(concurrency, tok/s)]}; methods: {setting: method}. Best = highest mean throughput.
    Returns [(setting, legend label)], the baseline first.
    """
    def mean(setting):
        points = per_setting[setting]
        return sum(value for _c, value in points) / len(points)
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


# Bump when the drawing below changes, so figures kept from an earlier run are drawn again.
PLOT_STYLE = 1
PLOT_CACHE = '.plots.json'


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
    return figures


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
    return figures


def _draw(spec):
    """The PNG bytes of one figure spec (see plot_figures). Imports matplotlib: raises ImportError without it."""
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


def write_plots(report, output_dir, write, keep=None, cache=None):
    """Draw the plots; {(host, dataset, temperature, 'speedup'|'accept_length'|'throughput'): file name} and the new cache.

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
