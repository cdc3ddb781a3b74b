# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, step 3: its files as text: results.csv, results.json, report.md, report.tex, compare-<c>.md.

Pure functions of the report that report_rows.build_report makes (and of compare_rows' rows). Text from a host is
escaped in report.md and report.tex, and never a formula in the CSV files (csv_cell). A report whose every run is
('random', temperature 0) (no datasets in the spec, or a campaign from before them) reads as it always did; any other
run adds the datasets section and names the dataset and temperature of each table. A checkpoint sweep (issue 18) adds
the Checkpoints section (report_checkpoints). Each host's section ends with where its time went (issue 19,
report_time), report.tex with a table of it per host.
Stages run side by side (issue 19): a setting measured while other stages were in flight on the host is marked § in
the tables with one footnote per table, and a host with an interference stage gets the Interference section
(report_interference); results.csv and results.json's rows hold the interference stages' rows after the others.
"""

from __future__ import annotations

import csv
import io
import json
import re

from ansible_collections.specdec.bench.plugins.plugin_utils.report_checkpoints import latex_sections as checkpoint_latex
from ansible_collections.specdec.bench.plugins.plugin_utils.report_checkpoints import markdown_sections as checkpoint_markdown
from ansible_collections.specdec.bench.plugins.plugin_utils.report_interference import beside_note
from ansible_collections.specdec.bench.plugins.plugin_utils.report_interference import latex_lines as interference_latex
from ansible_collections.specdec.bench.plugins.plugin_utils.report_interference import markdown_lines as interference_markdown
from ansible_collections.specdec.bench.plugins.plugin_utils.report_read import MEASURED
from ansible_collections.specdec.bench.plugins.plugin_utils.report_rows import INVALID, METHOD_NAMES, ROW_KEYS, is_default_run
from ansible_collections.specdec.bench.plugins.plugin_utils.report_tables import latex_sections, markdown_sections
from ansible_collections.specdec.bench.plugins.plugin_utils.report_time import latex_lines as time_latex
from ansible_collections.specdec.bench.plugins.plugin_utils.report_time import markdown_lines as time_markdown


# What a spreadsheet reads as the start of a formula (OWASP, "CSV Injection"): such a text cell gets a leading '.
CSV_FORMULA_START = ('=', '+', '-', '@', '\t', '\r')
# A text that is all one decimal number (-3, +0.5, -1e-3): a spreadsheet reads it as that number and runs nothing.
_CSV_NUMBER_RE = re.compile(r'^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$')


def csv_cell(value):
    """One cell of the report's CSV files: None empty, a bool true or false, a number as it is (-0.5 stays a number);
    a text that starts with = + - @, a tab or a carriage return gets a leading ' so that a spreadsheet shows it and
    never runs it as a formula, unless the whole text is a decimal number (_CSV_NUMBER_RE), which stays as it is."""
    if value is None:
        return ''
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (int, float)):
        return value
    text = str(value)
    if text.startswith(CSV_FORMULA_START) and not _CSV_NUMBER_RE.match(text):
        return "'" + text
    return text


def render_csv(rows, keys=ROW_KEYS):
    """results.csv, results-repeats.csv, results-categories.csv and compare-<c>.csv: every cell through csv_cell."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator='\n')
    writer.writerow(keys)
    for row in rows:
        writer.writerow([csv_cell(row.get(key)) for key in keys])
    return out.getvalue()


def all_rows(report):
    """The rows of results.csv and results.json: the result rows, then the interference stages' (control_rows)."""
    return list(report['rows']) + list(report.get('control_rows') or [])


def render_json(report):
    """results.json: the report, its rows being all_rows (control_rows is not a key of its own)."""
    doc = dict((key, value) for key, value in report.items() if key != 'control_rows')
    doc['rows'] = all_rows(report)
    return json.dumps(doc, indent=2, sort_keys=False, allow_nan=False) + '\n'


# The marker of a setting measured while other stages ran on the host (issue 19), in report.md and report.tex.
BESIDE_MARK = '§'
TEX_BESIDE_MARK = r'\textsuperscript{\S}'


