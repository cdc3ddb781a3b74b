# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, renderer: report.md's building blocks and sections. Escaping (md_escape: text from a host is
data, never markup), cell formatting, then the sections: the papers' tables (paper_markdown, of tables.paper_rows),
the checkpoint sweep (checkpoint_markdown), each host's energy tables, interference and time breakdown.
"""

from __future__ import annotations

import re

from .checkpoints import figure_key as checkpoint_figure_key
from .keys import METHOD_NAMES
from .tables import (
    _baseline_label, _choice_value, _columns, _count, _energy_cells, _half, _half_width, _markers, _method_header,
    _repeated, _swept_header, _throttle_reasons, _used_markers, category_rows, figure_key, paper_rows, setting_table)
from .text import _repeats, _run_label, _workload_label, best_sentence, energy_method_line, ENERGY_THROTTLED, legend_lines
from .time import TIMING_FILE, UNKNOWN


# Text from a host (reasons, settings, versions, GPU names, folder names) is data in report.md, never markup: HTML's
# <, > and & become entities, a table pipe and Markdown's own \\ ` [ ] are backslash-escaped, line breaks are spaces.
# $ becomes an entity too: GitHub (and pandoc, markdown-it's dollarmath) render $...$ and $$...$$ as math, and GitHub
# does not take \$ as a plain $ outside math; an entity is never a delimiter.
_MD_SPECIAL = {'&': '&amp;', '<': '&lt;', '>': '&gt;', '|': '\\|', '\\': '\\\\', '`': '\\`', '[': '\\[', ']': '\\]',
               '$': '&#36;', '\n': ' ', '\r': ' '}


_MD_CODE_RE = re.compile(r'[A-Za-z0-9._:/@+=, -]+\Z')  # \Z, not $: a final newline would end a table row


def md_escape(text):
    return ''.join(_MD_SPECIAL.get(char, char) for char in str(text))


def _md_code(text):
    """Text from a host as inline code when that is safe (an id, a path), else escaped plain text."""
    text = str(text)
    return '`%s`' % text if _MD_CODE_RE.match(text) else md_escape(text)


def _fmt(value, digits=2, suffix=''):
    return '–' if value is None else '%.*f%s' % (digits, value, suffix)


def _fmt_ci(row, metric, digits=2, suffix=''):
    """'2.31 ± 0.05×': the mean and half its 95% interval where the row has repeats, else the value as before."""
    half = _half(row, metric)
    if row.get(metric) is None or half is None:
        return _fmt(row.get(metric), digits, suffix)
    return '%.*f ± %.*f%s' % (digits, row[metric], digits, half, suffix)


def _tau(row):
    """τ as a cell shows it; ⚠ when the server's figure differs by more than 2% (accept_length_flag)."""
    return _fmt_ci(row, 'accept_length') + (' ⚠' if row.get('accept_length_flag') else '')


def _md_value(cell, metric, baseline=False, suffix=''):
    if cell is None or cell.get(metric) is None:
        return '–'
    half = None if baseline else _half_width(cell, metric)
    text = '%.2f%s' % (cell[metric], suffix) if half is None else '%.2f ± %.2f%s' % (cell[metric], half, suffix)
    marks = _markers(cell, metric, baseline)
    return (text + ('†' if 'dagger' in marks else '') + ('\\*' if 'noisy' in marks else '') + ('‡' if 'throttled' in marks else '') +
            (' §' if 'beside' in marks else ''))


def _md_table(columns, methods, baseline, rows, md_escape):
    """The header and body of one Markdown table; rows: [(first cell, {method: cell})]. Returns (lines, used markers)."""
    by_method = {item['method']: item for item in methods}
    head, rule = ['dataset'], ['---']
    for method, what in columns:
        item = by_method[method]
        name = md_escape(_method_header(item))
        head.append({'choice': '%s %s' % (name, md_escape(_swept_header(item))), 'speedup': '%s speedup' % name,
                     'accept_length': '%s τ' % name, 'energy_ratio': '%s E/tok vs %s' % (name, md_escape(_baseline_label(baseline)))}[what])
        rule.append('---:')
    lines = ['| %s |' % ' | '.join(head), '| %s |' % ' | '.join(rule)]
    used = set()
    for first, cells in rows:
        values = [first]
        for method, what in columns:
            cell = cells.get(method)
            if what == 'choice':
                values.append(md_escape(_choice_value(cell, by_method[method]) or '–'))
            else:
                values.append(_md_value(cell, what, method == baseline, '×' if what in ('speedup', 'energy_ratio') else ''))
                used.update(_used_markers([(cell, what, method == baseline)]))
        lines.append('| %s |' % ' | '.join(values))
    return lines, used


