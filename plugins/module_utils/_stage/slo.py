# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Service-level objectives (SLOs) and goodput of a harness run, from its raw request records.

Private to the specdec.bench collection; standard library only, pure functions (stage_run's capacity search and the
report both import it). A raw record is one line of a builtin harness raw file (builtin_harness / harness.RequestTiming):
warmup, success, ttft_s, latency_s, itl_s (seconds) and output_tokens.

Definitions (vLLM benchmarks/benchmark_serving.py, the --goodput option and calculate_metrics, which SGLang's client
copies):
- per request: ttft_ms = TTFT * 1000; tpot_ms = (E2E - TTFT) / (output tokens - 1) * 1000, for a request with more than
  one output token; e2e_ms = E2E * 1000; itl_ms = each inter-token gap * 1000.
- an SLO is {metric: {'p': percentile in (0, 100], 'max': milliseconds}}; a run's percentile of a metric is over its
  requests (itl_ms: over every gap of every request, pooled, as vLLM's p99_itl).
- percentile: linear interpolation between the closest ranks, rank = (n - 1) * p / 100 (numpy.percentile's default).
- a request is good when it meets every metric of the SLO: ttft/tpot/e2e its own value <= max; itl_ms the p-th
  percentile of its own gaps <= max (vLLM's goodput checks each request's own values the same way; a request with no
  value for a metric, one output token for tpot, meets it).
- request goodput = good requests / duration (req/s: vLLM's request_goodput); token goodput = output tokens of the good
  requests / duration (DistServe, Zhong et al. 2024, and inference-perf's goodput in tokens); per joule: good output
  tokens / energy.
- a point of a capacity search (evaluate_point): per metric, the run percentile of each measured repeat, their mean and
  Student-t interval (two-sided, n - 1 degrees of freedom); the point passes when every metric's mean <= max, is sure
  to pass when every interval's upper end is, and sure to fail when some interval's lower end is above max.
"""

from __future__ import annotations

import math

METRICS = ('ttft_ms', 'itl_ms', 'tpot_ms', 'e2e_ms')
DEFAULT_P = 95.0

# Student's t quantiles t_{1 - (1 - confidence) / 2, df} for df = 1..30 (any statistics table, e.g. NIST/SEMATECH
# e-Handbook 1.3.6.7.2); beyond 30 degrees of freedom the normal quantile (the last entry).
T_QUANTILES = {
    0.90: (6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782, 1.771, 1.761, 1.753,
           1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697, 1.645),
    0.95: (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
           2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042, 1.960),
    0.99: (63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169, 3.106, 3.055, 3.012, 2.977, 2.947,
           2.921, 2.898, 2.878, 2.861, 2.845, 2.831, 2.819, 2.807, 2.797, 2.787, 2.779, 2.771, 2.763, 2.756, 2.750, 2.576),
}


def measured(records):
    """The raw records of a run that count: not the warm-up's, and successful."""
    return [record for record in records or () if not record.get('warmup') and record.get('success')]


def _ms(seconds):
    return None if seconds is None else float(seconds) * 1e3


def request_values(record):
    """One request's SLO values in milliseconds (vLLM benchmark_serving's definitions): ttft_ms, tpot_ms (None with
    one output token or fewer), e2e_ms, and itl_ms, the list of its inter-token gaps."""
    ttft, latency, tokens = record.get('ttft_s'), record.get('latency_s'), record.get('output_tokens') or 0
    tpot = None
    if ttft is not None and latency is not None and tokens > 1:
        tpot = (float(latency) - float(ttft)) / (tokens - 1) * 1e3
    return {'ttft_ms': _ms(ttft), 'tpot_ms': tpot, 'e2e_ms': _ms(latency),
            'itl_ms': [float(gap) * 1e3 for gap in record.get('itl_s') or ()]}


def percentile(values, p):
    """The p-th percentile (0..100) of values by linear interpolation between the closest ranks, rank = (n - 1) * p /
    100 (numpy.percentile's default, method 'linear'); None for no values."""
    ordered = sorted(float(value) for value in values)
    if not ordered:
        return None
    rank = (len(ordered) - 1) * float(p) / 100.0
    low = int(math.floor(rank))
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _metric_values(requests, metric):
    """Every value of a metric over the requests' request_values (itl_ms: every gap, pooled)."""
    if metric == 'itl_ms':
        return [gap for values in requests for gap in values['itl_ms']]
    return [values[metric] for values in requests if values[metric] is not None]


def run_percentiles(records, slo):
    """{metric: the p-th percentile over the run's measured requests} for each metric of the SLO (itl_ms pooled over
    every gap of every request); None for a metric no request has a value of."""
    requests = [request_values(record) for record in measured(records)]
    return dict((metric, percentile(_metric_values(requests, metric), target.get('p', DEFAULT_P)))
                for metric, target in (slo or {}).items())


def request_meets(record, slo):
    """True when the request meets every metric of the SLO: its own ttft/tpot/e2e <= max, the p-th percentile of its
    own inter-token gaps <= max; a metric it has no value of is met (vLLM's goodput)."""
    values = request_values(record)
    for metric, target in (slo or {}).items():
        value = values[metric]
        if metric == 'itl_ms':
            value = percentile(value, target.get('p', DEFAULT_P))
        if value is not None and value > float(target['max']):
            return False
    return True


def goodput(records, slo, duration_s, energy_j=None):
    """A run's goodput under the SLO (module docstring): completed and good requests, slo_attainment = good /
    completed, request_goodput (req/s), token_goodput (good output tokens/s) and goodput_tokens_per_j; None where a
    denominator is missing or 0. Without an SLO every completed request is good."""
    done = measured(records)
    good = [record for record in done if request_meets(record, slo)]
    tokens = sum(record.get('output_tokens') or 0 for record in good)
    duration = float(duration_s) if duration_s else None
    return {
        'completed': len(done),
        'good': len(good),
        'slo_attainment': len(good) / float(len(done)) if done else None,
        'request_goodput': len(good) / duration if duration else None,
        'token_goodput': tokens / duration if duration else None,
        'goodput_tokens_per_j': tokens / float(energy_j) if energy_j else None,
    }


def t_quantile(df, confidence=0.95):
    """Student's t quantile of a two-sided interval at `confidence` (0.90, 0.95 or 0.99) with df degrees of freedom."""
    if confidence not in T_QUANTILES:
        raise ValueError('confidence must be one of %s, got %r' % (', '.join('%g' % c for c in sorted(T_QUANTILES)), confidence))
    table = T_QUANTILES[confidence]
    return table[min(df, len(table)) - 1]


def mean_interval(values, confidence=0.95):
    """(mean, low, high): the Student-t interval mean -/+ t * s / sqrt(n) (s the sample standard deviation, n - 1);
    low and high None for fewer than 2 values; all None for none."""
    if not values:
        return None, None, None
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return mean, None, None
    sd = math.sqrt(math.fsum((value - mean) ** 2 for value in values) / (n - 1))
    half = t_quantile(n - 1, confidence) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def evaluate_point(repeat_records, slo, confidence=0.95):
    """One point of a capacity search: repeat_records holds one list of raw records per measured repeat.

    Per metric of the SLO: 'values' the run percentile of each repeat (a repeat with no value left out), their 'mean'
    and Student-t interval ('ci_low', 'ci_high'; None with fewer than 2 values), 'ratio' = mean / max. The point:
    'passed' when every metric's mean <= max; 'sure' 'pass' when every ci_high <= max, 'fail' when some ci_low > max,
    else 'unsure' (always with one repeat); 'binding' the metric with the largest ratio and 'ratio' that ratio. A metric
    no repeat has a value of (no request completed) fails, sure, and binds (its ratio None)."""
    metrics, passed, sure_pass, sure_fail = {}, True, True, False
    binding, ratio = None, None
    runs = [run_percentiles(records, slo) for records in repeat_records]
    for metric in sorted(slo or {}, key=METRICS.index):
        target = slo[metric]
        limit = float(target['max'])
        values = [run[metric] for run in runs if run.get(metric) is not None]
        mean, low, high = mean_interval(values, confidence)
        metric_ratio = None if mean is None else mean / limit
        metrics[metric] = {'p': float(target.get('p', DEFAULT_P)), 'max': limit, 'mean': mean, 'ci_low': low,
                           'ci_high': high, 'ratio': metric_ratio, 'values': values}
        if mean is None:
            passed, sure_pass, sure_fail = False, False, True
            if ratio is not None or binding is None:
                binding, ratio = metric, None
            continue
        passed = passed and mean <= limit
        sure_pass = sure_pass and high is not None and high <= limit
        sure_fail = sure_fail or (low is not None and low > limit)
        if binding is None or (ratio is not None and metric_ratio > ratio):
            binding, ratio = metric, metric_ratio
    sure = 'fail' if sure_fail else 'pass' if sure_pass else 'unsure'
    return {'passed': passed, 'sure': sure, 'percentiles': metrics, 'binding': binding, 'ratio': ratio}