def _fmt(value, digits=2, suffix=''):
    return '–' if value is None else '%.*f%s' % (digits, value, suffix)


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


def _workload_label(dataset, temperature):
    return '%s, T=%g' % (dataset, temperature)


def _repeated(row):
    """True when the row aggregates more than one repeat: its cells then show mean ± half the 95% interval."""
    return (row.get('repeats') or 0) > 1


def _half(row, metric):
    low, high = row.get(metric + '_ci_low'), row.get(metric + '_ci_high')
    return None if low is None or high is None or not _repeated(row) else (high - low) / 2.0


def _fmt_ci(row, metric, digits=2, suffix=''):
    """'2.31 ± 0.05×': the mean and half its 95% interval where the row has repeats, else the value as before."""
    half = _half(row, metric)
    if row.get(metric) is None or half is None:
        return _fmt(row.get(metric), digits, suffix)
    return '%.*f ± %.*f%s' % (digits, row[metric], digits, half, suffix)


# The markers of the per-setting tables, and their legends (the papers' tables use the same).
NOT_SIGNIFICANT = 'not significant (95% interval contains 1.0x)'


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


def _legend(used, noisy_cv):
    """The legend of the markers used, as report.md prints them under a table."""
    parts = []
    if 'dagger' in used:
        parts.append('† ' + NOT_SIGNIFICANT)
    if 'noisy' in used:
        parts.append('\\* noisy (CV > %g%%)' % (noisy_cv * 100.0))
    return ['; '.join(parts), ''] if parts else []


def _tau(row):
    """τ as a cell shows it; ⚠ when the server's figure differs by more than 2% (accept_length_flag)."""
    return _fmt_ci(row, 'accept_length') + (' ⚠' if row.get('accept_length_flag') else '')


def _best_stage(group, concurrency):
    best = None
    for (stage, _setting, _method) in group['settings']:
        row = group['cells'].get((stage, concurrency))
        if row and row['status'] == MEASURED and row['output_throughput'] is not None:
            if best is None or row['output_throughput'] > best['output_throughput']:
                best = row
    return best


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


def _gpu_line(env):
    if not env['gpus']:
        return 'none recorded'
    return ', '.join('%d× %s%s' % (gpu['count'], md_escape(gpu['name']), ' (%s MiB)' % gpu['memory_total_mib'] if gpu['memory_total_mib'] else '')
                     for gpu in env['gpus'])


