# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The capacity search: the largest load (concurrency or request rate) at which a server still meets its SLO.

Private to the specdec.bench collection; standard library only, pure (measure() does the I/O). The search brackets,
then bisects (the usual way to find a serving system's capacity at an SLO: DistServe, Zhong et al. 2024, section 6,
"the maximum rate under the SLO attainment target, found by binary search"; vLLM's benchmarks/auto_tune does the same
over request rates):
- bracket: measure lo (a failure there: no capacity, bound_by 'lowest_fails'); then double (min(2x, hi); integers for
  concurrency) until a point fails, or hi passes (bound_by 'highest_passes');
- bisect between the last pass p and the first fail f: concurrency (p + f) // 2 while f - p > resolution; request rate
  the geometric mean sqrt(p * f) while f / p > 1 + resolution (a relative resolution: a rate doubles per step of the
  bracket, so its halving is in log space), rounded to 6 significant digits (so a file name's '%g' is the rate itself);
- before each point: stop when its repeats would pass max_runs (bound_by 'max_runs'), or max_seconds have passed
  (bound_by 'max_seconds'); a bisection that reaches its resolution ends with bound_by 'resolution'.
A point is slo.evaluate_point's dict plus 'runs' (the harness runs it cost). The capacity's interval is by the points
sure of their side (their Student-t interval wholly below or above the limit): capacity_low the largest sure pass,
capacity_high one resolution below the smallest sure fail for a concurrency (integers), the smallest sure-fail rate itself
for a request rate (a supremum: the bisection stops within one resolution of it, so a resolution below could fall under
the capacity); never below the capacity, hi when no point sure-fails.
"""

from __future__ import annotations

import math
import time

KINDS = ('concurrency', 'request_rate')


def _next_up(value, hi, kind):
    """The bracket's next value: double, at most hi (an integer for concurrency)."""
    return min(int(value) * 2, int(hi)) if kind == 'concurrency' else min(_round_rate(value * 2.0), hi)


def _middle(passed, failed, kind, resolution):
    """The bisection's next value, or None when the bracket is within the resolution."""
    if kind == 'concurrency':
        return (passed + failed) // 2 if failed - passed > resolution else None
    if failed / passed <= 1.0 + resolution:
        return None
    middle = _round_rate(math.sqrt(passed * failed))
    return middle if passed < middle < failed else None


def _round_rate(value):
    """A request rate to 6 significant digits ('%g' writes it whole)."""
    return float('%.6g' % value)


def check_bounds(lo, hi, kind, resolution):
    """ValueError naming the field when the search's bounds cannot be searched."""
    if kind not in KINDS:
        raise ValueError('kind must be one of %s, got %r' % (', '.join(KINDS), kind))
    if kind == 'concurrency':
        if not all(isinstance(value, int) and not isinstance(value, bool) for value in (lo, hi, resolution)):
            raise ValueError('a concurrency search takes integers: min %r, max %r, resolution %r' % (lo, hi, resolution))
        if resolution < 1:
            raise ValueError('resolution must be an integer of 1 or more for a concurrency search, got %r' % resolution)
    elif not resolution > 0:
        raise ValueError('resolution must be a relative step above 0 for a request_rate search, got %r' % resolution)
    if not 0 < lo <= hi < float('inf'):
        raise ValueError('min and max must satisfy 0 < min <= max < inf, got min %r, max %r' % (lo, hi))


def search(measure, lo, hi, kind='concurrency', resolution=1, max_runs=40, max_seconds=1800.0, repeats=1,
           clock=time.monotonic):
    """The capacity at the SLO by bracketing and bisection (module docstring); measure(value) -> a point (slo's
    evaluate_point dict plus 'runs'). Returns {kind, lo, hi, resolution, max_runs, max_seconds, points (each point with
    its 'value', in the order measured), capacity, capacity_low, capacity_high, binding, bound_by, runs, seconds}."""
    check_bounds(lo, hi, kind, resolution)
    start = clock()
    points = []
    state = {'runs': 0}

    def stop_reason():
        if state['runs'] + repeats > max_runs:
            return 'max_runs'
        if clock() - start >= max_seconds:
            return 'max_seconds'
        return None

    def take(value):
        point = dict(measure(value), value=value)
        state['runs'] += int(point.get('runs', repeats))
        points.append(point)
        return point['passed']

    bound_by = stop_reason()
    if bound_by is None:
        if not take(lo):
            bound_by = 'lowest_fails'
    passed, failed = lo, None
    while bound_by is None and failed is None:
        if passed >= hi:
            bound_by = 'highest_passes'
            break
        bound_by = stop_reason()
        if bound_by is not None:
            break
        value = _next_up(passed, hi, kind)
        if take(value):
            passed = value
        else:
            failed = value
    while bound_by is None:
        value = _middle(passed, failed, kind, resolution)
        if value is None:
            bound_by = 'resolution'
            break
        bound_by = stop_reason()
        if bound_by is not None:
            break
        if take(value):
            passed = value
        else:
            failed = value
    return summarize(points, kind, lo, hi, resolution, max_runs, max_seconds, bound_by, state['runs'], clock() - start)


def summarize(points, kind, lo, hi, resolution, max_runs, max_seconds, bound_by, runs, seconds):
    """The search's result from its points (search's docstring)."""
    passes = [point['value'] for point in points if point['passed']]
    capacity = max(passes) if passes else None
    sure_passes = [point['value'] for point in points if point['passed'] and point.get('sure') == 'pass']
    sure_fails = [point['value'] for point in points if point.get('sure') == 'fail']
    capacity_high = hi
    if sure_fails:
        lowest = min(sure_fails)
        capacity_high = lowest - resolution if kind == 'concurrency' else lowest
        if capacity is not None:
            capacity_high = max(capacity_high, capacity)
    above = sorted((point for point in points if not point['passed'] and (capacity is None or point['value'] > capacity)),
                   key=lambda point: point['value'])
    at = [point for point in points if point['value'] == capacity]
    binding = above[0].get('binding') if above else at[0].get('binding') if at else None
    return {'kind': kind, 'lo': lo, 'hi': hi, 'resolution': resolution, 'max_runs': max_runs, 'max_seconds': max_seconds,
            'points': points, 'capacity': capacity, 'capacity_low': max(sure_passes) if sure_passes else None,
            'capacity_high': capacity_high, 'binding': binding, 'bound_by': bound_by, 'runs': runs,
            'seconds': round(seconds, 3)}
