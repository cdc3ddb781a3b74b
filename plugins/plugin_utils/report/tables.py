# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, data: the table builder that feeds both documents (markdown_sections/markdown and
latex_sections/latex emit what it builds; neither builds a table of its own).

- _groups: the per-setting tables' groups, {(host, dataset, temperature, tp): settings, concurrencies, cells};
  setting_table: one group as rows of cells (measured, best, markers), what both documents emit; _markers_used,
  _energy_cells: which markers a table carries, which cells have energy.
- paper_rows: the papers' layout as data (per host and TP, one row per dataset and temperature, per method its
  speedup and acceptance length tau, as the DDTree paper's table); a row is measured at the lowest concurrency of its
  run, a method swept over several settings shows its best setting by mean speedup and names it, the baseline is
  1.00x; an "overall" row averages each method's shown values weighted by the datasets' prompt counts (no interval:
  the rows' settings differ). category_rows: the same per Spec-Bench category, at the setting the dataset's row chose.
  _columns, _markers and _used_markers: the columns of such a table and the markers (not significant, noisy,
  throttled, beside) of its cells.
"""

from __future__ import annotations

from .keys import DEFAULT_NOISY_CV, METHOD_NAMES, PARAM_NAMES
from .read import MEASURED
from .rows import is_default_run


# The parameters a method's settings can differ in, in the order a setting names them (step: a drafter checkpoint's
# training step).
SWEEP_PARAMS = ('budget', 'topk', 'num_draft_tokens', 'step')


# A dataset whose name holds this gets the per-category table (report['categories']).
SPEC_BENCH = 'spec-bench'


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
    left out); None when no row has both. checkpoints' overall speedup of a checkpoint is this same mean."""
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


def _baseline_label(baseline):
    return METHOD_NAMES.get(baseline, baseline)


def _count(value):
    return '–' if value is None else '%g' % value


def _groups(rows):
    """{(host, dataset, temperature, tp): {'settings': [(stage, setting, method)], 'concurrency': [...],
    'cells': {(stage, c): row}}} in row order."""
    groups = {}
    for row in rows:
        key = (row['host'], row['dataset'], row['temperature'], row['tp'])
        group = groups.setdefault(key, {'settings': [], 'concurrency': [], 'cells': {}, 'beside': {}})
        if row.get('beside'):
            group['beside'][row['stage']] = row['beside']
        setting = (row['stage'], row['setting'], row['method'])
        if setting not in group['settings']:
            group['settings'].append(setting)
        if row['concurrency'] not in group['concurrency']:
            group['concurrency'].append(row['concurrency'])
        group['cells'][(row['stage'], row['concurrency'])] = row
    for group in groups.values():
        group['concurrency'].sort()
    return groups


def named_runs(rows):
    """True when a run is other than random prompts at temperature 0: the report then names datasets and temperatures."""
    return any(not is_default_run(row['dataset'], row['temperature']) for row in rows)


def _per_request(rows):
    """True when a row's τ is per request (the run's own requests), not the server's figure."""
    return any(row.get('accept_length_source') == 'requests' for row in rows)


def _repeated(row):
    """True when the row aggregates more than one repeat: its cells then show mean ± half the 95% interval."""
    return (row.get('repeats') or 0) > 1


def _half(row, metric):
    low, high = row.get(metric + '_ci_low'), row.get(metric + '_ci_high')
    return None if low is None or high is None or not _repeated(row) else (high - low) / 2.0


def _not_significant(row, baseline_method):
    return row.get('speedup_significant') is False and row.get('method') != baseline_method


def _markers_used(rows, baseline_method):
    """{'dagger', 'noisy'}: the markers that measured rows carry."""
    used = set()
    for row in rows:
        if row['status'] == MEASURED:
            if _not_significant(row, baseline_method):
                used.add('dagger')
            if row.get('noisy'):
                used.add('noisy')
    return used


def _best_stage(group, concurrency):
    best = None
    for (stage, _setting, _method) in group['settings']:
        row = group['cells'].get((stage, concurrency))
        if row and row['status'] == MEASURED and row['output_throughput'] is not None:
            if best is None or row['output_throughput'] > best['output_throughput']:
                best = row
    return best


def setting_table(group, baseline_method):
    """One group's settings against its concurrencies as data: the one builder of the per-setting tables of report.md
    and report.tex (throughput, speedup and tau; latency; the tau cross-check; energy), which only format it.

    [{'stage', 'setting', 'method', 'beside' (its stage ran beside others), 'cells'}] in the group's order, with one
    cell per concurrency: None where the setting was not planned, else {'row', 'measured' (its stage ran and the run
    completed), 'best' (the highest throughput measured at that concurrency), 'noisy', 'not_significant' (its
    speedup's interval contains 1.0), 'flagged' (the server's tau differs), 'energy' (measured, with tokens per joule)}.
    """
    best = {c: _best_stage(group, c) for c in group['concurrency']}
    table = []
    for stage, setting, method in group['settings']:
        cells = []
        for concurrency in group['concurrency']:
            row = group['cells'].get((stage, concurrency))
            measured = row is not None and row['status'] == MEASURED
            cells.append(None if row is None else {
                'row': row, 'measured': measured, 'best': measured and best[concurrency] is row, 'noisy': bool(row.get('noisy')),
                'not_significant': _not_significant(row, baseline_method), 'flagged': bool(row.get('accept_length_flag')),
                'energy': measured and row.get('output_tokens_per_j') is not None})
        table.append({'stage': stage, 'setting': setting, 'method': method, 'beside': bool(group['beside'].get(stage)),
                      'cells': cells})
    return table


def has_energy(rows):
    """True when a measured row has tokens per joule: the report then shows its energy tables and plot."""
    return any(row['status'] == MEASURED and row.get('output_tokens_per_j') is not None for row in rows)


def _energy_cells(group):
    """The measured rows of a table group that have energy."""
    return [row for row in group['cells'].values() if row['status'] == MEASURED and row.get('output_tokens_per_j') is not None]


def _throttle_reasons(rows):
    reasons = []
    for row in rows:
        for reason in (row.get('throttle_reasons') or '').split(', '):
            if reason and reason not in reasons:
                reasons.append(reason)
    return ', '.join(reasons) or 'not named'
