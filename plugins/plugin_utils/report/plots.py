# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, renderer: the PNG plots (matplotlib, imported only to draw) and their cache.

_draw turns a figure of figures.plot_figures into PNG bytes;
write_plots draws only the figures whose input or file changed since the cache (PLOT_CACHE) was written.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os

from ansible_collections.specdec.bench.plugins.module_utils._common import file_sha256
from .figures import plot_figures


# Fixed margins, not constrained layout: the layout pass redraws every figure and doubled the time of the plots.
FIGURE_MARGINS = {'left': 0.07, 'bottom': 0.15, 'top': 0.86, 'wspace': 0.28}


LEGEND_INCHES = 1.9


PANEL_INCHES = (4.2, 3.6)


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


def _draw_why_budget(spec):
    """One panel against the budget: both speedups and tau on the left axis (the decode speedup's whiskers its
    interval), the verify-cost factor dotted on a second axis at the right."""
    width = PANEL_INCHES[0] + 1.2 + 0.6 + LEGEND_INCHES + 1.0
    figure, axes = _new_figure(1, width=width)
    figure.subplots_adjust(right=1.0 - (LEGEND_INCHES + 1.0) / width)  # room for the right axis' label before the legend
    axis = axes[0]
    axis.plot([math.log2(x) for x, _y in spec['speedup']], [y for _x, y in spec['speedup']], marker='o', color='C0',
              label='serving speedup over %s' % spec['baseline'])
    points = spec['speedup_decode']
    if points:
        values = [point[1:] for point in points]
        axis.errorbar([math.log2(point[0]) for point in points], [value[0] for value in values], yerr=_whiskers(values), marker='s',
                      capsize=2, color='C1', label='decode speedup (papers\' definition)')
    axis.plot([math.log2(x) for x, _y in spec['accept_length']], [y for _x, y in spec['accept_length']], marker='^', linestyle='--',
              color='C2', label='τ (step-pooled)')
    axis.axhline(1.0, linestyle=':', linewidth=0.8, color='black')
    _log2_axis(axis, spec['x'], 'DDTree budget B (tree nodes)')
    axis.set_ylabel('speedup (x) and τ (tokens per step)')
    axis.grid(True, alpha=0.3)
    cost = axis.twinx()
    cost.plot([math.log2(x) for x, _y in spec['verify_cost_factor']], [y for _x, y in spec['verify_cost_factor']], marker='x',
              linestyle=':', color='C3', label='verify-cost factor (right axis)')
    cost.set_ylabel('verify-cost factor (%s step / step)' % spec['baseline'])
    _figure_legend(figure, [axis, cost])
    figure.suptitle(spec['title'], fontsize=9)
    return _png(figure)


def _draw_goodput_rate(spec):
    """Two panels against the offered request rate, one line per stage: request goodput (the offered rate dotted: every
    request good) and SLO attainment."""
    figure, axes = _new_figure(2)
    rates = sorted(set(point[0] for _setting, points in spec['lines'] for point in points))
    for setting, points in spec['lines']:
        axes[0].plot([point[0] for point in points], [point[1] for point in points], marker='o', label=setting)
        axes[1].plot([point[0] for point in points], [point[2] * 100.0 if point[2] is not None else float('nan') for point in points],
                     marker='o', label=setting)
    if rates:
        axes[0].plot(rates, rates, linestyle=':', linewidth=0.8, color='black', label='offered rate (all good)')
    for axis, label in zip(axes, ('request goodput (good req/s)', 'SLO attainment (% of requests)')):
        axis.set_xlabel('request rate (req/s, open loop)')
        axis.set_ylabel(label)
        axis.set_title(label, fontsize=9, y=1.0)
        axis.grid(True, alpha=0.3)
    axes[1].set_ylim(0.0, 105.0)
    _figure_legend(figure, axes)
    figure.suptitle(spec['title'], fontsize=10)
    return _png(figure)


def _draw_speedup_concurrency(spec):
    """Speedup against concurrency (log 2), one line per setting, its Fieller band shaded where both ends are known,
    the crossover (where it falls to 1.0) marked with an x on the 1.0 line."""
    figure, axes = _new_figure(1)
    axis = axes[0]
    for number, (setting, points, crossing) in enumerate(spec['lines']):
        color = 'C%d' % (number % 10)
        axis.plot([math.log2(point[0]) for point in points], [point[1] for point in points], marker='o', color=color, label=setting)
        band = [point for point in points if point[2] is not None and point[3] is not None]
        if len(band) >= 2:
            axis.fill_between([math.log2(point[0]) for point in band], [point[2] for point in band], [point[3] for point in band],
                              color=color, alpha=0.15, linewidth=0)
        if crossing is not None:
            axis.plot([math.log2(crossing)], [1.0], marker='x', markersize=9, color=color, linestyle='none')
    axis.axhline(1.0, linestyle=':', linewidth=0.8, color='black', label='%s (1.0x); x: crossover' % spec['baseline'])
    _log2_axis(axis, spec['x'], 'concurrency (requests in flight)')
    axis.set_ylabel('speedup over %s (output throughput)' % spec['baseline'])
    axis.grid(True, alpha=0.3)
    _figure_legend(figure, axes)
    figure.suptitle(spec['title'], fontsize=9)
    return _png(figure)


def _draw_pareto(spec):
    """Median TPOT against output throughput: every run of a method a dot, its Pareto front a line of the same colour."""
    figure, axes = _new_figure(1)
    axis = axes[0]
    for number, (method, points, front) in enumerate(spec['lines']):
        color = 'C%d' % (number % 10)
        axis.scatter([point[0] for point in points], [point[1] for point in points], s=12, color=color, alpha=0.5)
        axis.plot([point[0] for point in front], [point[1] for point in front], marker='o', color=color, label='%s front' % method)
    axis.set_xlabel('output throughput (tok/s)')
    axis.set_ylabel('median TPOT (ms)')
    axis.grid(True, alpha=0.3)
    _figure_legend(figure, axes)
    figure.suptitle(spec['title'], fontsize=9)
    return _png(figure)


_PAPER_DRAW = {'per_dataset': _draw_per_dataset, 'budget_per_dataset': _draw_budget_per_dataset, 'energy': _draw_energy,
               'checkpoints': _draw_checkpoints, 'why_budget': _draw_why_budget, 'goodput_rate': _draw_goodput_rate,
               'speedup_concurrency': _draw_speedup_concurrency, 'pareto': _draw_pareto}


def write_plots(report, output_dir, write, keep=None, cache=None):
    """Draw the plots; {(host, dataset, temperature, 'speedup'|'accept_length'|'throughput'|'energy'): file name}, plus
    {tables.figure_key(host, tp, 'per_dataset'|'speedup_vs_budget_per_dataset'): file name} and
    {checkpoints.figure_key(host, tp, dataset): file name}, {why.why_figure_key(host, tp, dataset, temperature): file
    name}, {figures.pays_figure_key(kind, host, tp, dataset, temperature): file name}, and the new cache.

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
