# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, renderer: report.tex's tables of "Lossless and accurate" (lossless.py's rows): task accuracy
with its difference to AR's, and the outputs identical to AR's at temperature 0 against AR's floor."""

from __future__ import annotations

from .keys import METHOD_NAMES
from .latex_sections import _tex_label, _tex_size, tex_escape
from .lossless import answers_note


def _pct(value, signed=False):
    return '--' if value is None else ((r'%+.1f' if signed else r'%.1f') % (value * 100.0))


def _interval(value, low, high, signed=False):
    text = _pct(value, signed)
    if value is not None and low is not None and high is not None:
        text += r' {\tiny[%s, %s]}' % (_pct(low, signed), _pct(high, signed))
    return text


def _table(head, body, align, caption, label):
    size, gap, _fits = _tex_size([head] + body)
    return (['', r'\begin{table}[ht]', r'\centering', size, r'\setlength{\tabcolsep}{%gpt}' % gap,
             r'\begin{tabular}{%s}' % align, r'\toprule', ' & '.join(head) + r' \\', r'\midrule']
            + ['%s \\\\' % ' & '.join(values) for values in body]
            + [r'\bottomrule', r'\end{tabular}', r'\caption{%s}' % caption, r'\label{%s}' % label, r'\end{table}'])


def lossless_latex(report):
    """The accuracy table and the equality table; [] when no stage kept outputs."""
    data = report.get('lossless')
    if not data:
        return []
    base = tex_escape(METHOD_NAMES.get(report['baseline_method'], report['baseline_method']))
    out = ['', tex_escape(answers_note(report['baseline_method'])) + '.'] if data['verdicts'] else []
    if data['accuracy']:
        body = [[tex_escape(item['host']), 'TP%s' % item['tp'], tex_escape(item['dataset']), '%g' % item['temperature'],
                 tex_escape(item['setting']), '%s' % item['graded'],
                 _interval(item['accuracy'], item['accuracy_low'], item['accuracy_high']),
                 _interval(item['delta'], item['delta_low'], item['delta_high'], True)] for item in data['accuracy']]
        out += _table(['Host', 'TP', 'Dataset', '$T$', 'Setting', 'n', r'Acc.\ (\%)', r'$\Delta$ vs %s' % base], body,
                      'lllrlrrr', r"Task accuracy (\%%) with its 95\%% Wilson interval, graded at each stage's lowest "
                      r"concurrency, first repeat; $\Delta$: the difference to %s in points with Newcombe's hybrid score "
                      r"interval." % base, 'tab:%s' % _tex_label(report['campaign'], 'accuracy'))
    if data['equality']:
        body = [[tex_escape(item['host']), 'TP%s' % item['tp'], tex_escape(item['dataset']), tex_escape(item['setting']),
                 '%s' % item['concurrency'], '%s' % item['compared'], _pct(item['identical_share']),
                 _pct(item['identical_128_share']), _pct(item['floor_share'])] for item in data['equality']]
        out += _table(['Host', 'TP', 'Dataset', 'Setting', '$c$', 'n', r'ident.\ (\%)', r'first 128 (\%)', r'floor (\%)'], body,
                      'llllrrrrr', r"Outputs token-identical to %s's at $T=0$ for the same prompt (Spec-Bench's equal.py), "
                      r"in their first 128 tokens, and %s's own share at that concurrency (the floor)." % (base, base),
                      'tab:%s' % _tex_label(report['campaign'], 'equality'))
    return out