def render_markdown(report, plots=None):
    """report.md: per host the environment, then per TP a table of settings against concurrency, then what did not run."""
    plots = plots or {}
    named = named_runs(report['rows'])
    lines = ['# Campaign `%s`: speculative decoding benchmark' % report['campaign'], '']
    if _per_request(report['rows']) or named:
        lines += [
            'Each cell: output throughput (tok/s) · speedup over %s at the same host, TP, dataset, temperature and '
            'concurrency · acceptance length τ per request: Σ completion tokens / Σ verify steps over the run\'s own '
            'requests (SGLang\'s meta_info.spec_verify_ct); ⚠ marks a run where the server\'s /server_info figure '
            '(after /flush_cache) differs from it by more than 2%% (the τ cross-check table gives both). **Bold**: the best '
            'throughput at that concurrency. – : not measured; a speedup is left empty when its %s baseline was not measured.'
            % (METHOD_NAMES.get(report['baseline_method'], report['baseline_method']), report['baseline_method']), '']
    else:
        lines += [
            'Each cell: output throughput (tok/s) · speedup over %s at the same host, TP and concurrency · '
            'acceptance length τ (tokens per verify step, as the server reports it). **Bold**: the best throughput '
            'at that concurrency. – : not measured; a speedup is left empty when its %s baseline was not measured.'
            % (METHOD_NAMES.get(report['baseline_method'], report['baseline_method']), report['baseline_method']), '']
    lines += [
        'Settings: AR is autoregressive decoding (the baseline, τ = 1 by definition); DFlash n=… drafts a block of n tokens '
        'and verifies it linearly; DDTree B=… k=… verifies a tree of at most B draft tokens built from the top-k candidates '
        'at each DFlash position. Stage ids (`tp4-ddtree-b64-k4`) name the stage folders of the collected results.', '']
    if any(_repeated(row) for row in report['rows']):
        lines += [
            'Repeated runs: a cell is the mean over its repeats ± half its 95%% interval (Student t over the repeats; the '
            'speedup\'s is Fieller\'s interval of the ratio of the two mean throughputs). † marks a speedup whose '
            'interval contains 1.0x (not significant), \\* a run whose throughput or τ varies by more than %g%% '
            '(coefficient of variation) over its repeats (noisy). Each repeat\'s own numbers are in results-repeats.csv.'
            % (report.get('noisy_cv', 0.05) * 100.0), '']
    skipped = report.get('skipped_files') or []
    if skipped:
        lines += ['## Files skipped', '',
                  '%d collected file(s) were not read: unreadable, not JSON, or not what the stage writes. Their stages show '
                  'what is known without them.' % len(skipped), '', '| file | reason |', '| --- | --- |']
        lines += ['| %s | %s |' % (_md_code(item['path']), md_escape(item['reason'])) for item in skipped]
        lines.append('')
    groups = _groups(report['rows'])
    if named or report.get('datasets'):
        lines += _markdown_datasets(report.get('datasets') or [])
    if report['best'] and named:
        lines += ['## Best setting per host, dataset, temperature, TP and concurrency', '',
                  '| host | dataset | T | TP | concurrency | best setting | tok/s | speedup | τ |',
                  '| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |']
        for best in report['best']:
            lines.append('| %s | %s | %g | %s | %s | %s | %s | %s | %s |' % (
                md_escape(best['host']), md_escape(best['dataset']), best['temperature'], best['tp'], best['concurrency'],
                _md_best(best), _fmt(best['output_throughput'], 1), _fmt(best['speedup'], 2, '×'), _tau(best)))
        lines.append('')
        lines += _best_note(report)
    elif report['best']:
        lines += ['## Best setting per host, TP and concurrency', '',
                  '| host | TP | concurrency | best setting | tok/s | speedup | τ |', '| --- | ---: | ---: | --- | ---: | ---: | ---: |']
        for best in report['best']:
            lines.append('| %s | %s | %s | %s | %s | %s | %s |' % (
                md_escape(best['host']), best['tp'], best['concurrency'], _md_best(best),
                _fmt(best['output_throughput'], 1), _fmt(best['speedup'], 2, '×'), _tau(best)))
        lines.append('')
        lines += _best_note(report)
    lines += markdown_sections(report, plots)  # the papers' layout (report_tables), [] when there is nothing to show
    lines += checkpoint_markdown(report, plots)  # a checkpoint sweep (report_checkpoints), [] without one
    for host in report['hosts']:
        env = host['environment']
        lines += ['## Host %s' % _md_code(host['host']), '']
        if not host['found']:
            lines += ['Nothing was collected for this campaign from this host.', '']
            continue
        lines += [
            '- GPUs: %s' % _gpu_line(env),
            '- NVIDIA driver %s, CUDA %s, SGLang %s' % tuple(md_escape(env[key] or '–') for key in ('driver', 'cuda', 'sglang_version')),
            '- SGLang build profile: %s' % md_escape(env.get('sglang_build') or '– (not recorded)'),
            '- Model %s%s' % (_md_code(env['model'] or '–'), ', draft %s' % _md_code(env['draft']) if env['draft'] else ''),
            _workload_line(env['workload'] or {}),
            '']
        host_groups = [(key, group) for key, group in groups.items() if key[0] == host['host']]
        interference = [item for item in report.get('interference') or [] if item['host'] == host['host']]
        measured = [key for key, group in host_groups if any(r['status'] == MEASURED for r in group['cells'].values())]
        if not measured:
            lines += ['No stage of this campaign was measured on this host (see below for why).', '']
        runs = []
        for key, _group in host_groups:
            if key[1:3] not in runs:
                runs.append(key[1:3])
        for dataset, temperature in runs:
            for key, group in host_groups:
                if key in measured and key[1:3] == (dataset, temperature):
                    title = '%s: TP%s' % (_workload_label(dataset, temperature), key[3]) if named else 'TP%s' % key[3]
                    lines += _markdown_group(title, group, report['baseline_method'], report.get('noisy_cv', 0.05),
                                             bool(interference))
            for name in ('speedup', 'accept_length', 'throughput'):
                plot = plots.get((host['host'], dataset, temperature, name))
                if plot:
                    lines += ['![%s](%s)' % (name.replace('_', ' '), plot), '']
        lines += _markdown_energy(report, host['host'], [(key, group) for key, group in host_groups if key in measured],
                                  named, plots)
        lines += interference_markdown(interference, md_escape)
        lines += time_markdown(host.get('time_breakdown'), md_escape, _md_code)
        missing = [item for item in report['not_measured'] if item['host'] == host['host']]
        if missing:
            lines += ['### Not measured', '', '| stage | setting | TP | status | reason |', '| --- | --- | ---: | --- | --- |']
            for item in missing:
                lines.append('| %s | %s | %s | %s | %s |' % (
                    _md_code(item['stage']), md_escape(item['setting']), item['tp'], md_escape(item['status']),
                    md_escape(item['reason'] or '–')))
            lines.append('')
        not_run = set(item['stage'] for item in missing)
        partial = [row for row in report['rows'] if row['host'] == host['host'] and row['stage'] not in not_run
                   and row['status'] in ('missing', 'incomplete', INVALID)]
        if partial:
            lines += ['Runs without a complete result: ' + '; '.join(
                '%s %sc=%s %s (%s)' % (
                    _md_code(row['stage']), '%s ' % md_escape(_workload_label(row['dataset'], row['temperature'])) if named else '',
                    row['concurrency'], md_escape(row['status']), md_escape(row['reason']))
                for row in partial), '']
    return '\n'.join(lines).rstrip('\n') + '\n'


