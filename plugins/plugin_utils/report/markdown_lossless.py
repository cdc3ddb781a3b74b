# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, renderer: report.md's section "Lossless and accurate" (lossless.py's rows): the verdict, the
outputs identical to AR's at temperature 0 against AR's own floor, and the task accuracy with its difference to AR's.
results-equality.csv, results-accuracy.csv and results.json hold the same rows whole."""

from __future__ import annotations

from .keys import METHOD_NAMES
from .lossless import ANSWERS_MARK, answers_note
from .markdown_sections import md_escape, _md_code


def _pct(value):
    return '–' if value is None else '%.0f%%' % (value * 100.0)


def _interval(value, low, high, signed=False):
    if value is None:
        return '–'
    form = '%+.1f' if signed else '%.1f'
    text = form % (value * 100.0)
    if low is not None and high is not None:
        text += (' [' + form + ', ' + form + ']') % (low * 100.0, high * 100.0)
    return text


def _positions(item):
    if item['diverge_median'] is None:
        return '–'
    return '%g / %g / %g' % (item['diverge_p10'], item['diverge_median'], item['diverge_p90'])


def lossless_markdown(report):
    """The section's lines; [] when no stage kept outputs."""
    data = report.get('lossless')
    if not data:
        return []
    base = METHOD_NAMES.get(report['baseline_method'], report['baseline_method'])
    lines = ['## Lossless and accurate', '',
             'Does speculation change the answers? Each measured request keeps its output (token ids and text). At '
             'temperature 0 every request is compared token by token with %s\'s output for the same prompt on the same host '
             'and TP (%s\'s run at its lowest concurrency, first repeat: Spec-Bench\'s evaluation/equal.py compares each method '
             'with the autoregressive baseline the same way). %s differs from itself across concurrencies (batch-dependent '
             'numerics): its own rows are the floor, and a method is flagged only below it. Task accuracy is graded on '
             'each stage\'s run at its lowest concurrency, first repeat, one answer per prompt: gsm8k and math500 by the '
             'final answer (math500 with HuggingFace\'s math-verify), humaneval and mbpp by running the reference tests '
             'in a sandbox when the campaign sets accuracy.execute_code. Intervals are 95%%: Wilson\'s for an accuracy, '
             'Newcombe\'s hybrid score interval for a difference. docs/report.md defines each figure.' % (base, base, base), '']
    if data['verdicts']:
        lines += ['**%s marks %d setting(s)** in every table that shows a speedup:' % (ANSWERS_MARK, len(data['verdicts'])), '']
        for item in data['verdicts']:
            lines.append('- %s %s (%s): %s' % (md_escape(item['host']), _md_code(item['stage']), md_escape(item['setting'] or ''),
                                               md_escape('; '.join(item['notes']))))
        lines += ['', answers_note(report['baseline_method']), '']
    else:
        lines += ['No setting\'s outputs or accuracy differ from %s\'s beyond %s\'s own.' % (base, base), '']
    if data['equality']:
        lines += ['### Outputs identical to %s at T=0' % base, '',
                  'Per run: the requests compared, the share token-identical to %s\'s, the shares identical in their first '
                  '32 and 128 tokens, the first position where the ids differ (p10 / median / p90 over the requests that '
                  'differ, 0-based) and %s\'s own share at that concurrency (the floor).' % (base, base), '',
                  '| host | TP | dataset | setting | c | compared | identical | first 32 | first 128 | diverges at | %s floor |'
                  % base, '| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |']
        for item in data['equality']:
            lines.append('| %s | %s | %s | %s | %s | %s | %s%s | %s | %s | %s | %s |' % (
                md_escape(item['host']), item['tp'], md_escape(item['dataset']), md_escape(item['setting']), item['concurrency'],
                item['compared'], _pct(item['identical_share']), ' ⚑' if item['flagged'] else '', _pct(item['identical_32_share']),
                _pct(item['identical_128_share']), _positions(item), _pct(item['floor_share'])))
        lines.append('')
    if data['accuracy']:
        lines += ['### Task accuracy', '',
                  'Accuracy (%%) with its 95%% Wilson interval; Δ: the difference to %s\'s in points, with Newcombe\'s '
                  'interval (conservative here: both sides answer the same prompts).' % base, '',
                  '| host | TP | dataset | T | setting | graded (c, repeat) | accuracy | Δ vs %s |' % base,
                  '| --- | ---: | --- | ---: | --- | --- | ---: | ---: |']
        notes = []
        for item in data['accuracy']:
            lines.append('| %s | %s | %s | %g | %s | %s (c=%s, r%s) | %s | %s%s |' % (
                md_escape(item['host']), item['tp'], md_escape(item['dataset']), item['temperature'], md_escape(item['setting']),
                item['graded'], item['concurrency'], item['repeat'],
                _interval(item['accuracy'], item['accuracy_low'], item['accuracy_high']),
                _interval(item['delta'], item['delta_low'], item['delta_high'], True), ' ⚑' if item['flagged'] else ''))
            if item['note']:
                notes.append('%s %s: %s' % (md_escape(item['setting']), md_escape(item['dataset']), md_escape(item['note'])))
        lines.append('')
        if notes:
            lines += ['Notes: ' + '; '.join(sorted(set(notes))) + '.', '']
    return lines
