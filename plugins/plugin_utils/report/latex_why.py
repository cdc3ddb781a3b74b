# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, renderer: report.tex's part of "Why the speedup is what it is". The papers' table with their
speedup (why.decode_paper_tables): per host and TP at concurrency 1, per dataset and method the decode speedup with its
Fieller interval and tau (the mean of the requests' own tau), the definition in the caption. Then per host, TP, dataset
and temperature at its lowest concurrency, each setting's tau, accept rate, the three speedups, verify-cost
factor and residual. report.md's section has the rest (histograms, per-position acceptance, cache hits).
"""

from __future__ import annotations

from .keys import METHOD_NAMES
from .latex_sections import _tex_label, _tex_size, tex_escape
from .why import decode_paper_tables, PAPER_CONCURRENCY, why_groups


def _speedup(cell):
    if cell.get('speedup_decode') is None:
        return '--'
    if cell.get('speedup_decode_ci_low') is None:
        return '%.2f' % cell['speedup_decode']
    return r'%.2f {\tiny[%.2f, %.2f]}' % (cell['speedup_decode'], cell['speedup_decode_ci_low'], cell['speedup_decode_ci_high'])


def why_latex(report):
    """The papers' decode-speedup tables of report.tex; [] when why.decode_paper_tables has none."""
    baseline = report['baseline_method']
    base = tex_escape(METHOD_NAMES.get(baseline, baseline))
    out = []
    for table in decode_paper_tables(report):
        methods = [item for item in table['methods'] if item['method'] != baseline]
        head = ['Dataset'] + [r'\multicolumn{3}{c}{%s}' % tex_escape(item['label']) for item in methods]
        sub = [''] + ['setting', r'$\times$ decode', r'$\tau$ mean'] * len(methods)
        body = []
        for row in table['rows']:
            values = ['%s, $T=%g$' % (tex_escape(row['dataset']), row['temperature'])]
            for item in methods:
                cell = row['cells'].get(item['method']) or {}
                values += [tex_escape(cell.get('setting') or '--'), _speedup(cell),
                           '--' if cell.get('accept_length_mean_of_means') is None else '%.2f' % cell['accept_length_mean_of_means']]
            body.append(values)
        size, gap, _fits = _tex_size([sub] + body)
        caption = (r'%s, TP%s: decode speedup as the DFlash and DDTree papers define it (decode-only time per output '
                   r'token at batch 1, concurrency %d, the first token excluded, the mean over the requests, %s over the '
                   r'method; z-lab/dflash benchmark.py \_print\_decode\_summary), Fieller 95\%% interval over the requests '
                   r"in brackets, and $\tau$ as the mean of the requests' own $\tau$; a method with several settings at its "
                   r'best by decode speedup. Not the serving speedup (output throughput, prefill included) of the other tables' % (
                       tex_escape(table['host']), table['tp'], PAPER_CONCURRENCY, base))
        out += ['', r'\begin{table}[ht]', r'\centering', size, r'\setlength{\tabcolsep}{%gpt}' % gap,
                r'\begin{tabular}{l%s}' % ('lrr' * len(methods)), r'\toprule', ' & '.join(head) + r' \\',
                ' '.join(r'\cmidrule(lr){%d-%d}' % (2 + 3 * i, 4 + 3 * i) for i in range(len(methods))),
                ' & '.join(sub) + r' \\', r'\midrule']
        out += ['%s \\\\' % ' & '.join(values) for values in body]
        out += [r'\bottomrule', r'\end{tabular}', r'\caption{%s.}' % caption,
                r'\label{tab:%s}' % _tex_label(report['campaign'], table['host'], 'tp%s' % table['tp'], 'decode-speedup'), r'\end{table}']
    return out


def _fmt(value, suffix=''):
    return '--' if value is None else '%.2f%s' % (value, suffix)


def decomposition_latex(report):
    """Per host, TP, dataset and temperature with a speculative setting, at its lowest concurrency: each setting's
    tau (step-pooled and mean of means), accept rate, serving, decode and Spec-Bench speedups, verify-cost factor and
    residual (report.md's table also has the token-weighted tau, the histogram and the per-position acceptance)."""
    base = tex_escape(METHOD_NAMES.get(report['baseline_method'], report['baseline_method']))
    lowest, out = {}, []
    for group in why_groups(report):
        key = (group['host'], group['tp'], group['dataset'], group['temperature'])
        if key in lowest:
            continue
        lowest[key] = group
        head = [r'Setting & $\tau^*$ & $\tau$ mean & acc. & $\times$ serv. & $\times$ dec. & $\times$ SB & cost & resid. \\']
        body = []
        for item in group['rows']:
            body.append([tex_escape(item['setting']), _fmt(item['accept_length']), _fmt(item['accept_length_mean_of_means']),
                         '--' if item['accept_rate'] is None else r'%.0f\%%' % (item['accept_rate'] * 100.0),
                         _fmt(item['speedup']), _fmt(item['speedup_decode']), _fmt(item['speedup_specbench']),
                         _fmt(item['verify_cost_factor']), _fmt(item['residual'])])
        size, gap, _fits = _tex_size([['Setting', 'tau*', 'tau mean', 'acc.', 'x serv.', 'x dec.', 'x SB', 'cost', 'resid.']] + body)
        caption = (r"%s, TP%s, %s at $T=%g$, concurrency %s: why the speedup is what it is. $\tau^*$ $\Sigma$ tokens / "
                   r"$\Sigma$ verify steps (the headline $\tau$), $\tau$ mean: the mean of the requests' own; acc.: "
                   r"$\Sigma$ correct / $\Sigma$ proposed drafts; serv.: serving speedup, output throughput over %s; dec.: "
                   r"decode speedup, %s mean decode-only time per output token over the setting's (the papers'); SB: "
                   r"Spec-Bench's, mean per-request tokens/s over %s; cost: verify-cost factor, %s time per decode step over "
                   r"the setting's; resid.: decode speedup / ($\tau$ decode $\times$ cost)" % (
                       tex_escape(group['host']), group['tp'], tex_escape(group['dataset']), group['temperature'], group['concurrency'],
                       base, base, base, base))
        out += ['', r'\begin{table}[ht]', r'\centering', size, r'\setlength{\tabcolsep}{%gpt}' % gap,
                r'\begin{tabular}{l%s}' % ('r' * 8), r'\toprule'] + head + [r'\midrule']
        out += ['%s \\\\' % ' & '.join(values) for values in body]
        out += [r'\bottomrule', r'\end{tabular}', r'\caption{%s.}' % caption,
                r'\label{tab:%s}' % _tex_label(report['campaign'], group['host'], 'tp%s' % group['tp'], group['dataset'],
                                               't%g' % group['temperature'], 'why'), r'\end{table}']
    return out
