# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, renderer: report.md's section "Why the speedup is what it is" (why.py's figures): the papers'
table with their decode speedup at c=1, per host, TP, dataset, temperature and concurrency the acceptance and the
speedup's decomposition of each setting (with its figure against the DDTree budget), the prefix cache. The long lists
(histogram, per-position acceptance, per-turn hit rates) are shortened here; results-why.csv and results.json hold
them whole.
"""

from __future__ import annotations

from .keys import METHOD_NAMES
from .markdown_sections import md_escape
from .text import _run_label
from .why import CACHE_FLAG, decode_paper_tables, has_figures, why_figure_key, why_groups


# How many entries of a histogram or of the per-position acceptance a cell shows before it says '…'.
SHOWN_ENTRIES = 8


def _fmt(value, digits=2, suffix=''):
    return '–' if value is None else '%.*f%s' % (digits, value, suffix)


def _pct(value):
    return '–' if value is None else '%.0f%%' % (value * 100.0)


def compact_histogram(shares):
    """'0:12% 1:20% … ≥8:3%': the share of verify steps per number of correct drafts, trailing empty entries left out,
    the tail past SHOWN_ENTRIES summed."""
    if not shares:
        return '–'
    last = max([index for index, share in enumerate(shares) if share >= 0.005] or [0])
    shares = shares[:last + 1]
    parts = ['%d:%.0f%%' % (index, share * 100.0) for index, share in enumerate(shares[:SHOWN_ENTRIES])]
    if len(shares) > SHOWN_ENTRIES:
        parts.append('≥%d:%.0f%%' % (SHOWN_ENTRIES, sum(shares[SHOWN_ENTRIES:]) * 100.0))
    return ' '.join(parts)


def compact_positions(positions):
    """'1:.93 2:.81 …': the chance each draft position is accepted, until it falls below 1% or SHOWN_ENTRIES are shown."""
    if not positions:
        return '–'
    kept = [value for value in positions if value >= 0.01][:SHOWN_ENTRIES] or positions[:1]
    text = ' '.join('%d:%s' % (index + 1, ('%.2f' % value).lstrip('0')) for index, value in enumerate(kept))
    return text + (' …' if len(positions) > len(kept) and positions[len(kept)] >= 0.01 else '')


def _interval(item):
    if item.get('speedup_decode') is None:
        return '–'
    if item.get('speedup_decode_ci_low') is None:
        return '%.2f×' % item['speedup_decode']
    return '%.2f× [%.2f, %.2f]' % (item['speedup_decode'], item['speedup_decode_ci_low'], item['speedup_decode_ci_high'])


def _intro(report):
    base = METHOD_NAMES.get(report['baseline_method'], report['baseline_method'])
    return [
        'Why a setting is as fast as it is: how much of each verify step is accepted, and what a verify step costs. '
        'Over the run\'s measured requests, repeats pooled (docs/report.md defines each figure and the reference it '
        'matches). τ in three definitions: **τ\\*** Σ completion tokens / Σ verify steps (the headline τ of every '
        'table), τ mean: the mean of the requests\' own τ (dflash\'s and DDTree\'s benchmarks), τ tok-w: weighted by '
        'the requests\' tokens. Accept rate: Σ correct drafts / Σ proposed drafts (SGLang\'s spec_accept_rate). Drafts '
        'accepted: the share of verify steps that accepted 0, 1, … drafts (SGLang\'s spec_correct_drafts_histogram); '
        'by position: the chance the i-th draft token is accepted (vLLM\'s per-position acceptance). Serving speedup: '
        'output throughput over %s\'s, prefill and queueing included (the headline of the tables above). Decode '
        'speedup: %s\'s mean decode-only time per output token (first token excluded) over the setting\'s, Fieller\'s '
        '95%% interval over the requests (the DFlash and DDTree papers\' definition). Spec-Bench: the mean of the '
        'requests\' tokens/s over %s\'s. Verify cost: %s\'s time per decode step over the setting\'s (below 1: a verify '
        'step costs more than an %s step). Residual: decode speedup / (τ decode × verify cost); τ decode = Σ (tokens − 1) '
        '/ Σ verify steps; 1.00 when every request decodes at its step time over its τ.' % ((base,) * 5), '']


def _paper_lines(report):
    tables = decode_paper_tables(report)
    if not tables:
        if any(item.get('speedup_decode') is not None and item['method'] != report['baseline_method'] for item in report['why']):
            return ['### The papers\' table: decode speedup at c=1', '',
                    'No speculative run at concurrency 1 has a decode speedup: the papers time one request at a time, so '
                    'their table is left out; the runs\' decode speedups at other concurrencies are below.', '']
        return []
    baseline = report['baseline_method']
    lines = ['### The papers\' table: decode speedup at c=1', '',
             'Decode speedup as the DFlash and DDTree papers define it: decode-only time per output token at batch 1 '
             '(concurrency 1), the first token excluded, the mean over the requests, %s\'s over the method\'s (z-lab/dflash '
             '`benchmark.py` `_print_decode_summary`), with Fieller\'s 95%% interval over the requests; τ mean: the mean '
             'of the requests\' own τ, as their benchmarks print it. This is not the serving speedup the tables above '
             'lead with (output throughput, prefill and queueing included). A method with several settings shows its '
             'best by decode speedup, named.' % METHOD_NAMES.get(baseline, baseline), '']
    for table in tables:
        methods = [item for item in table['methods'] if item['method'] != baseline]
        head = ['dataset'] + ['%s %s' % (md_escape(item['label']), what) for item in methods
                              for what in ('setting', 'decode speedup', 'τ mean')]
        lines += ['#### %s TP%s: decode speedup and τ per dataset (c=%d)' % (md_escape(table['host']), table['tp'], 1), '',
                  '| %s |' % ' | '.join(head), '| --- |%s' % (' --- | ---: | ---: |' * len(methods))]
        for row in table['rows']:
            values = [md_escape(_run_label(row['dataset'], row['temperature']))]
            for item in methods:
                cell = row['cells'].get(item['method']) or {}
                values += [md_escape(cell.get('setting') or '–'), _interval(cell), _fmt(cell.get('accept_length_mean_of_means'))]
            lines.append('| %s |' % ' | '.join(values))
        lines.append('')
    return lines


_HEAD = ('| setting | τ\\* | τ mean | τ tok-w | accept rate | drafts accepted (share of steps) | by position | serving '
         'speedup | decode speedup [95%] | Spec-Bench | verify cost | residual |')


def _group_lines(group, plots, shown):
    lines = ['#### %s TP%s, %s, c=%s' % (md_escape(group['host']), group['tp'], md_escape(_run_label(group['dataset'], group['temperature'])),
                                         group['concurrency']), '',
             _HEAD, '| --- |%s' % (' ---: |' * 4 + ' --- | --- |' + ' ---: |' * 5)]
    notes = []
    for item in group['rows']:
        lines.append('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
            md_escape(item['setting']), _fmt(item['accept_length']), _fmt(item['accept_length_mean_of_means']),
            _fmt(item['accept_length_token_weighted']), _pct(item['accept_rate']), compact_histogram(item['accept_histogram_share']),
            compact_positions(item['accept_by_position']), _fmt(item['speedup'], 2, '×'), _interval(item),
            _fmt(item['speedup_specbench'], 2, '×'), _fmt(item['verify_cost_factor']), _fmt(item['residual'])))
        if item.get('note'):
            notes.append('%s: %s' % (item['setting'], item['note']))
    lines.append('')
    if notes:
        lines += ['Note: ' + md_escape('; '.join(notes)) + '.', '']
    key = why_figure_key(group['host'], group['tp'], group['dataset'], group['temperature'])
    if plots.get(key) and key not in shown:  # drawn at the run's lowest concurrency: under its first table
        shown.add(key)
        lines += ['![speedup, τ and verify cost vs DDTree budget](%s)' % plots[key], '']
    return lines


def at_lowest_concurrency(items):
    """The why rows of items at the lowest concurrency of their run (host, TP, dataset, temperature), in order."""
    lowest = {}
    for item in items:
        key = (item['host'], item['tp'], item['dataset'], item['temperature'])
        lowest[key] = min(lowest.get(key, item['concurrency']), item['concurrency'])
    return [item for item in items if item['concurrency'] == lowest[(item['host'], item['tp'], item['dataset'], item['temperature'])]]


def _cache_lines(report):
    items = [item for item in report.get('why') or [] if item.get('cache_hit_rate') is not None]
    base = METHOD_NAMES.get(report['baseline_method'], report['baseline_method'])
    lines = ['### Prefix cache', '']
    if not items:
        return lines + ['No run recorded its cache hits (SGLang\'s meta_info.cached_tokens): results from before them, '
                        'or the sglang client harness.', '']
    lines += ['Cache-hit rate: Σ cached prompt tokens (SGLang\'s meta_info.cached_tokens, served from the radix cache) / '
              'Σ prompt tokens, over the run and per turn of a conversation. ⚑: a speculative setting whose rate, overall '
              'or at a turn, is below %s\'s at the same host, TP, dataset, temperature and concurrency by more than %.0f '
              'points (the hybrid Mamba/attention case: speculation is reported to lose prefix-cache hits there). '
              'Shown at the lowest concurrency of each run; every run is in results-why.csv.' % (base, CACHE_FLAG * 100.0), '',
              '| host | TP | dataset | c | setting | hit rate | per turn |', '| --- | ---: | --- | ---: | --- | ---: | --- |']
    for item in at_lowest_concurrency(items):
        turns = ' '.join('%d:%s' % (index + 1, _pct(value)) for index, value in enumerate(item['cache_hit_rate_by_turn'] or []))
        lines.append('| %s | %s | %s | %s | %s%s | %s | %s |' % (
            md_escape(item['host']), item['tp'], md_escape(_run_label(item['dataset'], item['temperature'])), item['concurrency'],
            md_escape(item['setting']), ' ⚑' if item.get('cache_flag') else '', _pct(item['cache_hit_rate']), turns or '–'))
    lines.append('')
    flagged = [item for item in report.get('why') or [] if item.get('cache_flag')]
    if flagged:
        lines += ['Flagged (the setting\'s cache-hit rate against %s\'s):' % base, '']
        lines += ['- ⚑ %s, %s TP%s, %s, c=%s: %s' % (
            md_escape(item['setting']), md_escape(item['host']), item['tp'], md_escape(_run_label(item['dataset'], item['temperature'])),
            item['concurrency'], md_escape(item['cache_flag_note'])) for item in flagged]
        lines.append('')
    else:
        lines += ['No setting\'s cache-hit rate is below %s\'s by more than %.0f points.' % (base, CACHE_FLAG * 100.0), '']
    return lines


def _server_lines(report):
    """The server's own /metrics over the measured runs beside the requests' figures; [] when no run kept a scrape."""
    items = [item for item in report.get('why') or [] if item.get('server_generation_tokens') is not None or item.get('server_note')]
    if not items:
        return []
    lines = ['### Server metrics', '',
             'What the server counted over the measured runs (SGLang\'s Prometheus /metrics, scraped right before and after '
             'each repeat, counter deltas summed over the repeats), beside the same figures from the requests: τ (verify) = '
             '(Δ generation tokens - Δ requests) / Δ spec_verify_calls, the tokens verify steps made (each request\'s first '
             'token is its prefill\'s); hit rate = Δ cached_tokens / Δ prompt_tokens; queue = the queue-time histogram\'s '
             'mean. A gap between a server figure and the requests\' says one of them miscounts. Shown at the lowest '
             'concurrency of each run; every run is in results-why.csv.', '',
             '| host | TP | dataset | c | setting | server τ (verify) | requests\' τ (decode) | server hit rate | requests\' hit rate '
             '| queue ms | note |', '| --- | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |']
    for item in at_lowest_concurrency(items):
        lines.append('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
            md_escape(item['host']), item['tp'], md_escape(_run_label(item['dataset'], item['temperature'])), item['concurrency'],
            md_escape(item['setting']), _fmt(item['server_accept_length']), _fmt(item['tau_decode']),
            _pct(item['server_cache_hit_rate']), _pct(item['cache_hit_rate']), _fmt(item['server_queue_time_ms'], 1),
            md_escape(item['server_note'] or '')))
    return lines + ['']


def why_markdown(report, plots=None):
    """report.md's "Why the speedup is what it is" section; [] when no row was measured."""
    if not report.get('why'):
        return []
    plots = plots or {}
    lines = ['## Why the speedup is what it is', '']
    if not has_figures(report):
        return lines + ['The results hold none of the acceptance, decode-timing or cache-hit keys (results from before '
                        'them, or the sglang client harness, which keeps no per-request record): no figure to show. '
                        'The serving speedup and τ of the tables above stand as they are.', '']
    lines += _intro(report)
    lines += _paper_lines(report)
    shown = set()
    for group in why_groups(report):
        lines += _group_lines(group, plots, shown)
    lines += _cache_lines(report)
    lines += _server_lines(report)
    return lines
