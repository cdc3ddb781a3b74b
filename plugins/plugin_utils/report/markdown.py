# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, renderer: report.md and compare-<c>.md as text.

Pure functions of the report that rows.build_report makes (and of compare.compare_rows' rows). Text from a host is
escaped (markdown_sections.md_escape). A report whose every run is ('random', temperature 0) (no datasets in the
spec, or a campaign from before them) reads as it always did; any other run adds the datasets section and names the
dataset and temperature of each table. A checkpoint sweep adds the Checkpoints section, the load family (SLOs, load
runs, capacity searches) the section "Where speculation pays" (markdown_pays). Each host's section ends with
where its time went. A setting measured while other stages were in flight on the host is marked § in the tables with
one footnote per table, and a host with an interference stage gets the Interference section.
"""

from __future__ import annotations

from .keys import INVALID, METHOD_NAMES
from .markdown_sections import (
    _fmt, _fmt_ci, _markdown_energy, _md_code, _tau, checkpoint_markdown, interference_markdown, md_escape,
    paper_markdown, time_markdown)
from .markdown_pays import pays_markdown
from .schedule_check import check_markdown
from .markdown_why import why_markdown
from .read import MEASURED
from .tables import _groups, _markers_used, _per_request, _repeated, named_runs, setting_table
from .lossless import ANSWERS_MARK, answers_note
from .markdown_lossless import lossless_markdown
from .text import _workload_label, BESIDE_MARK, beside_note, NOT_SIGNIFICANT


def _legend(used, noisy_cv):
    """The legend of the markers used, as report.md prints them under a table."""
    parts = []
    if 'dagger' in used:
        parts.append('† ' + NOT_SIGNIFICANT)
    if 'noisy' in used:
        parts.append('\\* noisy (CV > %g%%)' % (noisy_cv * 100.0))
    return ['; '.join(parts), ''] if parts else []


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
            'Each cell: output throughput (tok/s) · serving speedup (output throughput over %s\'s) at the same host, TP, dataset, temperature and '
            'concurrency · acceptance length τ per request: Σ completion tokens / Σ verify steps over the run\'s own '
            'requests (SGLang\'s meta_info.spec_verify_ct); ⚠ marks a run where the server\'s /server_info figure '
            '(after /flush_cache) differs from it by more than 2%% (the τ cross-check table gives both). **Bold**: the best '
            'throughput at that concurrency. – : not measured; a speedup is left empty when its %s baseline was not measured.'
            % (METHOD_NAMES.get(report['baseline_method'], report['baseline_method']), report['baseline_method']), '']
    else:
        lines += [
            'Each cell: output throughput (tok/s) · serving speedup (output throughput over %s\'s) at the same host, TP and concurrency · '
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
    lines += paper_markdown(report, plots)  # the papers' layout (tables), [] when there is nothing to show
    lines += checkpoint_markdown(report, plots)  # a checkpoint sweep (checkpoints), [] without one
    flagged = [answers_note(report['baseline_method']), ''] if (report.get('lossless') or {}).get('verdicts') else []
    for section in (why_markdown(report, plots),  # acceptance, the papers' speedup, verify cost, cache hits; [] without a measured row
                    pays_markdown(report, plots)):  # capacity at SLO, crossover, goodput, schedule; [] without the load family
        lines += section + (flagged if section else [])
    lines += lossless_markdown(report)  # outputs against AR's and task accuracy; [] where no stage kept outputs
    lines += check_markdown(report.get('schedule_check'), md_escape, _md_code)  # a schedule re-measured; [] without one
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
    """The footnotes of the best settings' table: ran beside other stages, answers that differ from AR's."""
    lines = _beside_best_note(report)
    if any(best['setting'].endswith(ANSWERS_MARK) for best in report['best']):
        lines += [answers_note(report['baseline_method']), '']
    return lines


def _beside_best_note(report):
    """The footnote of the best settings' table when one of them ran beside other stages."""
    counts = [best['beside'] for best in report['best'] if best.get('beside')]
    return ['%s %s' % (BESIDE_MARK, beside_note(counts, bool(report.get('interference')))), ''] if counts else []


def _md_setting(line):
    """A setting's cell (a line of setting_table): marked § when its stage ran beside other stages."""
    return md_escape(line['setting']) + (' ' + BESIDE_MARK if line['beside'] else '')


def _markdown_group(title, group, baseline_method, noisy_cv=0.05, interference=False):
    concurrency = group['concurrency']
    gpus = next((row['gpus'] for row in group['cells'].values() if row['gpus']), None)
    lines = ['### %s%s' % (title, ' (%d GPU(s))' % len(gpus.split(',')) if gpus else ''), '']
    lines.append('| setting | ' + ' | '.join('c=%s' % c for c in concurrency) + ' |')
    lines.append('| --- | ' + ' | '.join('---:' for _c in concurrency) + ' |')
    table = setting_table(group, baseline_method)
    for line in table:
        cells = []
        for cell in line['cells']:
            if cell is None or not cell['measured']:
                cells.append('– (%s)' % (md_escape(cell['row']['status']) if cell else 'not planned'))
                continue
            row = cell['row']
            text = '%s%s · %s%s · τ %s' % (
                _fmt_ci(row, 'output_throughput', 1), '\\*' if cell['noisy'] else '', _fmt_ci(row, 'speedup', 2, '×'),
                '†' if cell['not_significant'] else '', _tau(row))
            cells.append('**%s**' % text if cell['best'] else text)
        lines.append('| %s | %s |' % (_md_setting(line), ' | '.join(cells)))
    lines.append('')
    lines += _legend(_markers_used(group['cells'].values(), baseline_method), noisy_cv)
    if group.get('beside'):
        lines += ['%s %s' % (BESIDE_MARK, beside_note(group['beside'].values(), interference)), '']
    lines += _baseline_note(group, baseline_method)
    if any(line['setting'].endswith(ANSWERS_MARK) for line in table):
        lines += [answers_note(baseline_method), '']
    lines.append('Latency (ms), median TTFT / median ITL / p99 ITL:')
    lines.append('')
    lines.append('| setting | ' + ' | '.join('c=%s' % c for c in concurrency) + ' |')
    lines.append('| --- | ' + ' | '.join('---:' for _c in concurrency) + ' |')
    for line in table:
        cells = []
        for cell in line['cells']:
            if cell is None or not cell['measured']:
                cells.append('–')
            else:
                row = cell['row']
                cells.append('%s / %s / %s' % (_fmt_ci(row, 'median_ttft_ms', 1), _fmt_ci(row, 'median_itl_ms', 2), _fmt(row['p99_itl_ms'], 2)))
        lines.append('| %s | %s |' % (md_escape(line['setting']), ' | '.join(cells)))
    lines.append('')
    return lines + _markdown_tau_check(group, table)


_TAU_CHECK_KEYS = ('accept_length_p10', 'accept_length_median', 'accept_length_p90', 'accept_length_server_info')


def _markdown_tau_check(group, table):
    """τ per request (p10 / median / p90 over the requests) and the /server_info cross-check, where a run has them."""
    rows = [row for row in group['cells'].values() if row['status'] == MEASURED]
    if not any(row.get(key) is not None for row in rows for key in _TAU_CHECK_KEYS):
        return []
    lines = ['τ cross-check: per request p10 / median / p90 · the run\'s τ against /server_info (relative difference; '
             '⚠ beyond 2%):', '',
             '| setting | ' + ' | '.join('c=%s' % c for c in group['concurrency']) + ' |',
             '| --- | ' + ' | '.join('---:' for _c in group['concurrency']) + ' |']
    for line in table:
        cells = []
        for cell in line['cells']:
            row = cell['row'] if cell is not None and cell['measured'] else None
            if row is None or all(row.get(key) is None for key in _TAU_CHECK_KEYS):
                cells.append('–')
                continue
            disagreement = row.get('accept_length_disagreement')
            cells.append('%s / %s / %s · %s vs %s (%s)%s' % (
                _fmt(row.get('accept_length_p10')), _fmt(row.get('accept_length_median')), _fmt(row.get('accept_length_p90')),
                _fmt(row['accept_length']), _fmt(row.get('accept_length_server_info')),
                '–' if disagreement is None else '%.1f%%' % (disagreement * 100.0), ' ⚠' if row.get('accept_length_flag') else ''))
        lines.append('| %s | %s |' % (md_escape(line['setting']), ' | '.join(cells)))
    return lines + ['']


def _signed(value, digits, suffix=''):
    return '–' if value is None else '%+.*f%s' % (digits, value, suffix)


def _significance(text, significant, p=None):
    """A delta as compare-<c>.md shows it: bold when significant, (n.s.) when not, as it is without a test."""
    if significant is None or text == '–':
        return text
    p_text = ' (p=%.3g)' % p if p is not None else ''
    return '**%s**%s' % (text, p_text) if significant else '%s (n.s.%s)' % (text, p_text.replace(' (', ', ').rstrip(')'))


def render_comparison_markdown(after, before, rows, skipped=None, accuracy=None):
    """compare-<before>.md; skipped: the files of either campaign that were skipped ([{'path', 'reason'}]); accuracy:
    lossless.compare_accuracy's rows (the task accuracy of both campaigns)."""
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
    if accuracy:
        lines += ['', 'Task accuracy (%) before → after per host, stage, dataset and temperature, graded as each report grades '
                  'it; Δ in points with Newcombe\'s 95% hybrid score interval, bold when it excludes 0.', '',
                  '| host | TP | setting | dataset | T | accuracy before → after | Δ |', '| --- | ---: | --- | --- | ---: | ---: | ---: |']
        for row in accuracy:
            delta = '%+.1f [%+.1f, %+.1f]' % (100 * row['delta'], 100 * row['delta_low'], 100 * row['delta_high'])
            lines.append('| %s | %s | %s | %s | %g | %.1f (n=%d) → %.1f (n=%d) | %s |' % (
                md_escape(row['host']), row['tp'], md_escape(row['setting']), md_escape(row['dataset']), row['temperature'],
                100 * row['accuracy_before'], row['graded_before'], 100 * row['accuracy_after'], row['graded_after'],
                '**%s**' % delta if row['significant'] else delta))
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
