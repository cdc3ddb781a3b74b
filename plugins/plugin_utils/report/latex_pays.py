# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, renderer: report.tex's part of "Where speculation pays" (pays.py): per host the capacity at
SLO of each setting with its gain over AR, and the crossover concurrency of each speculative setting, the definitions
in the captions. report.md's section has the rest (goodput per run, the schedule, the plots).
"""

from __future__ import annotations

from .latex_sections import _tex_label, _tex_size, tex_escape


def _number(value):
    if value is None:
        return '--'
    return '%d' % value if float(value).is_integer() else '%.3g' % value


def _slo(label):
    """pays.slo_label's text with LaTeX's sign for its ≤ (which pdflatex cannot set as a character)."""
    if not label:
        return '--'
    return r' $\le$ '.join(tex_escape(part.strip()) for part in label.split('≤'))


def _capacity(row):
    if row['capacity'] is None:
        return 'none' if row.get('bound_by') == 'lowest_fails' else '--'
    ends = (row['capacity_low'], row['capacity_high'])
    return _number(row['capacity']) + ('' if ends == (None, None) else r' {\tiny[%s, %s]}' % tuple(_number(end) for end in ends))


def _gain(row):
    if row['gain'] is None:
        return '--'
    if row['baseline_stage'] == row['stage']:
        return '1.00'
    ends = tuple('%.2f' % end if end is not None else '?' for end in (row['gain_low'], row['gain_high']))
    return r'%.2f {\tiny[%s, %s]}' % ((row['gain'],) + ends)


def _crossover(row):
    if row['status'] == 'pays':
        return r'pays up to $c=%s$' % row['max_measured']
    if row['status'] == 'never':
        return 'never pays'
    if row['status'] != 'crosses':
        return '--'
    low = '%.1f' % row['low'] if row['low'] is not None else '?'
    high = '%.1f' % row['high'] if row['high'] is not None else '$>$%s' % row['max_measured']
    return r'%.1f {\tiny[%s, %s]}' % (row['concurrency'], low, high)


def _table(head, body, align, caption, label):
    size, gap, _fits = _tex_size([head] + body)
    out = ['', r'\begin{table}[ht]', r'\centering', size, r'\setlength{\tabcolsep}{%gpt}' % gap, r'\begin{tabular}{%s}' % align,
           r'\toprule', ' & '.join(head) + r' \\', r'\midrule']
    out += ['%s \\\\' % ' & '.join(values) for values in body]
    return out + [r'\bottomrule', r'\end{tabular}', r'\caption{%s.}' % caption, r'\label{tab:%s}' % label, r'\end{table}']


def pays_latex(report):
    """Per host the capacity table (when it has searches) and the crossover table; [] without report['pays']."""
    pays = report.get('pays')
    if not pays:
        return []
    base = tex_escape(pays['baseline'])
    out = []
    for host in sorted(set(row['host'] for row in pays['capacity'] + pays['crossover'])):
        rows = [row for row in pays['capacity'] if row['host'] == host]
        if rows:
            one_slo = len(set(row['slo'] for row in rows)) == 1  # the usual case: named once, in the caption
            body = [['TP%s' % row['tp'], '%s, $T=%g$' % (tex_escape(row['dataset']), row['temperature'] or 0.0),
                     'conc.' if row['kind'] == 'concurrency' else 'req/s', tex_escape(row['setting'])] + ([] if one_slo else [_slo(row['slo'])])
                    + [_capacity(row), tex_escape(row['binding'] or '--'), _gain(row)] for row in rows]
            caption = (r"%s: capacity at SLO%s, the largest concurrency (closed loop) or request rate (open loop) whose run "
                       r"meets the SLO (each metric's percentile over the requests, the mean over the repeats), found by the "
                       r"capacity search, its interval from the points that surely pass and surely fail in brackets; gain: "
                       r"capacity over %s's, its interval [low / %s's high, high / %s's low]" % (
                           tex_escape(host), ' (%s)' % _slo(rows[0]['slo']) if one_slo else '', base, base, base))
            head = ['TP', 'Dataset', 'Search', 'Setting'] + ([] if one_slo else ['SLO']) + ['Capacity', 'Binding', 'Gain']
            out += _table(head, body, 'l' * len(head), caption, _tex_label(report['campaign'], host, 'capacity'))
        rows = [row for row in pays['crossover'] if row['host'] == host]
        if rows:
            body = [['TP%s' % row['tp'], '%s, $T=%g$' % (tex_escape(row['dataset']), row['temperature']), tex_escape(row['setting']),
                     _crossover(row), str(row['points'])] for row in rows]
            caption = (r'%s: crossover, the concurrency where the serving speedup over %s falls to 1.0 (linear in log '
                       r'concurrency between the last point at or above 1.0 and the next below), in brackets where the ends of '
                       r'its Fieller 95\%% interval fall to 1.0' % (tex_escape(host), base))
            out += _table(['TP', 'Dataset', 'Setting', 'Crossover $c$', 'Points'], body, 'lllrr', caption,
                          _tex_label(report['campaign'], host, 'crossover'))
    return out
