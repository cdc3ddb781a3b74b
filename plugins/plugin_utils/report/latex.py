# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, renderer: report.tex, booktabs tables ready to \\input (one per host, dataset, temperature and TP
from tables._groups, the energy tables, then latex_sections' sections). Needs \\usepackage{booktabs} alone.
"""

from __future__ import annotations

import re

from .keys import METHOD_NAMES
from .latex_sections import _tex_ci, checkpoint_latex, interference_latex, paper_latex, tex_escape, time_latex
from .latex_pays import pays_latex
from .latex_lossless import lossless_latex
from .latex_why import decomposition_latex, why_latex
from .read import MEASURED
from .tables import _energy_cells, _groups, _markers_used, _per_request, _repeated, _throttle_reasons, named_runs, setting_table
from .text import beside_note, energy_method_line, ENERGY_THROTTLED, NOT_SIGNIFICANT


TEX_BESIDE_MARK = r'\textsuperscript{\S}'


def render_latex(report):
    """report.tex: one booktabs table per host and TP (throughput, speedup, tau per concurrency), ready to \\input.

    Needs \\usepackage{booktabs} in the including document; nothing else.
    """
    out = ['%% specdec.bench report of campaign %s; needs \\usepackage{booktabs}' % tex_escape(report['campaign'])]
    groups = _groups(report['rows'])
    baseline = METHOD_NAMES.get(report['baseline_method'], report['baseline_method'])
    named, per_request = named_runs(report['rows']), _per_request(report['rows'])
    out += paper_latex(report)  # the papers' layout (tables), [] when there is nothing to show
    out += checkpoint_latex(report)  # a checkpoint sweep (checkpoints), [] without one
    out += why_latex(report)  # the papers' decode speedup at c=1, [] without one
    out += decomposition_latex(report)  # per run at its lowest concurrency: tau, the three speedups, verify cost
    out += pays_latex(report)  # capacity at SLO and crossover, [] without the load family
    out += lossless_latex(report)  # task accuracy and outputs against AR's, [] where no stage kept outputs
    for (host, dataset, temperature, tp), group in groups.items():
        if not any(row['status'] == MEASURED for row in group['cells'].values()):
            continue
        concurrency = group['concurrency']
        # Narrower with more concurrencies, so four of them still fit an article's text width (the table is a group:
        # the size and column gap end with it).
        # A table of repeated runs carries markers and intervals: one step smaller.
        steps = len(concurrency) + (1 if any(_repeated(row) for row in group['cells'].values()) else 0)
        size, gap = (r'\small', 6) if steps <= 2 else (r'\footnotesize', 4) if steps == 3 else (r'\scriptsize', 2) if steps == 4 else (r'\tiny', 1)
        out += ['', r'\begin{table}[ht]', r'\centering', size, r'\setlength{\tabcolsep}{%dpt}' % gap,
                r'\begin{tabular}{l%s}' % ('rrr' * len(concurrency)), r'\toprule']
        out.append('Setting & ' + ' & '.join(r'\multicolumn{3}{c}{$c=%s$}' % c for c in concurrency) + r' \\')
        out.append(' '.join(r'\cmidrule(lr){%d-%d}' % (2 + 3 * i, 4 + 3 * i) for i in range(len(concurrency))))
        out.append(' & ' + ' & '.join(r'tok/s & $\times$ & $\tau$' for _c in concurrency) + r' \\')
        out.append(r'\midrule')
        for line in setting_table(group, report['baseline_method']):
            cells = []
            for cell in line['cells']:
                if cell is None or not cell['measured']:
                    cells += ['--', '--', '--']
                    continue
                row = cell['row']
                values = [_tex_ci(row, 'output_throughput', 0), _tex_ci(row, 'speedup', 2), _tex_ci(row, 'accept_length', 2)]
                if cell['best']:
                    values = [r'\textbf{%s}' % value if value != '--' else value for value in values]
                marks = [r'$^*$' if cell['noisy'] else '', r'$^\dagger$' if cell['not_significant'] else '',
                         r'$^\ddagger$' if cell['flagged'] else '']
                cells += [value + mark for value, mark in zip(values, marks)]
            out.append('%s & %s \\\\' % (tex_escape(line['setting']) + (TEX_BESIDE_MARK if line['beside'] else ''), ' & '.join(cells)))
        flagged = any(row.get('accept_length_flag') for row in group['cells'].values() if row['status'] == MEASURED)
        if named:
            caption = (r'%s, dataset %s at temperature %g, TP%s: output throughput, serving speedup (output throughput) over %s at the same TP, dataset, '
                       r'temperature and concurrency, ' % (tex_escape(host), tex_escape(dataset), temperature, tp, tex_escape(baseline)))
            label = '%s-%s-%s-t%g-tp%s' % (report['campaign'], host, dataset, temperature, tp)
        else:
            caption = r'%s, TP%s: output throughput, serving speedup (output throughput) over %s at the same TP and concurrency, ' % (
                tex_escape(host), tp, tex_escape(baseline))
            label = '%s-%s-tp%s' % (report['campaign'], host, tp)
        caption += (r'acceptance length $\tau$ per request ($\sum$ completion tokens / $\sum$ verify steps of the run)'
                    if per_request else r'acceptance length $\tau$')
        caption += '; best throughput per concurrency in bold'
        repeats = sorted(set(row['repeats'] for row in group['cells'].values() if row['status'] == MEASURED and _repeated(row)))
        if repeats:
            caption += r'; mean $\pm$ half the 95\%% interval over %s repeats' % '/'.join(str(n) for n in repeats)
        used = _markers_used(group['cells'].values(), report['baseline_method'])
        if 'dagger' in used:
            caption += r'; $^\dagger$: ' + tex_escape(NOT_SIGNIFICANT)
        if 'noisy' in used:
            caption += r'; $^*$: noisy (CV $>$ %g\%%)' % (report.get('noisy_cv', 0.05) * 100.0)
        if flagged:
            caption += r'; $^\ddagger$: the server\'s $\tau$ differs by more than 2\%'
        if group['beside']:
            caption += '; %s: %s' % (TEX_BESIDE_MARK, tex_escape(beside_note(group['beside'].values(), any(
                item['host'] == host for item in report.get('interference') or []))))
        out += [r'\bottomrule', r'\end{tabular}', r'\caption{%s.}' % caption,
                r'\label{tab:%s}' % re.sub('[^A-Za-z0-9-]', '-', label), r'\end{table}']
    out += _latex_energy(report, groups)
    for host in report['hosts']:
        out += interference_latex(report['campaign'], [item for item in report.get('interference') or [] if item['host'] == host['host']],
                                  tex_escape)
        out += time_latex(host['host'], host.get('time_breakdown'), tex_escape,
                          re.sub('[^A-Za-z0-9-]', '-', '%s-%s-time' % (report['campaign'], host['host'])))
    return '\n'.join(out) + '\n'


def _latex_energy(report, groups):
    """report.tex's energy tables: per host, dataset, temperature and TP with energy, tokens per joule and the energy
    per token over the baseline's per concurrency."""
    out = []
    named = named_runs(report['rows'])
    baseline = METHOD_NAMES.get(report['baseline_method'], report['baseline_method'])
    for (host, dataset, temperature, tp), group in groups.items():
        rows = _energy_cells(group)
        if not rows:
            continue
        concurrency = group['concurrency']
        steps = len(concurrency) + (1 if any(_repeated(row) for row in rows) else 0)
        size, gap = (r'\small', 6) if steps <= 3 else (r'\footnotesize', 4) if steps == 4 else (r'\scriptsize', 2) if steps == 5 else (r'\tiny', 1)
        out += ['', r'\begin{table}[ht]', r'\centering', size, r'\setlength{\tabcolsep}{%dpt}' % gap,
                r'\begin{tabular}{l%s}' % ('rr' * len(concurrency)), r'\toprule']
        out.append('Setting & ' + ' & '.join(r'\multicolumn{2}{c}{$c=%s$}' % c for c in concurrency) + r' \\')
        out.append(' '.join(r'\cmidrule(lr){%d-%d}' % (2 + 2 * i, 3 + 2 * i) for i in range(len(concurrency))))
        out.append(' & ' + ' & '.join(r'tok/J & E/tok' for _c in concurrency) + r' \\')
        out.append(r'\midrule')
        for line in setting_table(group, report['baseline_method']):
            cells = []
            for cell in line['cells']:
                if cell is None or not cell['energy']:
                    cells += ['--', '--']
                    continue
                row = cell['row']
                mark = r'$^\ddagger$' if row.get('gpu_throttled') else ''
                cells += [_tex_ci(row, 'output_tokens_per_j', 2) + mark, _tex_ci(row, 'energy_ratio', 2)]
            out.append('%s & %s \\\\' % (tex_escape(line['setting']), ' & '.join(cells)))
        where = (r'dataset %s at temperature %g, ' % (tex_escape(dataset), temperature)) if named else ''
        caption = (r'%s, %sTP%s: output tokens per joule and energy per output token over %s at the same TP, dataset, '
                   r'temperature and concurrency (E/tok; below 1: less energy per token); %s' % (
                       tex_escape(host), where, tp, tex_escape(baseline), tex_escape(energy_method_line(rows)).replace('⚠ ', '')))
        repeats = sorted(set(row['repeats'] for row in rows if _repeated(row)))
        if repeats:
            caption += r'; mean $\pm$ half the 95\%% interval over %s repeats' % '/'.join(str(n) for n in repeats)
        throttled = [row for row in rows if row.get('gpu_throttled')]
        if throttled:
            caption += r'; $^\ddagger$: ' + tex_escape(ENERGY_THROTTLED % _throttle_reasons(throttled))
        label = '%s-%s-%s-t%g-tp%s-energy' % (report['campaign'], host, dataset, temperature, tp) if named else \
            '%s-%s-tp%s-energy' % (report['campaign'], host, tp)
        out += [r'\bottomrule', r'\end{tabular}', r'\caption{%s.}' % caption,
                r'\label{tab:%s}' % re.sub('[^A-Za-z0-9-]', '-', label), r'\end{table}']
    return out
