# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, data: why the speedup is what it is, per run (a row: host, stage, dataset, temperature and
concurrency). Pure functions of the result files' acceptance, decode and cache keys (the harness's SPEC_KEYS,
DECODE_KEYS and CACHE_KEYS); docs/report.md defines each figure and names the reference it matches.

Per row, its measured repeats pooled:
- tau in three definitions: accept_length (step-pooled, sum tokens / sum verify steps: the headline, the row's own),
  accept_length_mean_of_means (the mean of the requests' tokens / steps: dflash's and DDTree's benchmarks),
  accept_length_token_weighted; and accept_rate (sum correct drafts / sum proposed drafts). Each the mean over the
  repeats, as the row's tau is.
- accept_histogram: the repeats' histograms summed element-wise (index = correct drafts in a verify step, value =
  steps); accept_histogram_share its shares of the verify steps; accept_by_position from the summed histogram: entry
  i-1 = sum_{j>=i} hist[j] / sum(hist), the chance the i-th draft token is accepted in a verify step.
- decode timing: the requests of all repeats as one sample (mean_tpot_ms, decode_tpot_sd_ms, decode_tpot_n pooled
  exactly: the mean weighted by the counts, the sd from the pooled sums of squares); decode_time_s, decode_tokens and
  decode_steps summed; tau_decode = decode_tokens / decode_steps; step_time_ms = decode_time_s / decode_steps * 1000;
  request_tokens_per_s_mean the mean over the repeats.
- against the row's speedup baseline (AR at the same host, TP, GPUs, dataset, temperature, concurrency):
  speedup_decode = AR mean TPOT / the row's, with Fieller's 95% interval over the two samples of requests
  (stats.fieller_moments); speedup_specbench = the row's request_tokens_per_s_mean / AR's; verify_cost_factor = AR
  step_time_ms / the row's; residual = speedup_decode / (tau_decode * verify_cost_factor): 1.0 when every request's
  TPOT is its step time over its tau; below 1 what the mean of per-request ratios, prefix effects and uneven requests
  took away.
- cache: cached_tokens summed, cache_hit_rate and cache_hit_rate_by_turn the means over the repeats; a speculative row
  whose hit rate, overall or at a turn, is below its AR baseline's by more than CACHE_FLAG is flagged, cache_flag_note
  naming both numbers.
A row whose results lack the keys (results from before them, the sglang client harness) has those figures null and
a note saying which are missing; never an error.
"""

from __future__ import annotations

import math

from .keys import METHOD_NAMES, RUN_KEYS
from .read import MEASURED
from .stats import fieller_moments


# How far (absolute, a share of the prompt tokens) a speculative row's cache-hit rate may fall below AR's before it is
# flagged: the hybrid Mamba/attention case loses most of turn 2's prefix, far more than noise between runs.
CACHE_FLAG = 0.2


# The columns of results-why.csv and of results.json's why rows.
WHY_KEYS = (
    'host', 'campaign', 'stage', 'method', 'setting', 'tp', 'budget', 'topk', 'num_draft_tokens', 'dataset', 'temperature',
    'concurrency', 'repeats', 'baseline_stage', 'accept_length', 'accept_length_mean_of_means', 'accept_length_token_weighted',
    'accept_rate', 'accept_histogram', 'accept_histogram_share', 'accept_by_position', 'mean_tpot_ms', 'decode_tpot_sd_ms',
    'decode_tpot_n', 'decode_time_s', 'decode_tokens', 'decode_steps', 'tau_decode', 'step_time_ms',
    'request_tokens_per_s_mean', 'speedup', 'speedup_decode', 'speedup_decode_ci_low', 'speedup_decode_ci_high',
    'speedup_specbench', 'verify_cost_factor', 'residual', 'cached_tokens', 'cache_hit_rate', 'cache_hit_rate_by_turn',
    'baseline_cache_hit_rate', 'baseline_cache_hit_rate_by_turn', 'cache_flag', 'cache_flag_note', 'server_prompt_tokens',
    'server_cached_tokens', 'server_cache_hit_rate', 'server_generation_tokens', 'server_requests', 'server_verify_calls',
    'server_accept_length', 'server_queue_time_ms', 'server_note', 'note')

# SGLang 0.5.23's metric families (prometheus_client's names, the counters without _total) the server figures read
# (plugins/plugin_utils/sglang_builds/sglang-0.5.23.metrics.json lists them with their source).
SERVER_COUNTERS = {'prompt': 'sglang:prompt_tokens', 'cached': 'sglang:cached_tokens', 'generation': 'sglang:generation_tokens',
                   'requests': 'sglang:num_requests', 'verify': 'sglang:spec_verify_calls'}
SERVER_QUEUE = 'sglang:queue_time_seconds'


# The row's own keys a why row repeats.
_ROW_NAMES = ('host', 'campaign', 'stage', 'method', 'setting', 'tp', 'budget', 'topk', 'num_draft_tokens', 'dataset',
              'temperature', 'concurrency', 'repeats', 'baseline_stage', 'accept_length', 'speedup')


# What a result without the keys is missing, in the note.
_MISSING = {
    'spec': 'no acceptance histogram or per-request acceptance',
    'decode': 'no decode-only timing (TPOT sd and count, decode time, steps, per-request speed)',
    'cache': 'no cache-hit counts',
}
_WHY_NOT = ('in its results (results from before these keys, or the sglang client harness, which keeps no per-request '
            'record)')


def _number(value):
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _counts(value):
    """A list of non-negative numbers (a histogram), or None."""
    if not isinstance(value, list) or not value:
        return None
    numbers = [_number(item) for item in value]
    return None if any(item is None or item < 0 for item in numbers) else numbers


def histogram_shares(histogram):
    """Each entry of an accepted-drafts histogram as a share of the verify steps; None without steps."""
    histogram = _counts(histogram)
    total = math.fsum(histogram) if histogram else 0
    return [count / total for count in histogram] if total else None


def accept_by_position(histogram):
    """[P(draft position i accepted) for i = 1..len-1]: sum_{j>=i} hist[j] / sum(hist) (a step that accepts j drafts
    accepted positions 1..j; vLLM's num_accepted_tokens_per_pos / num_drafts); None without steps."""
    histogram = _counts(histogram)
    total = math.fsum(histogram) if histogram else 0
    if not total:
        return None
    return [math.fsum(histogram[index:]) / total for index in range(1, len(histogram))]


def _mean(values):
    values = [value for value in values if value is not None]
    return math.fsum(values) / len(values) if values else None


def _sum_all(values):
    """The sum when every repeat has the value, else None (a sum over part of the repeats is no run's figure)."""
    values = list(values)
    if not values or any(value is None for value in values):
        return None
    return math.fsum(values)


def _sum_histograms(histograms):
    histograms = [histogram for histogram in (_counts(item) for item in histograms) if histogram]
    if not histograms:
        return None
    total = [0.0] * max(len(histogram) for histogram in histograms)
    for histogram in histograms:
        for index, count in enumerate(histogram):
            total[index] += count
    return [int(count) if float(count).is_integer() else count for count in total]


def _mean_lists(lists):
    """Element-wise mean of lists of numbers (a None entry left out), as long as the longest."""
    lists = [item for item in lists if isinstance(item, list)]
    if not lists:
        return None
    width = max(len(item) for item in lists)
    return [_mean([_number(item[index]) for item in lists if index < len(item)]) for index in range(width)]


def pooled_moments(parts):
    """(mean, sd, n) of the union of samples given as [(mean, sd, n)] (sd the sample sd, ddof=1; None for n = 1):
    exact, from the sums of squares. None when a part lacks its mean or count."""
    parts = list(parts)
    if not parts or any(mean is None or not count for mean, _sd, count in parts):
        return None
    total = sum(int(count) for _mean_value, _sd, count in parts)
    mean = math.fsum(mean * count for mean, _sd, count in parts) / total
    if total < 2:
        return mean, None, total
    if any(sd is None and count > 1 for _mean_value, sd, count in parts):
        return mean, None, total
    squares = math.fsum((count - 1) * (sd or 0.0) ** 2 + count * (part - mean) ** 2 for part, sd, count in parts)
    return mean, math.sqrt(squares / (total - 1)), total


def run_figures(results):
    """A row's own figures from its measured repeats' results (pooled as the module docstring says) and the groups of
    keys none of them had ('spec', 'decode', 'cache')."""
    out = {'accept_length_mean_of_means': _mean(_number(r.get('accept_length_mean_of_means')) for r in results),
           'accept_length_token_weighted': _mean(_number(r.get('accept_length_token_weighted')) for r in results),
           'accept_rate': _mean(_number(r.get('accept_rate')) for r in results)}
    histogram = _sum_histograms(r.get('accept_histogram') for r in results)
    out['accept_histogram'] = histogram
    out['accept_histogram_share'] = histogram_shares(histogram)
    out['accept_by_position'] = accept_by_position(histogram)
    if out['accept_by_position'] is None:  # a result with the positions but not the histogram
        out['accept_by_position'] = _mean_lists([r.get('accept_by_position') for r in results])
    moments = pooled_moments((_number(r.get('mean_tpot_ms')), _number(r.get('decode_tpot_sd_ms')), r.get('decode_tpot_n'))
                             for r in results)
    out['mean_tpot_ms'], out['decode_tpot_sd_ms'], out['decode_tpot_n'] = moments or (None, None, None)
    for key in ('decode_time_s', 'decode_tokens', 'decode_steps'):
        out[key] = _sum_all(_number(r.get(key)) for r in results)
    for key in ('decode_tokens', 'decode_steps'):
        out[key] = int(out[key]) if out[key] is not None else None
    out['tau_decode'] = out['decode_tokens'] / out['decode_steps'] if out['decode_tokens'] is not None and out['decode_steps'] else None
    out['step_time_ms'] = out['decode_time_s'] / out['decode_steps'] * 1000.0 if out['decode_time_s'] is not None and out['decode_steps'] else None
    out['request_tokens_per_s_mean'] = _mean(_number(r.get('request_tokens_per_s_mean')) for r in results)
    cached = _sum_all(_number(r.get('cached_tokens')) for r in results)
    out['cached_tokens'] = int(cached) if cached is not None else None
    out['cache_hit_rate'] = _mean(_number(r.get('cache_hit_rate')) for r in results)
    out['cache_hit_rate_by_turn'] = _mean_lists([r.get('cache_hit_rate_by_turn') for r in results])
    missing = []
    if out['accept_histogram'] is None and out['accept_rate'] is None and out['accept_length_mean_of_means'] is None:
        missing.append('spec')
    if out['mean_tpot_ms'] is None or out['decode_tpot_n'] is None or out['step_time_ms'] is None:
        missing.append('decode')
    if out['cache_hit_rate'] is None:
        missing.append('cache')
    return out, missing


def _ratio(numerator, denominator):
    return numerator / denominator if numerator is not None and denominator else None


def decomposition(mine, base, same=False):
    """{speedup_decode (+ _ci_low, _ci_high), speedup_specbench, verify_cost_factor, residual} of a row's figures
    (run_figures) against its AR baseline's; same: the row is its own baseline (1.0, no interval)."""
    out = {'speedup_decode': _ratio(base['mean_tpot_ms'], mine['mean_tpot_ms']), 'speedup_decode_ci_low': None,
           'speedup_decode_ci_high': None,
           'speedup_specbench': _ratio(mine['request_tokens_per_s_mean'], base['request_tokens_per_s_mean']),
           'verify_cost_factor': _ratio(base['step_time_ms'], mine['step_time_ms'])}
    if not same and out['speedup_decode'] is not None:
        interval = fieller_moments(base['mean_tpot_ms'], base['decode_tpot_sd_ms'], base['decode_tpot_n'],
                                   mine['mean_tpot_ms'], mine['decode_tpot_sd_ms'], mine['decode_tpot_n'])
        if interval is not None and interval['low'] is not None:
            out.update(speedup_decode_ci_low=interval['low'], speedup_decode_ci_high=interval['high'])
    explained = mine['tau_decode'] * out['verify_cost_factor'] if mine['tau_decode'] is not None and out['verify_cost_factor'] is not None else None
    out['residual'] = _ratio(out['speedup_decode'], explained)
    return out


def _pct(value):
    return '%.0f%%' % (value * 100.0)


def cache_flag(mine, base, baseline_label='AR', threshold=CACHE_FLAG):
    """(flag, note): True with the note naming both numbers where the row's cache-hit rate, overall or at a turn, is
    below the baseline's by more than threshold; False when neither is; None without the rates on both sides."""
    parts, compared = [], False
    if mine.get('cache_hit_rate') is not None and base.get('cache_hit_rate') is not None:
        compared = True
        if base['cache_hit_rate'] - mine['cache_hit_rate'] > threshold:
            parts.append('overall %s vs %s %s' % (_pct(mine['cache_hit_rate']), baseline_label, _pct(base['cache_hit_rate'])))
    for turn, (value, reference) in enumerate(zip(mine.get('cache_hit_rate_by_turn') or [], base.get('cache_hit_rate_by_turn') or [])):
        if value is None or reference is None:
            continue
        compared = True
        if reference - value > threshold:
            parts.append('turn %d: %s vs %s %s' % (turn + 1, _pct(value), baseline_label, _pct(reference)))
    if not compared:
        return None, None
    return bool(parts), '; '.join(parts) or None


def server_figures(scrapes):
    """A row's server figures from its used repeats' /metrics deltas (read.read_metrics's, one per repeat that kept a
    scrape), summed over the repeats: the counters' deltas; server_cache_hit_rate = cached / prompt tokens (SGLang
    counts cached_tokens only once a request has some: a family absent from both scrapes is 0); server_accept_length
    = (generation tokens - requests) / verify calls, the tokens the verify steps made (each request's first token is
    its prefill's), as /server_info's avg_spec_accept_length counts; server_queue_time_ms = the queue-time histogram's
    sum / count. Null where a counter is absent (no verify calls: an autoregressive server); server_note the first
    scrape that could not be read."""
    good = [scrape for scrape in scrapes if 'error' not in scrape]
    errors = [scrape['error'] for scrape in scrapes if 'error' in scrape]
    out = dict.fromkeys(('server_prompt_tokens', 'server_cached_tokens', 'server_cache_hit_rate', 'server_generation_tokens',
                         'server_requests', 'server_verify_calls', 'server_accept_length', 'server_queue_time_ms'))
    out['server_note'] = ('%d of %d scrapes unreadable: %s' % (len(errors), len(scrapes), errors[0])) if errors else None
    if not good:
        return out
    totals = {}
    for key, family in SERVER_COUNTERS.items():
        values = [scrape['counters'].get(family) for scrape in good]
        totals[key] = None if any(value is None for value in values) else math.fsum(values)
    if totals['cached'] is None and totals['prompt'] is not None:
        totals['cached'] = 0.0
    for key, name in (('prompt', 'server_prompt_tokens'), ('cached', 'server_cached_tokens'), ('generation', 'server_generation_tokens'),
                      ('requests', 'server_requests'), ('verify', 'server_verify_calls')):
        out[name] = totals[key]
    out['server_cache_hit_rate'] = _ratio(totals['cached'], totals['prompt'])
    if totals['verify'] and totals['generation'] is not None and totals['requests'] is not None:
        out['server_accept_length'] = (totals['generation'] - totals['requests']) / totals['verify']
    queue = [scrape['histograms'].get(SERVER_QUEUE) for scrape in good]
    if all(queue) and math.fsum(item['count'] for item in queue):
        out['server_queue_time_ms'] = math.fsum(item['sum'] for item in queue) / math.fsum(item['count'] for item in queue) * 1000.0
    return out


def _run_key(row):
    return (row['host'], row['stage']) + tuple(row[name] for name in RUN_KEYS)


def _used_results(results):
    """The results a measured row aggregates: its complete repeats (rows._used's choice for a measured row)."""
    return [results[repeat] for repeat in sorted(results) if results[repeat] is not None and results[repeat].get('complete')]


def why_rows(host_data, rows, baseline_method):
    """One why row (WHY_KEYS) per measured row of rows (report['rows'], in their order), from the result files of
    host_data (read.read_host's)."""
    entries = dict(((data['host'], entry['stage']['id']), entry) for data in host_data for entry in data['stages'])
    figures = {}
    for row in rows:
        if row['status'] != MEASURED:
            continue
        entry = entries.get((row['host'], row['stage']))
        run = tuple(row[name] for name in RUN_KEYS)
        by_repeat = (entry or {}).get('results', {}).get(run) or {}
        results = _used_results(by_repeat)
        scrapes = (entry or {}).get('metrics', {}).get(run) or {}
        used = [scrapes[repeat] for repeat in sorted(scrapes) if (by_repeat.get(repeat) or {}).get('complete')]
        figures[_run_key(row)] = run_figures(results) + (server_figures(used),)
    label = METHOD_NAMES.get(baseline_method, baseline_method)
    out = []
    for row in rows:
        key = _run_key(row)
        if key not in figures:
            continue
        mine, missing, server = figures[key]
        item = dict.fromkeys(WHY_KEYS)
        item.update((name, row.get(name)) for name in _ROW_NAMES)
        item.update(mine)
        item.update(server)
        notes = ['%s %s' % (_MISSING[group], _WHY_NOT) for group in missing if group != 'spec' or row['method'] != baseline_method]
        base_key = (row['host'], row['baseline_stage']) + key[2:] if row.get('baseline_stage') else None
        base = figures.get(base_key)
        if base is None:
            if row['method'] != baseline_method:
                notes.append('no %s baseline measured at this run: no decode speedup, verify cost or cache comparison' % label)
        else:
            same = row['baseline_stage'] == row['stage']
            item.update(decomposition(mine, base[0], same))
            if not same:
                item['baseline_cache_hit_rate'] = base[0]['cache_hit_rate']
                item['baseline_cache_hit_rate_by_turn'] = base[0]['cache_hit_rate_by_turn']
                item['cache_flag'], item['cache_flag_note'] = cache_flag(mine, base[0], label)
                if 'decode' in base[1] and 'decode' not in missing:
                    notes.append('its %s baseline has %s' % (label, _MISSING['decode']))
        item['note'] = '; '.join(notes) or None
        out.append(item)
    return out


def _text_list(values, digits=4):
    if values is None:
        return None
    return ' '.join('' if value is None else ('%d' % value if isinstance(value, int) else '%.*f' % (digits, value)) for value in values)


def csv_rows(report):
    """results-why.csv's rows: the why rows with each list as space-separated numbers."""
    out = []
    for item in report.get('why') or []:
        row = dict(item)
        for key in ('accept_histogram', 'accept_histogram_share', 'accept_by_position', 'cache_hit_rate_by_turn',
                    'baseline_cache_hit_rate_by_turn'):
            row[key] = _text_list(row[key])
        out.append(row)
    return out


def why_groups(report):
    """The why tables as data: [{'host', 'tp', 'dataset', 'temperature', 'concurrency', 'rows': [why row]}] per host,
    TP, dataset, temperature and concurrency that has a speculative row, in the rows' order (AR first, then DFlash and
    the DDTree budget sweep as the report orders them)."""
    groups = {}
    for item in report.get('why') or []:
        key = (item['host'], item['tp'], item['dataset'], item['temperature'], item['concurrency'])
        groups.setdefault(key, []).append(item)
    out = []
    for (host, tp, dataset, temperature, concurrency), items in groups.items():
        if any(item['method'] != report['baseline_method'] for item in items):
            out.append({'host': host, 'tp': tp, 'dataset': dataset, 'temperature': temperature, 'concurrency': concurrency,
                        'rows': items})
    return out


def has_figures(report):
    """True when a why row has any figure the results' new keys give (else the section only says they are missing)."""
    return any(item.get(key) is not None for item in report.get('why') or []
               for key in ('accept_histogram', 'accept_rate', 'accept_length_mean_of_means', 'speedup_decode', 'step_time_ms',
                           'request_tokens_per_s_mean', 'cache_hit_rate'))


def why_figure_key(host, tp, dataset, temperature):
    """The key of a why figure (against the DDTree budget) in write_plots' {key: file name}."""
    return ('why', host, tp, dataset, temperature)


def _safe(text):
    return ''.join(char if char.isascii() and (char.isalnum() or char in '._-') else '_' for char in str(text))


def why_figures(report):
    """The why figures as plain data, [(file name, why_figure_key, spec)]: per host, TP, dataset and temperature with a
    DDTree budget swept (two budgets or more, at one top-k: the one swept over the most budgets), at the run's lowest
    concurrency, against the budget: the serving speedup, the decode speedup (whiskers: its Fieller interval) and tau
    (step-pooled) on the left axis, the verify-cost factor on the right."""
    base = METHOD_NAMES.get(report['baseline_method'], report['baseline_method'])
    sweeps = {}
    for item in report.get('why') or []:
        if item.get('budget') is None:
            continue
        sweeps.setdefault((item['host'], item['tp'], item['dataset'], item['temperature']), []).append(item)
    figures = []
    for (host, tp, dataset, temperature), items in sweeps.items():
        concurrency = min(item['concurrency'] for item in items)
        items = [item for item in items if item['concurrency'] == concurrency]
        topks = {}
        for item in items:
            topks.setdefault(item['topk'], []).append(item)
        topk = max(topks, key=lambda k: (len(topks[k]), -(k or 0)))
        items = sorted(topks[topk], key=lambda item: item['budget'])
        if len(items) < 2:
            continue
        spec = {'kind': 'why_budget', 'baseline': base, 'x': [item['budget'] for item in items],
                'speedup': [(item['budget'], item['speedup']) for item in items if item['speedup'] is not None],
                'speedup_decode': [(item['budget'], item['speedup_decode'], item['speedup_decode_ci_low'], item['speedup_decode_ci_high'])
                                   for item in items if item['speedup_decode'] is not None],
                'accept_length': [(item['budget'], item['accept_length']) for item in items if item['accept_length'] is not None],
                'verify_cost_factor': [(item['budget'], item['verify_cost_factor']) for item in items if item['verify_cost_factor'] is not None],
                'title': 'Speedup, τ and verify cost vs DDTree budget, %s TP%s, %s at T=%g, c=%s%s (campaign %s)' % (
                    host, tp, dataset, temperature, concurrency, ', top-k %s' % topk if topk is not None else '', report['campaign'])}
        name = 'why_vs_budget-%s.png' % '-'.join(_safe(part) for part in (host, 'tp%s' % tp, dataset, 't%g' % temperature))
        figures.append((name, why_figure_key(host, tp, dataset, temperature), spec))
    return figures


# The concurrency of the papers' table: batch 1, as the DFlash and DDTree papers time it.
PAPER_CONCURRENCY = 1


def decode_paper_tables(report):
    """The papers' table with their speedup, per host and TP at concurrency 1: [{'host', 'tp', 'methods': [{'method',
    'label'}], 'rows': [{'dataset', 'temperature', 'cells': {method: {'setting', 'speedup_decode', 'speedup_decode_ci_low',
    'speedup_decode_ci_high', 'accept_length_mean_of_means', 'accept_length'}}}]}]; a method with several settings shows
    the one with the highest decode speedup, named. [] when no speculative row at c=1 has a decode speedup."""
    baseline = report['baseline_method']
    tables = {}
    for item in report.get('why') or []:
        if item['concurrency'] != PAPER_CONCURRENCY or item.get('speedup_decode') is None:
            continue
        table = tables.setdefault((item['host'], item['tp']), {'methods': [], 'rows': {}})
        if item['method'] not in table['methods']:
            table['methods'].append(item['method'])
        cells = table['rows'].setdefault((item['dataset'], item['temperature']), {})
        best = cells.get(item['method'])
        if best is None or item['speedup_decode'] > best['speedup_decode']:
            cells[item['method']] = dict((key, item.get(key)) for key in (
                'setting', 'speedup_decode', 'speedup_decode_ci_low', 'speedup_decode_ci_high', 'accept_length_mean_of_means',
                'accept_length'))
    out = []
    for (host, tp), table in tables.items():
        methods = sorted(table['methods'], key=lambda method: method != baseline)
        if methods == [baseline]:
            continue
        out.append({'host': host, 'tp': tp, 'methods': [{'method': method, 'label': METHOD_NAMES.get(method, method)} for method in methods],
                    'rows': [{'dataset': run[0], 'temperature': run[1], 'cells': cells} for run, cells in table['rows'].items()]})
    return out