def _ci_note(report):
    return ('Cells: mean over the repeats ± half the width of its 95%% interval (Student t for τ, Fieller\'s for the '
            'speedup, which may be slightly asymmetric: results.csv gives both ends); just the mean where one repeat '
            'was measured. Serving speedup: output throughput over %s\'s (prefill and queueing included) at the same host, TP, '
            'dataset, temperature and concurrency; the papers\' decode-only speedup is in "Why the speedup is what it is".'
            % METHOD_NAMES.get(report['baseline_method'], report['baseline_method']))


def paper_markdown(report, plots=None):
    """report.md's papers' layout: per host and TP the per-dataset table (and its figures, from write_plots' {key: file
    name} as plots), then the Spec-Bench per-category tables. [] when paper_rows has none."""
    plots = plots or {}
    tables = paper_rows(report)
    if not tables:
        return []
    baseline = report['baseline_method']
    lines = ['## Per dataset, in the papers\' layout', '', _ci_note(report) + ' A method swept over several settings '
             'shows its best by mean speedup, named in its own column (B: the DDTree budget, n: the DFlash block). '
             'Overall: each method\'s values above averaged with the datasets\' prompt counts as weights.', '']
    for table in tables:
        columns = _columns(table['methods'], baseline, table['energy'])
        concurrencies = sorted(set(row['concurrency'] for row in table['rows']))
        lines += ['### %s TP%s: speedup%s and τ per dataset (c=%s)' % (
            md_escape(table['host']), table['tp'], ', energy per token' if table['energy'] else '',
            ', '.join(str(c) for c in concurrencies)), '']
        body = [('%s' % md_escape(_run_label(row['dataset'], row['temperature'])), row['cells']) for row in table['rows']]
        body.append(('**overall** (%s prompts)' % _count(table['overall']['prompts']), table['overall']['cells']))
        table_lines, used = _md_table(columns, table['methods'], baseline, body, md_escape)
        lines += table_lines + ['']
        if table['energy']:
            lines += ['E/tok vs %s: the method\'s energy per output token over %s\'s at the same concurrency (below 1.00×: '
                      'less energy per token; mean ± half its Fieller 95%% interval; the host\'s Energy section says how it '
                      'was measured).' % ((md_escape(_baseline_label(baseline)),) * 2), '']
        legend = legend_lines(used, report)
        if legend:
            lines += ['; '.join(legend), '']
        for kind, alt in (('per_dataset', 'speedup and τ per dataset'), ('speedup_vs_budget_per_dataset', 'speedup vs DDTree budget per dataset')):
            plot = plots.get(figure_key(table['host'], table['tp'], kind))
            if plot:
                lines += ['![%s](%s)' % (alt, plot), '']
    for table in category_rows(report):
        columns = [column for column in _columns(table['methods'], baseline) if column[1] != 'choice']
        settings = ', '.join('%s %s' % (item['label'], table['settings'][item['method']]) for item in table['methods']
                             if table['settings'].get(item['method']))
        lines += ['### %s TP%s: %s per category (c=%s%s)' % (
            md_escape(table['host']), table['tp'], md_escape(_run_label(table['dataset'], table['temperature'])),
            table['concurrency'], ', %s' % md_escape(settings) if settings else ''), '']
        body = [('%s (%s)' % (md_escape(row['category']), _count(row['requests'])), row['cells']) for row in table['rows']]
        table_lines, used = _md_table(columns, table['methods'], baseline, body, md_escape)
        lines += table_lines + ['', 'Per category: τ and speedup of decode throughput (Σ output tokens / Σ request latency) '
                                'over the same category\'s %s requests; (n): requests per repeat.' % METHOD_NAMES.get(baseline, baseline), '']
        legend = legend_lines(used, report)
        if legend:
            lines += ['; '.join(legend), '']
    return lines


def _section_note(report):
    base = METHOD_NAMES.get(report['baseline_method'], report['baseline_method'])
    return ('Each drafter checkpoint of a checkpoint sweep (a stage per checkpoint, named by its training step) at the lowest '
            'temperature and concurrency measured: speedup over %s and τ per dataset, the mean over the repeats ± half '
            'its 95%% interval (Student t for τ, Fieller\'s for the speedup); overall: the datasets\' values averaged with '
            'their prompt counts as weights, as the overall row of the papers\' table, given when every dataset was '
            'measured (its interval: the same average of the interval ends). The best checkpoint has the highest overall '
            'speedup; `evaluation.json` holds these numbers.' % base)


