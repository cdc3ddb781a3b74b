# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, data: comparisons. A row against its baseline (add_speedup: the speedup over the baseline
method's row of the same host, TP, dataset, temperature and concurrency, with Fieller's interval over the repeats;
add_energy_ratio: its energy per output token over the baseline's; mark_noisy), and one campaign against another
(compare_rows: compare-<c>.csv's rows, Welch's t-test over the repeats of each side where both have two or more).
"""

from __future__ import annotations

from .keys import BASELINE_METHOD, CI_METHOD, COMPARED, DEFAULT_NOISY_CV, ENERGY_RATIO_KEYS, RUN_KEYS, SPEEDUP_KEYS
from .read import DEFAULT_TEMPERATURE, MEASURED, RANDOM
from .stats import _mean, excludes, fieller, fiellers, overlap, welch


# The significance level of compare's Welch test.
ALPHA = 0.05


def _set_speedup(row, values, baseline_values):
    """speedup (the ratio of the means) and its Fieller interval, method and significance into row."""
    if not values or not baseline_values:
        return
    mean, baseline = _mean(values), _mean(baseline_values)
    if not baseline:
        return
    row['speedup'] = mean / baseline
    interval = fieller(values, baseline_values)
    if interval is not None and interval['low'] is not None:
        row.update(speedup_ci_low=interval['low'], speedup_ci_high=interval['high'], speedup_ci_method=CI_METHOD,
                   speedup_significant=excludes(interval['low'], interval['high']))


def add_speedup(rows, baseline_method=BASELINE_METHOD, samples=None):
    """Fill speedup: output throughput over the baseline's on the same host, TP, dataset, temperature and concurrency;
    empty without one. samples: {(host, stage, dataset, temperature, concurrency): [throughput per repeat]}, for
    Fieller's interval (none without them: the ratio alone)."""
    samples = samples or {}

    def key(row):
        return (row['host'], row['tp']) + tuple(row[name] for name in RUN_KEYS)

    def values(row):
        return samples.get((row['host'], row['stage']) + tuple(row[name] for name in RUN_KEYS)) or [row['output_throughput']]
    baselines = {}
    for row in rows:
        if row['method'] == baseline_method and row['status'] == MEASURED and row['output_throughput']:
            baselines.setdefault(key(row), []).append(row)
    jobs = []
    for row in rows:
        row.update(dict.fromkeys(SPEEDUP_KEYS))
        row['baseline_stage'] = None
        if row['status'] != MEASURED or row['output_throughput'] is None:
            continue
        candidates = baselines.get(key(row)) or []
        if len(candidates) > 1:  # the same TP on other GPUs: only the baseline on the same GPUs counts
            candidates = [c for c in candidates if c['gpus'] == row['gpus']]
        if len(candidates) == 1:
            row['speedup'] = row['output_throughput'] / candidates[0]['output_throughput']
            row['baseline_stage'] = candidates[0]['stage']
            # the baseline over itself is 1 by definition: no interval, no test (its repeats are not independent of it)
            if candidates[0] is not row and len(values(row)) > 1:
                jobs.append((row, values(row), values(candidates[0])))
    for (row, _values, _baseline), interval in zip(jobs, fiellers([job[1:] for job in jobs])):  # batched per sample size
        if interval is not None and interval['low'] is not None:
            row.update(speedup_ci_low=interval['low'], speedup_ci_high=interval['high'], speedup_ci_method=CI_METHOD,
                       speedup_significant=excludes(interval['low'], interval['high']))
    return rows


def add_energy_ratio(rows, samples=None):
    """Fill energy_ratio: the row's mean J per output token over that of its speedup's baseline row (baseline_stage:
    the same host, TP, GPUs, dataset, temperature and concurrency); below 1 the method spends less energy per token.
    Empty without the baseline or without energy on either side. samples: {(host, stage, dataset, temperature,
    concurrency): [J per output token of each repeat]}, for Fieller's interval (none with fewer than 2 a side)."""
    samples = samples or {}
    by_stage = dict(((row['host'], row['stage']) + tuple(row[name] for name in RUN_KEYS), row) for row in rows)
    jobs = []
    for row in rows:
        row.update(dict.fromkeys(ENERGY_RATIO_KEYS))
        if not row.get('baseline_stage') or row.get('j_per_output_token') is None:
            continue
        key = (row['host'], row['stage']) + tuple(row[name] for name in RUN_KEYS)
        base_key = (row['host'], row['baseline_stage']) + key[2:]
        baseline = by_stage.get(base_key)
        if baseline is None or not baseline.get('j_per_output_token'):
            continue
        row['energy_ratio'] = row['j_per_output_token'] / baseline['j_per_output_token']
        if baseline is not row:  # the baseline over itself: 1 by definition, no interval
            jobs.append((row, samples.get(key) or [], samples.get(base_key) or []))
    for (row, _values, _baseline), interval in zip(jobs, fiellers([job[1:] for job in jobs])):  # batched per sample size
        if interval is not None and interval['low'] is not None:
            row.update(energy_ratio_ci_low=interval['low'], energy_ratio_ci_high=interval['high'])
    return rows