# The energy tables (issue 17): tokens per joule per setting and concurrency, the energy ratio against the baseline.
THROTTLED = 'the GPUs were throttled during a repeat (clock event reasons: %s): energy and throughput may be off'


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
        for stage, setting, _method in group['settings']:
            cells = []
            for c in group['concurrency']:
                row = group['cells'].get((stage, c))
                measured = row is not None and row['status'] == MEASURED and row.get('output_tokens_per_j') is not None
                cells.append(_energy_cell(row) if measured else '–')
            lines.append('| %s | %s |' % (md_escape(setting), ' | '.join(cells)))
        lines.append('')
        throttled = [row for row in _energy_cells(group) if row.get('gpu_throttled')]
        if throttled:
            lines += ['‡ ' + md_escape(THROTTLED % _throttle_reasons(throttled)), '']
        if (dataset, temperature) not in runs:
            runs.append((dataset, temperature))
    for dataset, temperature in runs:
        plot = plots.get((host, dataset, temperature, 'energy'))
        if plot:
            lines += ['![tokens per joule](%s)' % plot, '']
    return lines


def _workload_line(workload):
    """The host's workload: today's random prompts, or the datasets, temperatures and sampling of the spec."""
    random_line = '%s input tokens, %s output tokens, %s prompts per concurrency' % tuple(
        md_escape(workload.get(key, '–')) for key in ('input_len', 'output_len', 'num_prompts'))
    if not workload.get('datasets') and workload.get('temperature') is None:
        return '- Workload: ' + random_line
    names = [item.get('name') for item in workload.get('datasets') or []] or ['random']
    temperatures = workload.get('temperature')
    temperatures = temperatures if isinstance(temperatures, list) else [0 if temperatures is None else temperatures]
    parts = ['datasets %s' % ', '.join(md_escape(name) for name in names),
             'temperature %s' % ', '.join('%g' % value for value in temperatures)]
    for key, label in (('top_p', 'top-p'), ('top_k', 'top-k')):
        if workload.get(key) is not None:
            parts.append('%s %s' % (label, md_escape(workload[key])))
    if workload.get('stop_at_eos') is not None:
        parts.append('stop at EOS' if workload['stop_at_eos'] else 'EOS ignored')
    if workload.get('chat_template_kwargs'):
        parts.append('chat template kwargs %s' % md_escape(', '.join(
            '%s=%s' % (key, value) for key, value in sorted(workload['chat_template_kwargs'].items()))))
    if 'random' in names:
        parts.append('random: ' + random_line)
    return '- Workload: ' + '; '.join(parts)