def checkpoint_markdown(report, plots=None):
    """report.md's Checkpoints section: per host and TP the table of steps against datasets, the best checkpoint of each
    setting in a sentence, the figures (write_plots' {checkpoint_figure_key: file name} as plots). [] without a sweep."""
    data = report.get('checkpoints')
    if not data:
        return []
    plots = plots or {}
    lines = ['## Checkpoints', '', _section_note(report), '']
    for table in data['tables']:
        lines += ['### %s TP%s: checkpoints (T=%g, c=%s)' % (
            md_escape(table['host']), table['tp'], table['temperature'], table['concurrency']), '']
        head = ['setting', 'step', 'checkpoint']
        for dataset in table['datasets']:
            head += ['%s speedup' % md_escape(dataset), '%s τ' % md_escape(dataset)]
        head += ['overall speedup', 'overall τ']
        lines += ['| %s |' % ' | '.join(head), '| --- | ---: | --- |%s' % (' ---: |' * (len(head) - 3))]
        for line in table['lines']:
            for entry in line['checkpoints']:
                values = [md_escape(line['setting']), '%s' % entry['step'], md_escape(entry['name'] or '–')]
                if line['best'] is entry:
                    values[2] = '**%s**' % values[2]
                for dataset in table['datasets']:
                    cell = entry['cells'].get(dataset)
                    values += [_md_value(cell, 'speedup', suffix='×'), _md_value(cell, 'accept_length')]
                values += [_md_value(entry['overall'], 'speedup', suffix='×'), _md_value(entry['overall'], 'accept_length')]
                lines.append('| %s |' % ' | '.join(values))
        lines.append('')
        for line in table['lines']:
            lines += [best_sentence(line, md_escape), '']
        for dataset in table['datasets']:
            plot = plots.get(checkpoint_figure_key(table['host'], table['tp'], dataset))
            if plot:
                lines += ['![τ and speedup vs training step, %s](%s)' % (md_escape(dataset), plot), '']
    return lines


def _md_pct(value):
    return '–' if value is None else '%+.1f%%' % value


def _md_number(value, digits):
    return '–' if value is None else '%.*f' % (digits, value)


def interference_markdown(items, md_escape):
    """report.md's Interference section of one host ([] without an interference stage there)."""
    if not items:
        return []
    lines = ['### Interference', '',
             'A stage run beside others (on other GPUs of the host) is re-run alone at the end of the campaign. Δ: '
             '(beside − alone) / alone; a negative Δ of the throughput or a positive Δ of the ITL means the stage ran slower '
             'beside the others. (n): the measured repeats each mean is over. The re-run is a control measurement: it is '
             'in results.csv (interference_of) but not in the tables and speedups above.', '']
    for item in items:
        lines += [md_escape(item['summary']), '']
        if not item['rows']:
            continue
        lines += ['| dataset | T | c | tok/s beside | tok/s alone | Δ tok/s | median ITL ms beside | median ITL ms alone | Δ ITL |',
                  '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |']
        for row in item['rows']:
            lines.append('| %s | %g | %s | %s%s | %s%s | %s | %s | %s | %s |' % (
                md_escape(row['dataset']), row['temperature'], row['concurrency'],
                _md_number(row['output_throughput_beside'], 1), _repeats(row['beside_repeats']),
                _md_number(row['output_throughput_alone'], 1), _repeats(row['alone_repeats']), _md_pct(row['output_throughput_diff_pct']),
                _md_number(row['median_itl_ms_beside'], 2), _md_number(row['median_itl_ms_alone'], 2), _md_pct(row['median_itl_ms_diff_pct'])))
        lines.append('')
        notes = ['%s, T=%g, c=%s: %s' % (row['dataset'], row['temperature'], row['concurrency'], row['note']) for row in item['rows'] if row['note']]
        if notes:
            lines += ['No figure for ' + md_escape('; '.join(notes)) + '.', '']
    return lines


def _md_seconds(value):
    return UNKNOWN if value is None else '%.1f' % value


def _md_share(value):
    return UNKNOWN if value is None else '%.1f%%' % value


