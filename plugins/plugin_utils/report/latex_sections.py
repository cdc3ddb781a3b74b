# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, renderer: report.tex's building blocks and sections. Escaping (tex_escape: what pdflatex cannot
set is written as Python's ascii() writes it), cell formatting and sizing, then the sections: the papers' tables
(paper_latex, of tables.paper_rows), the checkpoint sweep (checkpoint_latex), each host's interference and time
breakdown tables.
"""

from __future__ import annotations

import re

from .keys import METHOD_NAMES
from .tables import _choice_value, _columns, _count, _half, _half_width, _markers, _method_header, _swept_header, _used_markers, category_rows, paper_rows
from .text import _repeats, best_sentence, legend_lines
from .time import split_known, UNKNOWN


# < > | print as other glyphs in TeX's default font encoding; a line break in a cell or caption would end a paragraph.
_TEX_SPECIAL = {'\\': r'\textbackslash{}', '&': r'\&', '%': r'\%', '$': r'\$', '#': r'\#', '_': r'\_',
                '{': r'\{', '}': r'\}', '~': r'\textasciitilde{}', '^': r'\textasciicircum{}',
                '<': r'\textless{}', '>': r'\textgreater{}', '|': r'\textbar{}', '\n': ' ', '\r': ' ', '\t': ' '}


# What pdflatex sets with LaTeX's default utf8 input in OT1 (article's default) and in T1 alike (probed with TeX Live
# 2022): printable ASCII, Latin-1 and Latin Extended-A less the soft hyphen and the letters OT1 or T1 has no glyph or
# accent for, and the common typographic punctuation. Anything else may stop pdflatex with an error (a control or bidi
# character and an emoji do).
TEX_TEXT = frozenset(
    [chr(code) for code in range(0x20, 0x7f)] +
    [chr(code) for code in range(0xa0, 0x180) if chr(code) not in '\xad«»ÐÞðþĄąĐđĘęĦħĮįĸĿŀŉŊŋŦŧŲųſ'] +
    list('\u2010\u2011\u2012\u2013\u2014\u2015\u2016\u2018\u2019\u201c\u201d\u2020\u2021\u2022\u2026\u2030\u20ac\u2122'))


def tex_escape(text):
    """Text from a host as LaTeX text: its specials escaped, a line break or tab a space, and any character pdflatex
    cannot set (not in TEX_TEXT: a control or bidi character, an emoji, a non-Latin script) written as Python's ascii()
    writes it (\\x1b, \\u202e, \\U0001f525), visible in the PDF and never an error."""
    return ''.join(_TEX_SPECIAL.get(char) or (char if char in TEX_TEXT else r'\textbackslash{}' + ascii(char)[2:-1])
                   for char in str(text))


def _tex_fmt(value, digits):
    return '--' if value is None else '%.*f' % (digits, value)


def _tex_ci(row, metric, digits):
    """The mean, and under it half its 95% interval in small type where the row has repeats (stacked, so that four
    concurrencies still fit an article's text width)."""
    half = _half(row, metric)
    if row.get(metric) is None or half is None:
        return _tex_fmt(row.get(metric), digits)
    return r'\begin{tabular}[t]{@{}r@{}}%.*f\\[-2pt]{\tiny$\pm$%.*f}\end{tabular}' % (digits, row[metric], digits, half)


def _tex_value(cell, metric, baseline=False):
    if cell is None or cell.get(metric) is None:
        return '--'
    half = None if baseline else _half_width(cell, metric)
    text = '%.2f' % cell[metric] if half is None else r'%.2f$\pm$%.2f' % (cell[metric], half)
    marks = _markers(cell, metric, baseline)
    sup = (r'\dagger' if 'dagger' in marks else '') + ('*' if 'noisy' in marks else '') + (r'\ddagger' if 'throttled' in marks else '') + (
        r'\S' if 'beside' in marks else '')
    return text + (r'$^{%s}$' % sup if sup else '')


# Per tabular the largest font (with its column gap) at which its estimated width fits an article's text width (345pt):
# (size, points per character, gap in points). Characters of a digit's width; the estimate errs wide.
_TEX_SIZES = ((r'\small', 5.0, 5), (r'\footnotesize', 4.5, 3), (r'\scriptsize', 3.9, 2), (r'\tiny', 2.8, 1.5))


_TEXT_WIDTH_PT = 330.0


def _visible(text):
    """About how many characters a cell prints: a TeX command or an escaped special counts as one."""
    return len(re.sub(r'\\[A-Za-z]+(\{\})?|\\.', 'x', text).replace('$', '').replace('{', '').replace('}', ''))


def _tex_size(table):
    """(font size, column gap, fits) for a tabular whose cells are table (a list of rows of cell texts); fits is False
    when even the smallest size is estimated wider than the text width (that size is returned then)."""
    widths = [max(_visible(row[column]) for row in table) for column in range(len(table[0]))]
    for size, per_char, gap in _TEX_SIZES:
        if sum(width * per_char + 2 * gap for width in widths) <= _TEXT_WIDTH_PT:
            return size, gap, True
    return _TEX_SIZES[-1][0], _TEX_SIZES[-1][2], False


def _tex_table(columns, methods, baseline, rows, tex_escape, caption, label):
    """(the table's lines, the markers it uses, whether its estimated width fits the text width)."""
    by_method = {item['method']: item for item in methods}
    out = [r'\begin{tabular}{l%s}' % ('r' * len(columns)), r'\toprule']
    groups, spans, position = [], [], 2
    for item in methods:
        width = sum(1 for method, _what in columns if method == item['method'])
        if not width:
            continue
        groups.append(r'\multicolumn{%d}{c}{%s}' % (width, tex_escape(_method_header(item))) if width > 1 else tex_escape(_method_header(item)))
        spans.append(r'\cmidrule(lr){%d-%d}' % (position, position + width - 1))
        position += width
    out.append('Dataset & ' + ' & '.join(groups) + r' \\')
    out.append(' '.join(spans))
    out.append(' & ' + ' & '.join({'choice': tex_escape(_swept_header(by_method[method])), 'speedup': r'$\times$',
                                   'accept_length': r'$\tau$', 'energy_ratio': 'E/tok'}[what] for method, what in columns) + r' \\')
    out.append(r'\midrule')
    used = set()
    for number, (first, cells) in enumerate(rows):
        if number == len(rows) - 1 and first.startswith(r'\textit{overall}'):
            out.append(r'\midrule')
        values = [first]
        for method, what in columns:
            cell = cells.get(method)
            if what == 'choice':
                values.append(tex_escape(_choice_value(cell, by_method[method]) or '--'))
            else:
                values.append(_tex_value(cell, what, method == baseline))
                used.update(_used_markers([(cell, what, method == baseline)]))
        out.append('%s \\\\' % ' & '.join(values))
    cells = [line[:-3].split(' & ') for line in out if line.endswith(r' \\') and 'multicolumn' not in line]
    size, gap, fits = _tex_size(cells)
    out = ['', r'\begin{table}[ht]', r'\centering', size, r'\setlength{\tabcolsep}{%gpt}' % gap] + out
    out += [r'\bottomrule', r'\end{tabular}', r'\caption{%s.}' % caption, r'\label{tab:%s}' % label, r'\end{table}']
    return out, used, fits


def _tex_label(*parts):
    return '-'.join(''.join(char if char.isascii() and (char.isalnum() or char == '-') else '-' for char in str(part)) for part in parts)


def paper_latex(report):
    """report.tex's papers' layout: per host and TP a booktabs table (rows: dataset and temperature, then overall; per
    method its swept setting, speedup and tau), then the Spec-Bench per-category tables. [] when paper_rows has none."""
    tables = paper_rows(report)
    if not tables:
        return []
    baseline = report['baseline_method']
    base = tex_escape(METHOD_NAMES.get(baseline, baseline))
    note = (r'mean over the repeats $\pm$ half its 95\%% interval (Student t for $\tau$, Fieller for the speedup over %s '
            r'at the same dataset, temperature and concurrency), the mean alone for one repeat' % base)
    out = []
    for table in tables:
        columns = _columns(table['methods'], baseline, table['energy'])
        concurrencies = ', '.join(str(c) for c in sorted(set(row['concurrency'] for row in table['rows'])))
        body = [('%s, $T=%g$' % (tex_escape(row['dataset']), row['temperature']), row['cells']) for row in table['rows']]
        body.append((r'\textit{overall} (%s prompts)' % _count(table['overall']['prompts']), table['overall']['cells']))
        caption = (r'%s, TP%s, concurrency %s: serving speedup (output throughput) and acceptance length $\tau$ per dataset, %s; a swept method at its '
                   r'best setting by mean speedup; overall: weighted by the prompt counts of the datasets' % (
                       tex_escape(table['host']), table['tp'], concurrencies, note))
        energy = (r'E/tok: energy per output token over that of %s at the same dataset, temperature and concurrency (below '
                  r'1: less energy per token), mean $\pm$ half its Fieller 95\%% interval' % base)
        label = _tex_label(report['campaign'], table['host'], 'tp%s' % table['tp'], 'datasets')
        lines, used, fits = _tex_table(columns, table['methods'], baseline, body, tex_escape,
                                       caption + ('; ' + energy if table['energy'] else ''), label)
        if table['energy'] and not fits:  # too wide with the energy columns: the energy ratios get a table of their own
            columns = [column for column in columns if column[1] != 'energy_ratio']
            lines, used, _fits = _tex_table(columns, table['methods'], baseline, body, tex_escape, caption, label)
            out += _with_legend(lines, used, report, tex_escape)
            columns = [(method, what) for method, what in _columns(table['methods'], baseline, True)
                       if what in ('choice', 'energy_ratio')]
            lines, used, _fits = _tex_table(columns, table['methods'], baseline, body, tex_escape, (
                r'%s, TP%s, concurrency %s: energy per dataset at the settings of table~\ref{tab:%s}; %s' % (
                    tex_escape(table['host']), table['tp'], concurrencies, label, energy)), label + '-energy')
        out += _with_legend(lines, used, report, tex_escape)
    for table in category_rows(report):
        columns = [column for column in _columns(table['methods'], baseline) if column[1] != 'choice']
        body = [('%s (%s)' % (tex_escape(row['category']), _count(row['requests'])), row['cells']) for row in table['rows']]
        settings = ', '.join('%s %s' % (item['label'], table['settings'][item['method']]) for item in table['methods']
                             if table['settings'].get(item['method']))
        caption = (r'%s, TP%s, %s at $T=%g$, concurrency %s%s: per category (requests per repeat), $\tau$ and the speedup of '
                   r'decode throughput, %s' % (
                       tex_escape(table['host']), table['tp'], tex_escape(table['dataset']), table['temperature'], table['concurrency'],
                       ', %s' % tex_escape(settings) if settings else '', note))
        lines, used, _fits = _tex_table(columns, table['methods'], baseline, body, tex_escape, caption,
                                        _tex_label(report['campaign'], table['host'], 'tp%s' % table['tp'], table['dataset'],
                                                   't%g' % table['temperature'], 'categories'))
        out += _with_legend(lines, used, report, tex_escape)
    return out


def _with_legend(lines, used, report, tex_escape):
    """The table's lines with its markers' legend appended to the caption."""
    legend = legend_lines(used, report, tex_escape)
    if legend:
        index = next(number for number, line in enumerate(lines) if line.startswith(r'\caption{'))
        lines[index] = lines[index][:-2] + '; ' + '; '.join(legend) + '.}'
    return lines


def checkpoint_latex(report):
    """report.tex's Checkpoints tables: per host and TP a booktabs table of steps against datasets (speedup and tau), the
    best checkpoint of each setting named in the caption. [] without a sweep."""
    data = report.get('checkpoints')
    if not data:
        return []
    base = tex_escape(METHOD_NAMES.get(report['baseline_method'], report['baseline_method']))
    out = []
    for table in data['tables']:
        body = []
        for line in table['lines']:
            for entry in line['checkpoints']:
                values = [tex_escape(line['setting']), '%s' % entry['step'], tex_escape(entry['name'] or '--')]
                if line['best'] is entry:
                    values[2] = r'\textbf{%s}' % values[2]
                for dataset in table['datasets']:
                    cell = entry['cells'].get(dataset)
                    values += [_tex_value(cell, 'speedup'), _tex_value(cell, 'accept_length')]
                values += [_tex_value(entry['overall'], 'speedup'), _tex_value(entry['overall'], 'accept_length')]
                body.append(values)
        first = ['Setting', 'Step', 'Checkpoint'] + [r'\multicolumn{2}{c}{%s}' % tex_escape(dataset)
                                                     for dataset in table['datasets'] + ['overall']]
        second = ['', '', ''] + [r'$\times$', r'$\tau$'] * (len(table['datasets']) + 1)
        size, gap, _fits = _tex_size([second] + body)
        spans = ' '.join(r'\cmidrule(lr){%d-%d}' % (4 + 2 * number, 5 + 2 * number) for number in range(len(table['datasets']) + 1))
        best = ' '.join(best_sentence(line, tex_escape, r'$\tau$', r'$\times$') for line in table['lines'])
        caption = (r'%s, TP%s, $T=%g$, concurrency %s: speedup over %s and acceptance length $\tau$ per dataset of each '
                   r'drafter checkpoint (mean $\pm$ half its 95\%% interval; overall: weighted by the prompt counts of the '
                   r'datasets). %s' % (tex_escape(table['host']), table['tp'], table['temperature'], table['concurrency'], base, best))
        out += ['', r'\begin{table}[ht]', r'\centering', size, r'\setlength{\tabcolsep}{%gpt}' % gap,
                r'\begin{tabular}{lrl%s}' % ('rr' * (len(table['datasets']) + 1)), r'\toprule',
                ' & '.join(first) + r' \\', spans, ' & '.join(second) + r' \\', r'\midrule']
        out += ['%s \\\\' % ' & '.join(values) for values in body]
        out += [r'\bottomrule', r'\end{tabular}', r'\caption{%s}' % caption,
                r'\label{tab:%s}' % _tex_label(report['campaign'], table['host'], 'tp%s' % table['tp'], 'checkpoints'), r'\end{table}']
    return out


def _tex_pct(value):
    return '--' if value is None else r'%+.1f\%%' % value


def _tex_number(value, digits):
    return '--' if value is None else '%.*f' % (digits, value)


def label(campaign, host, stage):
    return re.sub('[^A-Za-z0-9-]', '-', '%s-%s-interference-%s' % (campaign, host, stage))


def interference_latex(campaign, items, tex_escape):
    """report.tex's interference tables of one host: one booktabs table per interference stage with numbers, its
    sentence as the caption; a stage without numbers is a comment line."""
    out = []
    for item in items:
        if not item['rows']:
            out += ['', '%% ' + tex_escape(item['summary'])]
            continue
        out += ['', r'\begin{table}[ht]', r'\centering', r'\footnotesize', r'\setlength{\tabcolsep}{3pt}',
                r'\begin{tabular}{lrrrrrrrr}', r'\toprule',
                r' & & & \multicolumn{3}{c}{tok/s} & \multicolumn{3}{c}{median ITL (ms)} \\',
                r'\cmidrule(lr){4-6} \cmidrule(lr){7-9}',
                r'Dataset & $T$ & $c$ & beside & alone & $\Delta$ & beside & alone & $\Delta$ \\', r'\midrule']
        for row in item['rows']:
            out.append(r'%s & %g & %s & %s%s & %s%s & %s & %s & %s & %s \\' % (
                tex_escape(row['dataset']), row['temperature'], row['concurrency'],
                _tex_number(row['output_throughput_beside'], 1), _repeats(row['beside_repeats']),
                _tex_number(row['output_throughput_alone'], 1), _repeats(row['alone_repeats']), _tex_pct(row['output_throughput_diff_pct']),
                _tex_number(row['median_itl_ms_beside'], 2), _tex_number(row['median_itl_ms_alone'], 2), _tex_pct(row['median_itl_ms_diff_pct'])))
        caption = (tex_escape(item['host']) + ', interference: ' + tex_escape(item['summary'].rstrip('.')) +
                   r'; $\Delta$: (beside $-$ alone) / alone; (n): the measured repeats of each mean')
        out += [r'\bottomrule', r'\end{tabular}', r'\caption{%s.}' % caption,
                r'\label{tab:%s}' % label(campaign, item['host'], item['stage']), r'\end{table}']
    return out


def _tex_seconds(value):
    return UNKNOWN if value is None else '%.1f' % value


def _tex_share(value):
    return UNKNOWN if value is None else r'%.1f\%%' % value


def time_latex(host, breakdown, tex_escape, label):
    """One host's time breakdown as a booktabs table for report.tex: the rows, then each stage's wall time and share.
    None of it when nothing of the wall time is split (no timing.json and no stage with timings: older results)."""
    if breakdown is None or breakdown['wall_s'] is None or not split_known(breakdown):
        return []
    out = ['', r'\begin{table}[ht]', r'\centering', r'\small', r'\begin{tabular}{lrr}', r'\toprule',
           r'Where & Seconds & Share \\', r'\midrule']
    out += [r'%s & %s & %s \\' % (tex_escape(row['label']), _tex_seconds(row['seconds']), _tex_share(row['share']))
            for row in breakdown['rows']]
    out += [r'\midrule', r'Campaign wall time & %.1f & 100.0\%% \\' % breakdown['wall_s']]
    if breakdown['stages']:
        out += [r'\midrule', r'Stage & Wall s & Share \\', r'\midrule']
        out += [r'%s & %s & %s \\' % (tex_escape(item['stage']), _tex_seconds(item['wall_s']), _tex_share(item['share']))
                for item in breakdown['stages']]
    caption = (r"%s: where the campaign's wall time went (%s to %s); each stage counts with its last attempt"
               % (tex_escape(host), tex_escape(breakdown['started']), tex_escape(breakdown['finished'])))
    out += [r'\bottomrule', r'\end{tabular}', r'\caption{%s.}' % caption, r'\label{tab:%s}' % label, r'\end{table}']
    return out
