# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, the papers' layout: per host and TP, one row per dataset and temperature, per method its
speedup and acceptance length tau (mean ± half the 95% interval), as the DDTree paper's table; Spec-Bench per category.

Pure functions of the report that report_rows.build_report makes (rows with the repeats' statistics, categories):
- paper_rows: the tables as data; a row is measured at the lowest concurrency of its run (the papers measure at batch
  1), a method swept over several settings (DDTree budgets, DFlash block sizes) shows its best setting by mean speedup
  and names it, the baseline is 1.00x; an "overall" row averages each method's shown values weighted by the datasets'
  prompt counts (no interval: the rows' settings differ);
- category_rows: the same per Spec-Bench category, at the setting the dataset's row chose;
- markdown_sections / latex_sections: both as report.md and report.tex lines, [] when there is nothing to show (only
  the baseline measured, or every run random prompts at temperature 0: such a report reads as it always did).
A speedup whose 95% interval contains 1.0 is marked not significant (†), a cell whose coefficient of variation exceeds
the report's noisy_cv is marked noisy (*); each legend line is printed only under a table that has the marker.
With energy measured (issue 17), each speculative method also has the column "E/tok vs AR": its energy per output
token over the baseline's (report_rows' energy_ratio, mean ± half its Fieller interval), ‡ where its GPUs were
throttled during a repeat. A speedup measured while other stages ran on the host (issue 19, the row's beside) is marked §.
"""

from __future__ import annotations

import re

from ansible_collections.specdec.bench.plugins.plugin_utils.report_interference import beside_note
from ansible_collections.specdec.bench.plugins.plugin_utils.report_read import MEASURED
from ansible_collections.specdec.bench.plugins.plugin_utils.report_rows import METHOD_NAMES, PARAM_NAMES, is_default_run

# The parameters a method's settings can differ in, in the order a setting names them (step: a drafter checkpoint's
# training step, issue 18).
SWEEP_PARAMS = ('budget', 'topk', 'num_draft_tokens', 'step')
# A dataset whose name holds this gets the per-category table (report['categories']).
SPEC_BENCH = 'spec-bench'
DEFAULT_NOISY_CV = 0.05
NOT_SIGNIFICANT = 'not significant (95% interval contains 1.0x)'
THROTTLED = 'GPUs throttled during a repeat'


def _escapes():
    """(md_escape, tex_escape) of report_render, imported when used: report_render imports this module."""
    from ansible_collections.specdec.bench.plugins.plugin_utils.report_render import md_escape, tex_escape  # pylint: disable=import-outside-toplevel
    return md_escape, tex_escape


def figure_key(host, tp, kind):
    """The key of a papers' figure in write_plots' {key: file name} (beside the (host, dataset, temperature, kind) ones)."""
    return (host, 'TP%s' % tp, None, kind)


def _measured(row):
    return row['status'] == MEASURED and row.get('output_throughput') is not None


def _method_order(report):
    order = [report['baseline_method']]
    for row in report['rows']:
        if row['method'] not in order:
            order.append(row['method'])
    return order


def _choice(row, swept):
    """'B=64': the values of the swept parameters that name a row's setting within its method."""
    return ' '.join('%s=%s' % (PARAM_NAMES.get(name, name), row.get(name)) for name in swept) or None


def _cell(row, swept):
    cell = {'stage': row['stage'], 'setting': row['setting'], 'choice': _choice(row, swept), 'repeats': row.get('repeats'),
            'noisy': row.get('noisy'), 'concurrency': row['concurrency']}
    for name in SWEEP_PARAMS:
        cell[name] = row.get(name)
    for metric in ('speedup', 'accept_length'):
        cell[metric] = row.get(metric)
        cell[metric + '_ci_low'], cell[metric + '_ci_high'] = row.get(metric + '_ci_low'), row.get(metric + '_ci_high')
    cell['speedup_significant'] = row.get('speedup_significant')
    cell['energy_ratio'] = row.get('energy_ratio')
    cell['energy_ratio_ci_low'], cell['energy_ratio_ci_high'] = row.get('energy_ratio_ci_low'), row.get('energy_ratio_ci_high')
    cell['gpu_throttled'] = row.get('gpu_throttled')
    cell['beside'] = row.get('beside') or 0
    return cell


def _rank(row):
    """Best setting: the highest mean speedup; without a baseline measured, the highest tau."""
    return (row.get('speedup') is not None, row.get('speedup') or 0.0, row.get('accept_length') or 0.0)


def prompt_count(report, host, dataset, rows):
    """A dataset's prompt count: its record's (num_prompts, else count), else the requests of one repeat of a row."""
    for record in report.get('datasets') or []:
        if record.get('host') == host and record.get('name') == dataset:
            count = record.get('num_prompts') if record.get('num_prompts') is not None else record.get('count')
            if count:
                return count
    for row in rows:
        if row.get('requests'):
            return row['requests'] / max(row.get('repeats') or 1, 1)
    return None


def weighted_mean(rows, method, metric):
    """The overall row's value: the mean of rows' cells[method][metric] weighted by their prompts (rows without either
    left out); None when no row has both. report_checkpoints' overall speedup of a checkpoint is this same mean."""
    pairs = [(row['prompts'], row['cells'][method][metric]) for row in rows
             if method in row['cells'] and row['cells'][method][metric] is not None and row['prompts']]
    total = sum(weight for weight, _value in pairs)
    return sum(weight * value for weight, value in pairs) / total if total else None


def paper_rows(report):
    """The papers' tables as data, one per host and TP with a speculative method measured, in row order:

    [{'host', 'tp', 'methods': [{'method', 'label', 'fixed': 'k=4' or None, 'swept': ('budget',)}],
      'rows': [{'dataset', 'temperature', 'concurrency', 'prompts', 'cells': {method: cell}}],
      'overall': {'prompts', 'cells': {method: {'speedup', 'accept_length', 'choice', and the swept parameters' values
      when every row chose the same setting}}}}]
    A cell: the chosen row's stage, setting, choice ('B=64' when the method has several settings), budget, topk,
    num_draft_tokens, concurrency, repeats, noisy, speedup (+ _ci_low, _ci_high, _significant), accept_length (+ _ci_low,
    _ci_high). The baseline's cell has speedup 1.0 (no interval). [] when every run is random prompts at temperature 0.
    """
    rows = [row for row in report['rows'] if _measured(row)]
    if not any(not is_default_run(row['dataset'], row['temperature']) for row in report['rows']):
        return []
    baseline = report['baseline_method']
    order = _method_order(report)
    tables = {}
    for row in rows:
        tables.setdefault((row['host'], row['tp']), []).append(row)
    out = []
    for (host, tp), table_rows in tables.items():
        methods = []
        for method in sorted(set(row['method'] for row in table_rows), key=order.index):
            mine = [row for row in table_rows if row['method'] == method]
            swept = tuple(name for name in SWEEP_PARAMS if len(set(row.get(name) for row in mine)) > 1)
            fixed = ' '.join('%s=%s' % (PARAM_NAMES.get(name, name), mine[0][name]) for name in SWEEP_PARAMS
                             if name not in swept and mine[0].get(name) is not None) or None
            methods.append({'method': method, 'label': METHOD_NAMES.get(method, method), 'fixed': fixed, 'swept': swept})
        if not any(item['method'] != baseline for item in methods):
            continue
        runs = []
        for row in table_rows:
            if (row['dataset'], row['temperature']) not in runs:
                runs.append((row['dataset'], row['temperature']))
        paper = []
        for dataset, temperature in runs:
            run_rows = [row for row in table_rows if (row['dataset'], row['temperature']) == (dataset, temperature)]
            with_speedup = [row['concurrency'] for row in run_rows if row['method'] != baseline and row.get('speedup') is not None]
            concurrency = min(with_speedup or [row['concurrency'] for row in run_rows])
            at = [row for row in run_rows if row['concurrency'] == concurrency]
            cells = {}
            for item in methods:
                candidates = [row for row in at if row['method'] == item['method']]
                if not candidates:
                    continue
                best = max(candidates, key=_rank)  # max keeps the first of equals: the row order's
                cells[item['method']] = _cell(best, item['swept'])
                if item['method'] == baseline:
                    cells[baseline].update(speedup=1.0, speedup_ci_low=None, speedup_ci_high=None, speedup_significant=None)
            paper.append({'dataset': dataset, 'temperature': temperature, 'concurrency': concurrency,
                          'prompts': prompt_count(report, host, dataset, at), 'cells': cells})
        overall = {}
        for item in methods:
            chosen = [row['cells'][item['method']] for row in paper if item['method'] in row['cells']]
            same = len(set(cell['choice'] for cell in chosen)) == 1
            overall[item['method']] = dict(((name, chosen[0][name] if same else None) for name in SWEEP_PARAMS),
                                           speedup=weighted_mean(paper, item['method'], 'speedup'),
                                           accept_length=weighted_mean(paper, item['method'], 'accept_length'),
                                           energy_ratio=weighted_mean(paper, item['method'], 'energy_ratio'),
                                           choice=chosen[0]['choice'] if same else None)
        energy = any(cell.get('energy_ratio') is not None for row in paper for method, cell in row['cells'].items()
                     if method != baseline)
        out.append({'host': host, 'tp': tp, 'methods': methods, 'rows': paper, 'energy': energy,
                    'overall': {'prompts': sum(row['prompts'] or 0 for row in paper), 'cells': overall}})
    return out


def category_rows(report):
    """Per host, TP and Spec-Bench run (dataset name holding 'spec-bench'), per category, each method at the setting and
    concurrency the dataset's papers' row chose:

    [{'host', 'tp', 'dataset', 'temperature', 'concurrency', 'methods': [as paper_rows'], 'settings': {method: choice},
      'rows': [{'category', 'requests', 'cells': {method: {'speedup' (+ _ci_low, _ci_high, _significant),
      'accept_length' (+ _ci_low, _ci_high), 'noisy', 'repeats'}}}]}]
    """
    by_stage = {}
    for row in report.get('categories') or []:
        key = (row['host'], row['stage'], row['dataset'], row['temperature'], row['concurrency'])
        by_stage.setdefault(key, []).append(row)
    baseline = report['baseline_method']
    out = []
    for table in paper_rows(report):
        for paper in table['rows']:
            if SPEC_BENCH not in str(paper['dataset']):
                continue
            categories, cells = [], {}
            for method, cell in paper['cells'].items():
                for item in by_stage.get((table['host'], cell['stage'], paper['dataset'], paper['temperature'], paper['concurrency']), []):
                    if item['category'] not in categories:
                        categories.append(item['category'])
                    value = {'requests': item.get('requests'), 'noisy': item.get('noisy'), 'repeats': item.get('repeats')}
                    for key in ('speedup', 'speedup_ci_low', 'speedup_ci_high', 'speedup_significant',
                                'accept_length', 'accept_length_ci_low', 'accept_length_ci_high'):
                        value[key] = item.get(key)
                    if method == baseline:
                        value.update(speedup=1.0, speedup_ci_low=None, speedup_ci_high=None, speedup_significant=None)
                    cells[(item['category'], method)] = value
            if not categories:
                continue
            rows = []
            for category in categories:
                mine = {method: cells[(category, method)] for method in paper['cells'] if (category, method) in cells}
                requests = next((value['requests'] for method, value in mine.items() if value['requests']), None)
                rows.append({'category': category, 'requests': requests, 'cells': mine})
            out.append({'host': table['host'], 'tp': table['tp'], 'dataset': paper['dataset'], 'temperature': paper['temperature'],
                        'concurrency': paper['concurrency'], 'methods': table['methods'],
                        'settings': {method: cell['choice'] for method, cell in paper['cells'].items()}, 'rows': rows})
    return out


# Rendering: one cell's text, then the tables in Markdown and LaTeX.

def _half_width(cell, metric):
    low, high = cell.get(metric + '_ci_low'), cell.get(metric + '_ci_high')
    return None if low is None or high is None else (high - low) / 2.0


def _markers(cell, metric, baseline):
    """('†' when the speedup's interval contains 1.0, '*' when the row is noisy): which markers a cell carries."""
    marks = []
    if metric == 'energy_ratio' and cell.get('gpu_throttled'):
        marks.append('throttled')
    if metric == 'speedup' and not baseline and cell.get('speedup_significant') is False:
        marks.append('dagger')
    if metric == 'speedup' and cell.get('noisy'):
        marks.append('noisy')
    if metric == 'speedup' and cell.get('beside'):
        marks.append('beside')
    return marks


def _md_value(cell, metric, baseline=False, suffix=''):
    if cell is None or cell.get(metric) is None:
        return '–'
    half = None if baseline else _half_width(cell, metric)
    text = '%.2f%s' % (cell[metric], suffix) if half is None else '%.2f ± %.2f%s' % (cell[metric], half, suffix)
    marks = _markers(cell, metric, baseline)
    return (text + ('†' if 'dagger' in marks else '') + ('\\*' if 'noisy' in marks else '') + ('‡' if 'throttled' in marks else '') +
            (' §' if 'beside' in marks else ''))


def _tex_value(cell, metric, baseline=False):
    if cell is None or cell.get(metric) is None:
        return '--'
    half = None if baseline else _half_width(cell, metric)
    text = '%.2f' % cell[metric] if half is None else r'%.2f$\pm$%.2f' % (cell[metric], half)
    marks = _markers(cell, metric, baseline)
    sup = (r'\dagger' if 'dagger' in marks else '') + ('*' if 'noisy' in marks else '') + (r'\ddagger' if 'throttled' in marks else '') + (
        r'\S' if 'beside' in marks else '')
    return text + (r'$^{%s}$' % sup if sup else '')


def _columns(methods, baseline, energy=False):
    """[(method, what)] of a table: the baseline's speedup alone, then per method its setting (when swept), speedup, tau
    and, with energy, its energy ratio."""
    columns = []
    for item in methods:
        if item['method'] == baseline:
            columns.append((item['method'], 'speedup'))
            continue
        if item['swept']:
            columns.append((item['method'], 'choice'))
        columns += [(item['method'], 'speedup'), (item['method'], 'accept_length')]
        if energy:
            columns.append((item['method'], 'energy_ratio'))
    return columns


def _swept_header(item):
    return ', '.join(PARAM_NAMES.get(name, name) for name in item['swept'])


def _method_header(item):
    return '%s%s' % (item['label'], ' (%s)' % item['fixed'] if item['fixed'] else '')


def _choice_value(cell, item):
    """'64' for a DDTree cell whose budget was swept: the values of the swept parameters, in the header's order."""
    if cell is None or all(cell.get(name) is None for name in item['swept']):
        return None
    return ', '.join(str(cell.get(name)) for name in item['swept'])


def _used_markers(cells):
    used = set()
    for cell, metric, baseline in cells:
        if cell is not None and cell.get(metric) is not None:
            marks = _markers(cell, metric, baseline)
            used.update(marks)
            if 'beside' in marks:  # with how many other stages, for the footnote
                used.add(('beside', cell['beside']))
    return used


def _noisy_cv(report):
    cv = report.get('noisy_cv')
    return DEFAULT_NOISY_CV if cv is None else cv


def _legend(used, report, tex_escape=None):
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


def _baseline_label(baseline):
    return METHOD_NAMES.get(baseline, baseline)


def _ci_note(report):
    return ('Cells: mean over the repeats ± half the width of its 95%% interval (Student t for τ, Fieller\'s for the '
            'speedup, which may be slightly asymmetric: results.csv gives both ends); just the mean where one repeat '
            'was measured. Speedup over %s at the same host, TP, dataset, temperature and concurrency.'
            % METHOD_NAMES.get(report['baseline_method'], report['baseline_method']))


def markdown_sections(report, plots=None):
    """report.md's papers' layout: per host and TP the per-dataset table (and its figures, from write_plots' {key: file
    name} as plots), then the Spec-Bench per-category tables. [] when paper_rows has none."""
    md_escape, _tex = _escapes()
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
        legend = _legend(used, report)
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
        legend = _legend(used, report)
        if legend:
            lines += ['; '.join(legend), '']
    return lines


def _count(value):
    return '–' if value is None else '%g' % value


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


def latex_sections(report):
    """report.tex's papers' layout: per host and TP a booktabs table (rows: dataset and temperature, then overall; per
    method its swept setting, speedup and tau), then the Spec-Bench per-category tables. [] when paper_rows has none."""
    _md, tex_escape = _escapes()
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
        caption = (r'%s, TP%s, concurrency %s: speedup and acceptance length $\tau$ per dataset, %s; a swept method at its '
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
    legend = _legend(used, report, tex_escape)
    if legend:
        index = next(number for number, line in enumerate(lines) if line.startswith(r'\caption{'))
        lines[index] = lines[index][:-2] + '; ' + '; '.join(legend) + '.}'
    return lines
