# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, step 3: its files as text: results.csv, results.json, report.md, report.tex, compare-<c>.md.

Pure functions of the report that report_rows.build_report makes (and of compare_rows' rows). Text from a host is
escaped in report.md and report.tex.
"""

from __future__ import annotations

import csv
import io
import json
import re

from ansible_collections.specdec.bench.plugins.plugin_utils.report_read import MEASURED
from ansible_collections.specdec.bench.plugins.plugin_utils.report_rows import INVALID, METHOD_NAMES, ROW_KEYS


def _csv_value(value):
    if value is None:
        return ''
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return value


def render_csv(rows, keys=ROW_KEYS):
    out = io.StringIO()
    writer = csv.writer(out, lineterminator='\n')
    writer.writerow(keys)
    for row in rows:
        writer.writerow([_csv_value(row.get(key)) for key in keys])
    return out.getvalue()


def render_json(report):
    return json.dumps(report, indent=2, sort_keys=False, allow_nan=False) + '\n'


def _fmt(value, digits=2, suffix=''):
    return '–' if value is None else '%.*f%s' % (digits, value, suffix)


def _groups(rows):
    """{(host, tp): {'settings': [(stage, setting, method)], 'concurrency': [...], 'cells': {(stage, c): row}}} in row order."""
    groups = {}
    for row in rows:
        group = groups.setdefault((row['host'], row['tp']), {'settings': [], 'concurrency': [], 'cells': {}})
        setting = (row['stage'], row['setting'], row['method'])
        if setting not in group['settings']:
            group['settings'].append(setting)
        if row['concurrency'] not in group['concurrency']:
            group['concurrency'].append(row['concurrency'])
        group['cells'][(row['stage'], row['concurrency'])] = row
    for group in groups.values():
        group['concurrency'].sort()
    return groups


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
_MD_SPECIAL = {'&': '&amp;', '<': '&lt;', '>': '&gt;', '|': '\\|', '\\': '\\\\', '`': '\\`', '[': '\\[', ']': '\\]',
               '\n': ' ', '\r': ' '}
_MD_CODE_RE = re.compile(r'^[A-Za-z0-9._:/@+=, -]+$')


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
    lines = ['# Campaign `%s`: speculative decoding benchmark' % report['campaign'], '']
    lines += [
        'Each cell: output throughput (tok/s) · speedup over %s at the same host, TP and concurrency · '
        'acceptance length τ (tokens per verify step, as the server reports it). **Bold**: the best throughput '
        'at that concurrency. – : not measured; a speedup is left empty when its %s baseline was not measured.'
        % (METHOD_NAMES.get(report['baseline_method'], report['baseline_method']), report['baseline_method']), '',
        'Settings: AR is autoregressive decoding (the baseline, τ = 1 by definition); DFlash n=… drafts a block of n tokens '
        'and verifies it linearly; DDTree B=… k=… verifies a tree of at most B draft tokens built from the top-k candidates '
        'at each DFlash position. Stage ids (`tp4-ddtree-b64-k4`) name the stage folders of the collected results.', '']
    skipped = report.get('skipped_files') or []
    if skipped:
        lines += ['## Files skipped', '',
                  '%d collected file(s) were not read: unreadable, not JSON, or not what the stage writes. Their stages show '
                  'what is known without them.' % len(skipped), '', '| file | reason |', '| --- | --- |']
        lines += ['| %s | %s |' % (_md_code(item['path']), md_escape(item['reason'])) for item in skipped]
        lines.append('')
    groups = _groups(report['rows'])
    if report['best']:
        lines += ['## Best setting per host, TP and concurrency', '',
                  '| host | TP | concurrency | best setting | tok/s | speedup | τ |', '| --- | ---: | ---: | --- | ---: | ---: | ---: |']
        for best in report['best']:
            lines.append('| %s | %s | %s | %s | %s | %s | %s |' % (
                md_escape(best['host']), best['tp'], best['concurrency'], md_escape(best['setting']),
                _fmt(best['output_throughput'], 1), _fmt(best['speedup'], 2, '×'), _fmt(best['accept_length'])))
        lines.append('')
    for host in report['hosts']:
        env = host['environment']
        lines += ['## Host %s' % _md_code(host['host']), '']
        if not host['found']:
            lines += ['Nothing was collected for this campaign from this host.', '']
            continue
        workload = env['workload'] or {}
        lines += [
            '- GPUs: %s' % _gpu_line(env),
            '- NVIDIA driver %s, CUDA %s, SGLang %s' % tuple(md_escape(env[key] or '–') for key in ('driver', 'cuda', 'sglang_version')),
            '- SGLang build profile: %s' % md_escape(env.get('sglang_build') or '– (not recorded)'),
            '- Model %s%s' % (_md_code(env['model'] or '–'), ', draft %s' % _md_code(env['draft']) if env['draft'] else ''),
            '- Workload: %s input tokens, %s output tokens, %s prompts per concurrency' % tuple(
                md_escape(workload.get(key, '–')) for key in ('input_len', 'output_len', 'num_prompts')),
            '']
        host_groups = [(key, group) for key, group in groups.items() if key[0] == host['host']]
        measured = [key for key, group in host_groups if any(r['status'] == MEASURED for r in group['cells'].values())]
        if not measured:
            lines += ['No stage of this campaign was measured on this host (see below for why).', '']
        for (_host, tp), group in host_groups:
            if (_host, tp) not in measured:
                continue
            lines += _markdown_group(tp, group, report['baseline_method'])
        for name in ('speedup', 'accept_length', 'throughput'):
            if (host['host'], name) in plots:
                lines += ['![%s](%s)' % (name.replace('_', ' '), plots[(host['host'], name)]), '']
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
                '%s c=%s %s (%s)' % (_md_code(row['stage']), row['concurrency'], md_escape(row['status']), md_escape(row['reason']))
                for row in partial), '']
    return '\n'.join(lines).rstrip('\n') + '\n'


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


def _markdown_group(tp, group, baseline_method):
    concurrency = group['concurrency']
    gpus = next((row['gpus'] for row in group['cells'].values() if row['gpus']), None)
    lines = ['### TP%s%s' % (tp, ' (%d GPU(s))' % len(gpus.split(',')) if gpus else ''), '']
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
            text = '%s · %s · τ %s' % (_fmt(row['output_throughput'], 1), _fmt(row['speedup'], 2, '×'), _fmt(row['accept_length']))
            cells.append('**%s**' % text if best[c] is row else text)
        lines.append('| %s | %s |' % (md_escape(setting), ' | '.join(cells)))
    lines.append('')
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
                cells.append('%s / %s / %s' % (_fmt(row['median_ttft_ms'], 1), _fmt(row['median_itl_ms'], 2), _fmt(row['p99_itl_ms'], 2)))
        lines.append('| %s | %s |' % (md_escape(setting), ' | '.join(cells)))
    lines.append('')
    return lines


# < > | print as other glyphs in TeX's default font encoding; a line break in a cell or caption would end a paragraph.
_TEX_SPECIAL = {'\\': r'\textbackslash{}', '&': r'\&', '%': r'\%', '$': r'\$', '#': r'\#', '_': r'\_',
                '{': r'\{', '}': r'\}', '~': r'\textasciitilde{}', '^': r'\textasciicircum{}',
                '<': r'\textless{}', '>': r'\textgreater{}', '|': r'\textbar{}', '\n': ' ', '\r': ' '}


def tex_escape(text):
    return ''.join(_TEX_SPECIAL.get(char, char) for char in str(text))


def _tex_fmt(value, digits):
    return '--' if value is None else '%.*f' % (digits, value)


def render_latex(report):
    """report.tex: one booktabs table per host and TP (throughput, speedup, tau per concurrency), ready to \\input.

    Needs \\usepackage{booktabs} in the including document; nothing else.
    """
    out = ['%% specdec.bench report of campaign %s; needs \\usepackage{booktabs}' % tex_escape(report['campaign'])]
    groups = _groups(report['rows'])
    baseline = METHOD_NAMES.get(report['baseline_method'], report['baseline_method'])
    for (host, tp), group in groups.items():
        if not any(row['status'] == MEASURED for row in group['cells'].values()):
            continue
        concurrency = group['concurrency']
        best = {c: _best_stage(group, c) for c in concurrency}
        # Narrower with more concurrencies, so four of them still fit an article's text width (the table is a group:
        # the size and column gap end with it).
        size, gap = (r'\small', 6) if len(concurrency) <= 2 else (r'\footnotesize', 4) if len(concurrency) == 3 else (r'\scriptsize', 2)
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
                values = [_tex_fmt(row['output_throughput'], 0), _tex_fmt(row['speedup'], 2), _tex_fmt(row['accept_length'], 2)]
                if best[c] is row:
                    values = [r'\textbf{%s}' % value if value != '--' else value for value in values]
                cells += values
            out.append('%s & %s \\\\' % (tex_escape(setting), ' & '.join(cells)))
        out += [r'\bottomrule', r'\end{tabular}',
                r'\caption{%s, TP%s: output throughput, speedup over %s at the same TP and concurrency, '
                r'acceptance length $\tau$; best throughput per concurrency in bold.}' % (
                    tex_escape(host), tp, tex_escape(baseline)),
                r'\label{tab:%s-%s-tp%s}' % (
                    re.sub('[^A-Za-z0-9-]', '-', report['campaign']), re.sub('[^A-Za-z0-9-]', '-', host), tp),
                r'\end{table}']
    return '\n'.join(out) + '\n'


def _signed(value, digits, suffix=''):
    return '–' if value is None else '%+.*f%s' % (digits, value, suffix)


def render_comparison_markdown(after, before, rows, skipped=None):
    """compare-<before>.md; skipped: the files of either campaign that were skipped ([{'path', 'reason'}])."""
    lines = ['# Campaign `%s` against `%s`' % (after, before), '',
             'Before → after per host, stage and concurrency; Δ is after minus before (throughput and latency in %). '
             'Speedups are each against their own campaign\'s baseline.', '']
    builds = sorted(set('%s: %s → %s' % (row['host'], row['sglang_build_before'] or '–', row['sglang_build_after'] or '–')
                        for row in rows if row['status_before'] != 'absent' and row['status_after'] != 'absent'
                        and row['sglang_build_before'] != row['sglang_build_after']))
    if builds:
        lines += ['**The two campaigns ran different SGLang builds** (%s): a difference below may come from the build, '
                  'not only from what the campaigns set out to compare.' % md_escape('; '.join(builds)), '']
    lines += ['| host | TP | setting | c | tok/s before → after | Δ tok/s | speedup before → after | Δ speedup | '
              'τ before → after | Δ τ | median TTFT ms before → after | Δ TTFT |',
              '| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |']
    for row in rows:
        lines.append('| %s | %s | %s | %s | %s → %s | %s | %s → %s | %s | %s → %s | %s | %s → %s | %s |' % (
            md_escape(row['host']), row['tp'], md_escape(row['setting']), row['concurrency'],
            _fmt(row['output_throughput_before'], 1), _fmt(row['output_throughput_after'], 1),
            _signed(row['output_throughput_delta_pct'], 1, '%'),
            _fmt(row['speedup_before']), _fmt(row['speedup_after']), _signed(row['speedup_delta'], 2),
            _fmt(row['accept_length_before']), _fmt(row['accept_length_after']), _signed(row['accept_length_delta'], 2),
            _fmt(row['median_ttft_ms_before'], 1), _fmt(row['median_ttft_ms_after'], 1),
            _signed(row['median_ttft_ms_delta_pct'], 1, '%')))
    changed = [row for row in rows if row['status_before'] != row['status_after']]
    if changed:
        lines += ['', 'Status changed: ' + '; '.join('%s %s c=%s: %s → %s' % (
            _md_code(row['host']), _md_code(row['stage']), row['concurrency'], md_escape(row['status_before']),
            md_escape(row['status_after'])) for row in changed)]
    if skipped:
        lines += ['', 'Files skipped (unreadable, not JSON, or not what the stage writes): ' + '; '.join(
            '%s (%s)' % (_md_code(item['path']), md_escape(item['reason'])) for item in skipped)]
    return '\n'.join(lines) + '\n'