def mark_noisy(rows, noisy_cv=DEFAULT_NOISY_CV):
    """noisy: true when the throughput's (or tau's) coefficient of variation over the repeats exceeds noisy_cv, false
    when neither does, null without a CV (one repeat)."""
    for row in rows:
        cvs = [row.get(key) for key in ('output_throughput_cv', 'accept_length_cv') if row.get(key) is not None]
        row['noisy'] = any(cv > noisy_cv for cv in cvs) if cvs and (row.get('repeats') or 0) > 1 else None
    return rows


def _delta(after, before):
    return None if after is None or before is None else after - before


def _delta_pct(after, before):
    return None if after is None or not before else (after - before) / before * 100.0


def _compare_key(row):
    """(host, stage, dataset, temperature, concurrency); a row without a run's dataset is ('random', 0), as old ones."""
    dataset = row.get('dataset') or RANDOM
    temperature = row.get('temperature')
    return (row['host'], row['stage'], dataset, DEFAULT_TEMPERATURE if temperature is None else temperature, row['concurrency'])


def _samples(repeat_rows_):
    """{compare key: [output throughput of each measured repeat]} of a campaign's repeat rows."""
    out = {}
    for item in repeat_rows_ or []:
        if item['status'] == MEASURED and item.get('output_throughput') is not None:
            out.setdefault(_compare_key(item), []).append(item['output_throughput'])
    return out


def compare_rows(after_rows, before_rows, after_repeats=None, before_repeats=None):
    """One row per host, stage, dataset, temperature and concurrency of either campaign, before and after side by side
    with deltas and each side's 95% intervals. With the repeat rows of both (REPEAT_KEYS), output_throughput_p is
    Welch's t-test of the two sides' throughputs (null with fewer than 2 repeats a side) and
    output_throughput_significant p < ALPHA; speedup_change_significant is true when the two speedups' Fieller
    intervals do not overlap, false when they do, null without both."""
    before = dict((_compare_key(r), r) for r in before_rows)
    after = dict((_compare_key(r), r) for r in after_rows)
    before_samples, after_samples = _samples(before_repeats), _samples(after_repeats)
    keys = [_compare_key(r) for r in after_rows]
    keys += [_compare_key(r) for r in before_rows if _compare_key(r) not in after]
    out = []
    for key in keys:
        old, new = before.get(key) or {}, after.get(key) or {}
        either = new or old
        row = {'host': key[0], 'stage': key[1], 'setting': either.get('setting'), 'tp': either.get('tp'),
               'dataset': key[2], 'temperature': key[3], 'concurrency': key[4],
               'status_before': old.get('status', 'absent'), 'status_after': new.get('status', 'absent'),
               'repeats_before': old.get('repeats'), 'repeats_after': new.get('repeats'),
               'sglang_build_before': old.get('sglang_build'), 'sglang_build_after': new.get('sglang_build')}
        for metric, kind in COMPARED:
            row[metric + '_before'], row[metric + '_after'] = old.get(metric), new.get(metric)
            if kind == 'pct':
                row[metric + '_delta_pct'] = _delta_pct(new.get(metric), old.get(metric))
            else:
                row[metric + '_delta'] = _delta(new.get(metric), old.get(metric))
            for side, source in (('before', old), ('after', new)):
                for bound in ('ci_low', 'ci_high'):
                    row['%s_%s_%s' % (metric, bound, side)] = source.get('%s_%s' % (metric, bound))
        test = welch(after_samples.get(key) or [], before_samples.get(key) or []) if old and new else None
        row['output_throughput_p'] = test['p'] if test else None
        row['output_throughput_significant'] = None if row['output_throughput_p'] is None else row['output_throughput_p'] < ALPHA
        separate = overlap((row['speedup_ci_low_before'], row['speedup_ci_high_before']),
                           (row['speedup_ci_low_after'], row['speedup_ci_high_after']))
        row['speedup_change_significant'] = None if separate is None else not separate
        out.append(row)
    return out