def _markdown_datasets(datasets):
    """The datasets section: what each host ran, where it came from and the sha256 that identifies it."""
    lines = ['## Datasets', '',
             'sha256: of the normalized prompt set (id, category, turns; before the chat template), as workload_prepare '
             'made it; the templated prompts each host was sent are `prompts_sha256` in results.csv. pinned: how the '
             'source was checked (table: by the sha256 in the collection; first-use / recorded: by the sha256 recorded '
             'when first downloaded; none: a local file).', '']
    if not datasets:
        return lines + ['No dataset was recorded by the stages (random prompts, or results from before datasets).', '']
    lines += ['| host | dataset | kind | source | sha256 | prompts | turns | max new tokens | pinned |',
              '| --- | --- | --- | --- | --- | ---: | --- | ---: | --- |']
    for item in datasets:
        if item['kind'] == 'random':
            source = md_escape('random prompts, %s input / %s output tokens' % (item['input_len'] or '–', item['output_len'] or '–'))
        else:
            source = _md_code(item['source'] or '–')
        count = item['num_prompts'] if item['num_prompts'] is not None else item['count']
        lines.append('| %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
            md_escape(item['host']), md_escape(item['name']), md_escape(item['kind'] or '–'), source,
            _md_code(item['sha256'] or '–'), '–' if count is None else count, md_escape(item['turns'] or '–'),
            '–' if item['max_new_tokens'] is None else item['max_new_tokens'], md_escape(item['pinned'] or '–')))
    return lines + ['']


def _baseline_note(group, baseline_method):
    """Why a TP table has no speedups at some concurrency: its baseline was not measured there."""
    baseline = [row for row in group['cells'].values() if row['method'] == baseline_method]
    missing = [c for c in group['concurrency']
               if not any(row['concurrency'] == c and row['status'] == MEASURED for row in baseline)]
    if not missing:
        return []
    why = '; '.join(sorted(set('%s %s%s' % (_md_code(row['stage']), md_escape(row['status']),
                                            ': %s' % md_escape(row['reason']) if row['reason'] else '')
                               for row in baseline if row['concurrency'] in missing))) or 'no %s stage at this TP' % baseline_method
    return ['No %s baseline measured at c=%s (%s): speedup left empty there.' % (
        baseline_method, ', '.join(str(c) for c in missing), why), '']


def _md_best(best):
    return md_escape(best['setting']) + (' ' + BESIDE_MARK if best.get('beside') else '')


def _best_note(report):
    """The footnote of the best settings' table when one of them ran beside other stages."""
    counts = [best['beside'] for best in report['best'] if best.get('beside')]
    return ['%s %s' % (BESIDE_MARK, beside_note(counts, bool(report.get('interference')))), ''] if counts else []


def _md_setting(group, stage, setting):
    """A setting's cell: marked § when its stage ran beside other stages."""
    return md_escape(setting) + (' ' + BESIDE_MARK if group.get('beside', {}).get(stage) else '')