def _duration(value):
    """Seconds as h:mm:ss."""
    whole = int(round(value))
    return '%d:%02d:%02d' % (whole // 3600, whole % 3600 // 60, whole % 60)


def time_markdown(breakdown, md_escape, md_code):
    """One host's 'Where the time went' section of report.md (md_escape and md_code: this module's)."""
    lines = ['### Where the time went', '']
    if breakdown is None or breakdown['wall_s'] is None:
        return lines + ['Unknown: no stage recorded when it started and finished, and there is no %s.' % TIMING_FILE, '']
    lines += ['Campaign wall time %.1f s (%s), %s to %s%s. Each stage counts with its last attempt.' % (
        breakdown['wall_s'], _duration(breakdown['wall_s']), breakdown['started'], breakdown['finished'],
        ', from %s' % TIMING_FILE if breakdown['source'] == 'timing.json' else ', from the stages\' status.json'), '',
        '| where | seconds | share |', '| --- | ---: | ---: |']
    lines += ['| %s | %s | %s |' % (row['label'], _md_seconds(row['seconds']), _md_share(row['share'])) for row in breakdown['rows']]
    lines.append('')
    if breakdown['stages']:
        lines += ['| stage | status | wall s | share | server load s | warm-up s | measuring s | orchestration s |',
                  '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |']
        for item in breakdown['stages']:
            lines.append('| %s | %s | %s | %s | %s | %s | %s | %s |' % (
                md_code(item['stage']), md_escape(item['status'] or '–'), _md_seconds(item['wall_s']), _md_share(item['share']),
                _md_seconds(item['server_load_s']), _md_seconds(item['warmup_s']), _md_seconds(item['measuring_s']),
                _md_seconds(item['orchestration_s'])))
        lines.append('')
    lines += ['- %s' % md_escape(note) for note in breakdown['notes']]
    if breakdown['notes']:
        lines.append('')
    return lines


def _energy_cell(row):
    ratio = '' if row.get('energy_ratio') is None else ' · %s' % _fmt_ci(row, 'energy_ratio', 2, '×')
    power = '' if row.get('avg_power_w') is None else ' · %.0f W' % row['avg_power_w']
    return '%s%s%s%s' % (_fmt_ci(row, 'output_tokens_per_j', 2), ratio, power, ' ‡' if row.get('gpu_throttled') else '')


def _markdown_energy(report, host, groups, named, plots):
    """The host's Energy section: per dataset, temperature and TP a table of settings against concurrency (tokens per
    joule · energy per token over the baseline's · average power), its plot; [] when no row has energy."""
    groups = [(key, group) for key, group in groups if _energy_cells(group)]
    if not groups:
        return []
    rows = [row for _key, group in groups for row in _energy_cells(group)]
    baseline = METHOD_NAMES.get(report['baseline_method'], report['baseline_method'])
    lines = ['### Energy', '', energy_method_line(rows) + '.', '',
             'Each cell: output tokens per joule%s · energy per output token over %s\'s at the same host, TP, dataset, '
             'temperature and concurrency (below 1.00×: less energy per token; Fieller\'s 95%% interval in results.csv) · '
             'the GPUs\' average power over the run. – : no energy measured.' % (
                 ' (mean ± half its 95% interval over the repeats)' if any(_repeated(row) for row in rows) else '', baseline), '']
    runs = []
    for (_host, dataset, temperature, tp), group in groups:
        title = '%s: TP%s' % (_workload_label(dataset, temperature), tp) if named else 'TP%s' % tp
        lines += ['#### Energy, %s' % title, '', '| setting | ' + ' | '.join('c=%s' % c for c in group['concurrency']) + ' |',
                  '| --- | ' + ' | '.join('---:' for _c in group['concurrency']) + ' |']
        for line in setting_table(group, report['baseline_method']):
            cells = [_energy_cell(cell['row']) if cell is not None and cell['energy'] else '–' for cell in line['cells']]
            lines.append('| %s | %s |' % (md_escape(line['setting']), ' | '.join(cells)))
        lines.append('')
        throttled = [row for row in _energy_cells(group) if row.get('gpu_throttled')]
        if throttled:
            lines += ['‡ ' + md_escape(ENERGY_THROTTLED % _throttle_reasons(throttled)), '']
        if (dataset, temperature) not in runs:
            runs.append((dataset, temperature))
    for dataset, temperature in runs:
        plot = plots.get((host, dataset, temperature, 'energy'))
        if plot:
            lines += ['![tokens per joule](%s)' % plot, '']
    return lines
