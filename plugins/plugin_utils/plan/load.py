# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The spec's load: workload.request_rate as a sweep (the closed-loop grid and the open-loop rates), the arrivals'
burstiness and cap (workload.burstiness, workload.max_concurrency), the latency SLOs (slo), the capacity search
(search) and the crossover's extra concurrencies (crossover), checked before any stage is made, and the normalized
`load` every stage carries (docs/plan.md, "Load, SLOs and the capacity search").

Definitions the fields follow:
- arrivals: gamma-distributed gaps with shape = burstiness and mean 1/rate, vLLM benchmark_serving's --burstiness
  (1.0: a Poisson process), at most max_concurrency requests in flight (vLLM's and SGLang's --max-concurrency);
- an SLO: the p-th percentile (linear interpolation between closest ranks, numpy.percentile's default) of a latency
  over a run's requests must not exceed max milliseconds; ttft_ms, itl_ms, tpot_ms and e2e_ms as vLLM
  benchmark_serving defines them (its --goodput takes the same metric names);
- the search: bracket then bisect, per stage, dataset and temperature, on the stage's server
  (plugins/module_utils/_stage/load_search.py); a concurrency resolution is absolute, a rate resolution relative
  (stop when hi/lo <= 1 + resolution).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from .common import POSITIVE_INT, check_keys, fail, is_int, is_number, is_positive_int

SLO_METRICS = ('ttft_ms', 'itl_ms', 'tpot_ms', 'e2e_ms')
SLO_KEYS = ('p', 'max')
DEFAULT_SLO_P = 95.0
SEARCH_KEYS = ('concurrency', 'request_rate', 'max_runs', 'max_seconds')
RANGE_KEYS = ('min', 'max', 'resolution')
DEFAULT_CONCURRENCY_RESOLUTION = 1
DEFAULT_RATE_RESOLUTION = 0.1
DEFAULT_MAX_RUNS = 40
DEFAULT_MAX_SECONDS = 1800.0
DEFAULT_BURSTINESS = 1.0
CROSSOVER_KEYS = ('concurrency',)
INFINITE = 'inf'
RATE_ALLOWED = 'a positive number of requests per second, or "inf"'
RATES_ALLOWED = 'distinct positive numbers of requests per second, and "inf" (the closed-loop grid) at most once'


def _is_infinite(value):
    return value == INFINITE or (isinstance(value, float) and math.isinf(value) and value > 0)


def spec_request_rate(value):
    """workload.request_rate -> (the grid runs' rate, the open-loop rates).

    A scalar (a positive number or "inf", the default) is today's meaning: every grid run at that rate, no open-loop
    run; .inf is spelled 'inf'. A non-empty list is a sweep: the grid runs closed-loop ('inf') and each finite rate is
    one open-loop run, the rates sorted ascending as floats."""
    field = 'workload.request_rate'
    if not isinstance(value, (list, tuple)):
        if _is_infinite(value):
            return INFINITE, []
        if not is_number(value) or value <= 0:
            fail(field, 'is %r' % (value,), '%s, or a non-empty list of them (a sweep)' % RATE_ALLOWED)
        return value, []
    if not value:
        fail(field, 'is an empty list', 'a non-empty list of %s' % RATES_ALLOWED)
    seen = {}
    for position, item in enumerate(value):
        item_field = '%s[%d]' % (field, position)
        key = INFINITE if _is_infinite(item) else item
        if key != INFINITE and (not is_number(item) or item <= 0):
            fail(item_field, 'is %r' % (item,), RATES_ALLOWED)
        if key in seen:
            fail(item_field, 'repeats %r, as %s[%d] (a duplicate run)' % (item, field, seen[key]), RATES_ALLOWED)
        seen[key] = position
    return INFINITE, sorted(float(item) for item in seen if item != INFINITE)


def spec_burstiness(value):
    """workload.burstiness: the gamma shape of the open-loop arrivals, a number > 0, default 1.0 (Poisson)."""
    if value is None:
        return DEFAULT_BURSTINESS
    if not is_number(value) or value <= 0:
        fail('workload.burstiness', 'is %r' % (value,),
             'a number > 0: the gamma shape of the arrival gaps (1.0, the default, is Poisson; below 1 burstier)')
    return float(value)


def spec_max_concurrency(value, concurrency):
    """workload.max_concurrency: the open-loop runs' cap on requests in flight, default the largest concurrency."""
    if value is None:
        return max(concurrency)
    if not is_positive_int(value):
        fail('workload.max_concurrency', 'is %r' % (value,),
             '%s: the most requests in flight in an open-loop run (default: the largest of concurrency)' % POSITIVE_INT)
    return value


def _slo_entry(entry, field):
    """One SLO as {p, max} floats: p in (0, 100] (default 95), max milliseconds > 0 (required)."""
    check_keys(entry, field, SLO_KEYS)
    p = entry.get('p', DEFAULT_SLO_P)
    if not is_number(p) or not 0 < p <= 100:
        fail(field + '.p', 'is %r' % (p,), 'a percentile in (0, 100] (default %g)' % DEFAULT_SLO_P)
    if 'max' not in entry:
        fail(field + '.max', 'is missing', 'a number of milliseconds > 0 (required)')
    limit = entry['max']
    if not is_number(limit) or limit <= 0:
        fail(field + '.max', 'is %r' % (limit,), 'a number of milliseconds > 0')
    return {'p': float(p), 'max': float(limit)}


def spec_slo(slo):
    """slo: None, or {metric: {p, max}} for the metrics given (any of SLO_METRICS; itl_ms and tpot_ms not both)."""
    if slo is None:
        return None
    check_keys(slo, 'slo', SLO_METRICS)
    if not slo:
        fail('slo', 'is empty', 'at least one of %s, each {p, max}' % ', '.join(SLO_METRICS))
    if 'itl_ms' in slo and 'tpot_ms' in slo:
        fail('slo', 'has both itl_ms and tpot_ms (two bounds on the same decode latency)', 'one of itl_ms, tpot_ms')
    return dict((metric, _slo_entry(slo[metric], 'slo.%s' % metric)) for metric in SLO_METRICS if metric in slo)


def _search_range(entry, field, integer, defaults):
    """search.concurrency or search.request_rate: {min, max, resolution} with min <= max, or None when left out."""
    if entry is None:
        return None
    check_keys(entry, field, RANGE_KEYS)
    values = dict(defaults, **entry)
    for key in ('min', 'max'):
        if key not in values:
            fail('%s.%s' % (field, key), 'is missing', 'a positive number of requests per second (required)')
        value = values[key]
        if integer and not is_positive_int(value):
            fail('%s.%s' % (field, key), 'is %r' % (value,), POSITIVE_INT)
        if not integer and (not is_number(value) or value <= 0):
            fail('%s.%s' % (field, key), 'is %r' % (value,), 'a positive number of requests per second')
    if values['min'] > values['max']:
        fail('%s.min' % field, 'is %r, above %s.max %r' % (values['min'], field, values['max']), 'a value <= %s.max' % field)
    resolution = values['resolution']
    if integer and not is_positive_int(resolution):
        fail(field + '.resolution', 'is %r' % (resolution,),
             'an integer >= 1: the search stops when the passing and failing concurrencies are at most this far apart (default 1)')
    if not integer and (not is_number(resolution) or resolution <= 0):
        fail(field + '.resolution', 'is %r' % (resolution,), 'a number > 0: the search stops when the failing rate is at most '
             '1 + resolution times the passing one (default %g)' % DEFAULT_RATE_RESOLUTION)
    if integer:
        return {'min': values['min'], 'max': values['max'], 'resolution': resolution}
    return {'min': float(values['min']), 'max': float(values['max']), 'resolution': float(resolution)}


def spec_search(search, slo, max_concurrency, repeats):
    """search: None, or the capacity search's ranges and budget (needs slo; concurrency, request_rate or both)."""
    if search is None:
        return None
    check_keys(search, 'search', SEARCH_KEYS)
    if slo is None:
        fail('search', 'is given without slo (the search looks for the largest load that meets the SLOs)',
             'slo with at least one of %s, or no search' % ', '.join(SLO_METRICS))
    if search.get('concurrency') is None and search.get('request_rate') is None:
        fail('search', 'has neither concurrency nor request_rate', 'search.concurrency {min, max, resolution}, '
                                                                   'search.request_rate {min, max, resolution}, or both')
    concurrency = _search_range(search.get('concurrency'), 'search.concurrency', True,
                                {'min': 1, 'max': max_concurrency, 'resolution': DEFAULT_CONCURRENCY_RESOLUTION})
    request_rate = _search_range(search.get('request_rate'), 'search.request_rate', False, {'resolution': DEFAULT_RATE_RESOLUTION})
    max_runs = search.get('max_runs', DEFAULT_MAX_RUNS)
    if not is_int(max_runs) or max_runs < max(1, repeats):
        fail('search.max_runs', 'is %r' % (max_runs,), 'an integer >= 1 and >= repeats (%d: each point is measured that many '
                                                       'times, each measured repeat one run; default %d)' % (repeats, DEFAULT_MAX_RUNS))
    max_seconds = search.get('max_seconds', DEFAULT_MAX_SECONDS)
    if not is_number(max_seconds) or max_seconds <= 0:
        fail('search.max_seconds', 'is %r' % (max_seconds,), 'a number of seconds > 0 per search (default %g)' % DEFAULT_MAX_SECONDS)
    return {'concurrency': concurrency, 'request_rate': request_rate, 'max_runs': max_runs, 'max_seconds': float(max_seconds)}


def spec_crossover(crossover):
    """crossover: the extra closed-loop concurrencies every stage measures, sorted ascending ([] when left out)."""
    if crossover is None:
        return []
    check_keys(crossover, 'crossover', CROSSOVER_KEYS)
    values = crossover.get('concurrency')
    if values is None:
        return []
    if not isinstance(values, (list, tuple)) or not values:
        fail('crossover.concurrency', 'is %r' % (values,), 'a non-empty list of distinct positive integers')
    for position, value in enumerate(values):
        if not is_positive_int(value):
            fail('crossover.concurrency[%d]' % position, 'is %r' % (value,), POSITIVE_INT)
        if value in values[:position]:
            fail('crossover.concurrency[%d]' % position, 'repeats %r' % (value,), 'distinct positive integers')
    return sorted(values)


def spec_load(spec, concurrency, repeats):
    """The campaign's load, checked (spec: the campaign spec; concurrency and repeats: checked already): the `load`
    of every stage before stage_load takes the stage's own concurrencies out of the crossover's."""
    workload = spec.get('workload') if isinstance(spec.get('workload'), Mapping) else {}
    _grid_rate, rates = spec_request_rate(workload.get('request_rate', INFINITE))
    max_concurrency = spec_max_concurrency(workload.get('max_concurrency'), concurrency)
    slo = spec_slo(spec.get('slo'))
    return {
        'request_rates': rates,
        'burstiness': spec_burstiness(workload.get('burstiness')),
        'max_concurrency': max_concurrency,
        'slo': slo,
        'search': spec_search(spec.get('search'), slo, max_concurrency, repeats),
        'crossover_concurrency': spec_crossover(spec.get('crossover')),
    }


def stage_load(load, concurrency):
    """A stage's `load`: the campaign's, its crossover concurrencies less those the stage's grid measures already."""
    stage = dict(load, request_rates=list(load['request_rates']), crossover_concurrency=[
        value for value in load['crossover_concurrency'] if value not in concurrency])
    for key in ('slo', 'search'):
        if stage[key] is not None:
            stage[key] = dict((name, dict(value) if isinstance(value, Mapping) else value) for name, value in stage[key].items())
    return stage