def _markdown_group(title, group, baseline_method, noisy_cv=0.05, interference=False):
    concurrency = group['concurrency']
    gpus = next((row['gpus'] for row in group['cells'].values() if row['gpus']), None)
    lines = ['### %s%s' % (title, ' (%d GPU(s))' % len(gpus.split(',')) if gpus else ''), '']
    lines.append('| setting | ' + ' | '.join('c=%s' % c for c in concurrency) + ' |')
    lines.append('| --- | ' + ' | '.join('---:' for _c in concurrency) + ' |')
    best = {c: _best_stage(group, c) for c in concurrency}
    for stage, setting, _method in group['settings']:
        cells = []
        for c in concurrency:
            row = group['cells'].get((stage, c))
            if row is None or row['status'] != MEASURED:
                cells.append('– (%s)' % (md_escape(row['status']) if row else 'not planned'))
                continue
            text = '%s%s · %s%s · τ %s' % (
                _fmt_ci(row, 'output_throughput', 1), '\\*' if row.get('noisy') else '', _fmt_ci(row, 'speedup', 2, '×'),
                '†' if _not_significant(row, baseline_method) else '', _tau(row))
            cells.append('**%s**' % text if best[c] is row else text)
        lines.append('| %s | %s |' % (_md_setting(group, stage, setting), ' | '.join(cells)))
    lines.append('')
    lines += _legend(_markers_used(group['cells'].values(), baseline_method), noisy_cv)
    if group.get('beside'):
        lines += ['%s %s' % (BESIDE_MARK, beside_note(group['beside'].values(), interference)), '']
    lines += _baseline_note(group, baseline_method)
    lines.append('Latency (ms), median TTFT / median ITL / p99 ITL:')
    lines.append('')
    lines.append('| setting | ' + ' | '.join('c=%s' % c for c in concurrency) + ' |')
    lines.append('| --- | ' + ' | '.join('---:' for _c in concurrency) + ' |')
    for stage, setting, _method in group['settings']:
        cells = []
        for c in concurrency:
            row = group['cells'].get((stage, c))
            if row is None or row['status'] != MEASURED:
                cells.append('–')
            else:
                cells.append('%s / %s / %s' % (_fmt_ci(row, 'median_ttft_ms', 1), _fmt_ci(row, 'median_itl_ms', 2), _fmt(row['p99_itl_ms'], 2)))
        lines.append('| %s | %s |' % (md_escape(setting), ' | '.join(cells)))
    lines.append('')
    return lines + _markdown_tau_check(group)


_TAU_CHECK_KEYS = ('accept_length_p10', 'accept_length_median', 'accept_length_p90', 'accept_length_server_info')


def _markdown_tau_check(group):
    """τ per request (p10 / median / p90 over the requests) and the /server_info cross-check, where a run has them."""
    rows = [row for row in group['cells'].values() if row['status'] == MEASURED]
    if not any(row.get(key) is not None for row in rows for key in _TAU_CHECK_KEYS):
        return []
    lines = ['τ cross-check: per request p10 / median / p90 · the run\'s τ against /server_info (relative difference; '
             '⚠ beyond 2%):', '',
             '| setting | ' + ' | '.join('c=%s' % c for c in group['concurrency']) + ' |',
             '| --- | ' + ' | '.join('---:' for _c in group['concurrency']) + ' |']
    for stage, setting, _method in group['settings']:
        cells = []
        for c in group['concurrency']:
            row = group['cells'].get((stage, c))
            if row is None or row['status'] != MEASURED or all(row.get(key) is None for key in _TAU_CHECK_KEYS):
                cells.append('–')
                continue
            disagreement = row.get('accept_length_disagreement')
            cells.append('%s / %s / %s · %s vs %s (%s)%s' % (
                _fmt(row.get('accept_length_p10')), _fmt(row.get('accept_length_median')), _fmt(row.get('accept_length_p90')),
                _fmt(row['accept_length']), _fmt(row.get('accept_length_server_info')),
                '–' if disagreement is None else '%.1f%%' % (disagreement * 100.0), ' ⚠' if row.get('accept_length_flag') else ''))
        lines.append('| %s | %s |' % (md_escape(setting), ' | '.join(cells)))
    return lines + ['']


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


