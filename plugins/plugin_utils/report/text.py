# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, renderer: the words report.md and report.tex share (the markers' legends, the notes on stages
run beside others, the best checkpoint's sentence, how energy was measured), each with the escape of its document.
"""

from __future__ import annotations

from .checkpoints import OVERALL_NOTE
from .tables import _noisy_cv


NOT_SIGNIFICANT = 'not significant (95% interval contains 1.0x)'


THROTTLED = 'GPUs throttled during a repeat'


def legend_lines(used, report, tex_escape=None):
    """The legend lines of the markers a table uses, in Markdown (tex_escape None) or LaTeX."""
    lines = []
    noisy = 'noisy (CV > %g%%)' % (_noisy_cv(report) * 100.0)
    if 'dagger' in used:
        lines.append(r'$^\dagger$ ' + tex_escape(NOT_SIGNIFICANT) if tex_escape else '† ' + NOT_SIGNIFICANT)
    if 'noisy' in used:
        lines.append(r'$^*$ ' + tex_escape(noisy) if tex_escape else '\\* ' + noisy)
    if 'throttled' in used:
        lines.append(r'$^\ddagger$ ' + tex_escape(THROTTLED) if tex_escape else '‡ ' + THROTTLED)
    if 'beside' in used:
        note = beside_note([tag[1] for tag in used if isinstance(tag, tuple)], bool(report.get('interference')))
        lines.append(r'$^\S$ ' + tex_escape(note) if tex_escape else '§ ' + note)
    return lines


def _run_label(dataset, temperature):
    return '%s, T=%g' % (dataset, temperature)


# The marker of a setting measured while other stages ran on the host, in report.md and report.tex.
BESIDE_MARK = '§'


def _workload_label(dataset, temperature):
    return '%s, T=%g' % (dataset, temperature)


def energy_method_line(rows):
    """How the energy of these rows was measured, in words: NVML's counter or instant power samples, the backends,
    per measured repeat; never the server's average."""
    counts = {}
    for row in rows:
        for method in (row.get('energy_method') or 'unknown').split(', '):
            for backend in (row.get('energy_backend') or 'unknown').split(', '):
                counts[(method, backend)] = counts.get((method, backend), 0) + 1
    words = {'counter': 'NVML\'s total-energy counter, read right before the first request and right after the last '
                        'response',
             'samples': 'the GPUs\' instant power samples integrated over the run'}
    parts = ['%s (%s) for %d run(s)' % (words.get(method, 'method %s' % method), backend, count)
             for (method, backend), count in sorted(counts.items())]
    line = ('Energy per measured repeat (never the warm-up), the stage\'s GPUs together, by %s; never the server\'s '
            'average power' % '; '.join(parts))
    if any('average' in (row.get('power_source') or '') for row in rows):
        line += ('. ⚠ Some runs had only the 1-second average power (power.draw, no instant reading on that driver), '
                 'which lags load changes: their energy is approximate')
    return line


# The energy tables: tokens per joule per setting and concurrency, the energy ratio against the baseline.
ENERGY_THROTTLED = 'the GPUs were throttled during a repeat (clock event reasons: %s): energy and throughput may be off'


def beside_note(counts, interference=False):
    """The footnote of a table whose marked settings ran beside counts (other stages in flight) other stages; interference:
    the host has an Interference section to point to."""
    counts = sorted(set(counts))
    many = '%d' % counts[0] if len(counts) == 1 else '%d to %d' % (counts[0], counts[-1])
    return 'measured while %s other stage%s ran on other GPUs of the host%s' % (
        many, '' if counts == [1] else 's', '; see Interference' if interference else '')


def _interval_text(low, high):
    return '' if low is None or high is None else ' [%.2f, %.2f]' % (low, high)


def best_sentence(line, escape=None, tau='τ', times='×'):
    """'Best checkpoint of DFlash n=16: checkpoint-500 (step 500), overall speedup 3.10× [2.90, 3.30], τ 5.21, weighted
    by prompts as the overall row of the papers' table.' of one line. escape: applied to the text parts (md_escape,
    tex_escape), tau and times: how the symbols are written (LaTeX: math mode)."""
    escape = escape or (lambda text: text)
    best = line['best']
    if best is None:
        return escape('Best checkpoint of %s: none (no overall speedup: the baseline or a dataset was not measured).' % line['setting'])
    overall = best['overall']
    text = '%s%s (step %s), overall speedup %.2f' % (
        escape('Best checkpoint of %s: ' % line['setting']), escape(best['name'] or best['stage']), best['step'], overall['speedup'])
    text += times + _interval_text(overall['speedup_ci_low'], overall['speedup_ci_high'])
    if overall['accept_length'] is not None:
        text += ', %s %.2f' % (tau, overall['accept_length'])
    return text + escape(', %s.' % OVERALL_NOTE)


def _repeats(value):
    return '' if value is None else ' (%d)' % value