def render_latex(report):
    """report.tex: one booktabs table per host and TP (throughput, speedup, tau per concurrency), ready to \\input.

    Needs \\usepackage{booktabs} in the including document; nothing else.
    """
    out = ['%% specdec.bench report of campaign %s; needs \\usepackage{booktabs}' % tex_escape(report['campaign'])]
    groups = _groups(report['rows'])
    baseline = METHOD_NAMES.get(report['baseline_method'], report['baseline_method'])
    named, per_request = named_runs(report['rows']), _per_request(report['rows'])
    out += latex_sections(report)  # the papers' layout (report_tables), [] when there is nothing to show
    out += checkpoint_latex(report)  # a checkpoint sweep (report_checkpoints), [] without one
    for (host, dataset, temperature, tp), group in groups.items():
        if not any(row['status'] == MEASURED for row in group['cells'].values()):
            continue
        concurrency = group['concurrency']
        best = {c: _best_stage(group, c) for c in concurrency}
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
        for stage, setting, _method in group['settings']:
            cells = []
            for c in concurrency:
                row = group['cells'].get((stage, c))
                if row is None or row['status'] != MEASURED:
                    cells += ['--', '--', '--']
                    continue
                values = [_tex_ci(row, 'output_throughput', 0), _tex_ci(row, 'speedup', 2), _tex_ci(row, 'accept_length', 2)]
                if best[c] is row:
                    values = [r'\textbf{%s}' % value if value != '--' else value for value in values]
                marks = [r'$^*$' if row.get('noisy') else '',
                         r'$^\dagger$' if _not_significant(row, report['baseline_method']) else '',
                         r'$^\ddagger$' if row.get('accept_length_flag') else '']
                cells += [value + mark for value, mark in zip(values, marks)]
            out.append('%s & %s \\\\' % (tex_escape(setting) + (TEX_BESIDE_MARK if group['beside'].get(stage) else ''), ' & '.join(cells)))
        flagged = any(row.get('accept_length_flag') for row in group['cells'].values() if row['status'] == MEASURED)
        if named:
            caption = (r'%s, dataset %s at temperature %g, TP%s: output throughput, speedup over %s at the same TP, dataset, '
                       r'temperature and concurrency, ' % (tex_escape(host), tex_escape(dataset), temperature, tp, tex_escape(baseline)))
            label = '%s-%s-%s-t%g-tp%s' % (report['campaign'], host, dataset, temperature, tp)
        else:
            caption = r'%s, TP%s: output throughput, speedup over %s at the same TP and concurrency, ' % (
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
        for stage, setting, _method in group['settings']:
            cells = []
            for c in concurrency:
                row = group['cells'].get((stage, c))
                if row is None or row['status'] != MEASURED or row.get('output_tokens_per_j') is None:
                    cells += ['--', '--']
                    continue
                mark = r'$^\ddagger$' if row.get('gpu_throttled') else ''
                cells += [_tex_ci(row, 'output_tokens_per_j', 2) + mark, _tex_ci(row, 'energy_ratio', 2)]
            out.append('%s & %s \\\\' % (tex_escape(setting), ' & '.join(cells)))
        where = (r'dataset %s at temperature %g, ' % (tex_escape(dataset), temperature)) if named else ''
        caption = (r'%s, %sTP%s: output tokens per joule and energy per output token over %s at the same TP, dataset, '
                   r'temperature and concurrency (E/tok; below 1: less energy per token); %s' % (
                       tex_escape(host), where, tp, tex_escape(baseline), tex_escape(energy_method_line(rows)).replace('⚠ ', '')))
        repeats = sorted(set(row['repeats'] for row in rows if _repeated(row)))
        if repeats:
            caption += r'; mean $\pm$ half the 95\%% interval over %s repeats' % '/'.join(str(n) for n in repeats)
        throttled = [row for row in rows if row.get('gpu_throttled')]
        if throttled:
            caption += r'; $^\ddagger$: ' + tex_escape(THROTTLED % _throttle_reasons(throttled))
        label = '%s-%s-%s-t%g-tp%s-energy' % (report['campaign'], host, dataset, temperature, tp) if named else \
            '%s-%s-tp%s-energy' % (report['campaign'], host, tp)
        out += [r'\bottomrule', r'\end{tabular}', r'\caption{%s.}' % caption,
                r'\label{tab:%s}' % re.sub('[^A-Za-z0-9-]', '-', label), r'\end{table}']
    return out


def _signed(value, digits, suffix=''):
    return '–' if value is None else '%+.*f%s' % (digits, value, suffix)


def _significance(text, significant, p=None):
    """A delta as compare-<c>.md shows it: bold when significant, (n.s.) when not, as it is without a test."""
    if significant is None or text == '–':
        return text
    p_text = ' (p=%.3g)' % p if p is not None else ''
    return '**%s**%s' % (text, p_text) if significant else '%s (n.s.%s)' % (text, p_text.replace(' (', ', ').rstrip(')'))


def render_comparison_markdown(after, before, rows, skipped=None):
    """compare-<before>.md; skipped: the files of either campaign that were skipped ([{'path', 'reason'}])."""
    lines = ['# Campaign `%s` against `%s`' % (after, before), '',
             'Before → after per host, stage%s and concurrency; Δ is after minus before (throughput and latency in %%). '
             'Speedups are each against their own campaign\'s baseline.' % (', dataset, temperature' if named_runs(rows) else ''), '']
    builds = sorted(set('%s: %s → %s' % (row['host'], row['sglang_build_before'] or '–', row['sglang_build_after'] or '–')
                        for row in rows if row['status_before'] != 'absent' and row['status_after'] != 'absent'
                        and row['sglang_build_before'] != row['sglang_build_after']))
    if builds:
        lines += ['**The two campaigns ran different SGLang builds** (%s): a difference below may come from the build, '
                  'not only from what the campaigns set out to compare.' % md_escape('; '.join(builds)), '']
    named = named_runs(rows)
    tested = any(row.get('output_throughput_p') is not None or row.get('speedup_change_significant') is not None for row in rows)
    if tested:
        lines += ['Significance (runs with 2 or more repeats on both sides): tok/s by Welch\'s t-test over the repeats of '
                  'each campaign (unequal variances; p given, significant when p < 0.05); the speedup by its two 95% '
                  'Fieller intervals (significant when they do not overlap). A bold Δ is significant; (n.s.) is not.', '']
    run_head, run_rule = ('dataset | T | ', '--- | ---: | ') if named else ('', '')
    lines += ['| host | TP | setting | %sc | tok/s before → after | Δ tok/s | speedup before → after | Δ speedup | '
              'τ before → after | Δ τ | median TTFT ms before → after | Δ TTFT |' % run_head,
              '| --- | ---: | --- | %s---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |' % run_rule]
    for row in rows:
        run = '%s | %g | ' % (md_escape(row['dataset']), row['temperature']) if named else ''
        lines.append('| %s | %s | %s | %s%s | %s → %s | %s | %s → %s | %s | %s → %s | %s | %s → %s | %s |' % (
            md_escape(row['host']), row['tp'], md_escape(row['setting']), run, row['concurrency'],
            _fmt(row['output_throughput_before'], 1), _fmt(row['output_throughput_after'], 1),
            _significance(_signed(row['output_throughput_delta_pct'], 1, '%'), row.get('output_throughput_significant'),
                          row.get('output_throughput_p')),
            _fmt(row['speedup_before']), _fmt(row['speedup_after']),
            _significance(_signed(row['speedup_delta'], 2), row.get('speedup_change_significant')),
            _fmt(row['accept_length_before']), _fmt(row['accept_length_after']), _signed(row['accept_length_delta'], 2),
            _fmt(row['median_ttft_ms_before'], 1), _fmt(row['median_ttft_ms_after'], 1),
            _signed(row['median_ttft_ms_delta_pct'], 1, '%')))
    changed = [row for row in rows if row['status_before'] != row['status_after']]
    if changed:
        lines += ['', 'Status changed: ' + '; '.join('%s %s %sc=%s: %s → %s' % (
            _md_code(row['host']), _md_code(row['stage']),
            '%s ' % md_escape(_workload_label(row['dataset'], row['temperature'])) if named else '', row['concurrency'],
            md_escape(row['status_before']), md_escape(row['status_after'])) for row in changed)]
    if skipped:
        lines += ['', 'Files skipped (unreadable, not JSON, or not what the stage writes): ' + '; '.join(
            '%s (%s)' % (_md_code(item['path']), md_escape(item['reason'])) for item in skipped)]
    return '\n'.join(lines) + '\n'
