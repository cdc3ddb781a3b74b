# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""load_search: the capacity search against a synthetic server whose latency grows with the load and crosses the SLO
at a known threshold."""

from __future__ import annotations

import math

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._stage import load_search


class Server:
    """measure(): a point that passes up to `threshold` (latency = value / threshold * limit), sure of its side unless
    within `margin` (relative) of the threshold; each point costs `repeats` runs and `seconds` on the fake clock."""

    def __init__(self, threshold, repeats=1, margin=0.0, seconds=0.0, binding='ttft_ms'):
        self.threshold = threshold
        self.repeats = repeats
        self.margin = margin
        self.seconds = seconds
        self.binding = binding
        self.now = 0.0
        self.values = []

    def clock(self):
        return self.now

    def __call__(self, value):
        self.values.append(value)
        self.now += self.seconds
        ratio = value / float(self.threshold)
        sure = 'unsure' if abs(ratio - 1.0) <= self.margin else 'pass' if ratio <= 1.0 else 'fail'
        return {'passed': ratio <= 1.0, 'sure': sure, 'binding': self.binding, 'ratio': ratio, 'percentiles': {},
                'runs': self.repeats}


@pytest.mark.parametrize('threshold', [1, 2, 3, 5, 17, 31, 32, 33, 47, 63, 64])
def test_the_capacity_found_is_the_threshold(threshold):
    server = Server(threshold)
    found = load_search.search(server, 1, 64, clock=server.clock)
    assert found['capacity'] == threshold
    assert found['bound_by'] == ('highest_passes' if threshold == 64 else 'resolution')
    assert [point['value'] for point in found['points']] == server.values
    assert found['runs'] == len(server.values)
    # at most the bracket's 7 doublings of 1..64 and 5 halvings of the last interval: well under 64 / 3 points
    assert len(found['points']) <= 13 < 64 / 3.0


def test_the_search_keeps_within_max_runs_with_repeats():
    for threshold in range(1, 65):
        server = Server(threshold, repeats=3)
        found = load_search.search(server, 1, 64, repeats=3, max_runs=64, clock=server.clock)
        assert found['runs'] == 3 * len(found['points']) <= 64
        assert len(found['points']) <= 64 / 3.0
        assert found['capacity'] == threshold


def test_a_coarser_resolution_stops_within_it():
    server = Server(37)
    found = load_search.search(server, 1, 64, resolution=4, clock=server.clock)
    passes = [p['value'] for p in found['points'] if p['passed']]
    fails = [p['value'] for p in found['points'] if not p['passed']]
    assert found['bound_by'] == 'resolution' and found['capacity'] == max(passes) <= 37
    assert min(fails) - max(passes) <= 4 and min(fails) > 37


def test_a_lowest_point_that_fails_has_no_capacity():
    server = Server(0.5, binding='tpot_ms')
    found = load_search.search(server, 1, 64, clock=server.clock)
    assert found['capacity'] is None and found['bound_by'] == 'lowest_fails' and server.values == [1]
    assert found['binding'] == 'tpot_ms' and found['capacity_low'] is None and found['capacity_high'] == 0


def test_a_highest_point_that_passes_is_the_capacity():
    server = Server(1000)
    found = load_search.search(server, 3, 40, clock=server.clock)
    assert server.values == [3, 6, 12, 24, 40] and found['capacity'] == 40 and found['bound_by'] == 'highest_passes'
    assert found['capacity_low'] == 40 and found['capacity_high'] == 40


def test_max_runs_stops_before_a_point_that_would_pass_it():
    server = Server(33, repeats=2)
    found = load_search.search(server, 1, 64, repeats=2, max_runs=9, clock=server.clock)
    assert found['bound_by'] == 'max_runs' and found['runs'] == 8 and server.values == [1, 2, 4, 8]
    assert found['capacity'] == 8


def test_max_seconds_stops_on_the_clock():
    server = Server(33, seconds=100.0)
    found = load_search.search(server, 1, 64, max_seconds=350.0, clock=server.clock)
    assert found['bound_by'] == 'max_seconds' and server.values == [1, 2, 4, 8] and found['seconds'] == 400.0


def test_the_interval_is_bounded_by_the_sure_points():
    server = Server(20, margin=0.12)  # 18..22 unsure of their side
    found = load_search.search(server, 1, 64, clock=server.clock)
    assert found['capacity'] == 20
    assert server.values == [1, 2, 4, 8, 16, 32, 24, 20, 22, 21]
    assert found['capacity_low'] == 16  # 20 passed, unsure
    assert found['capacity_high'] == 23  # 24 the lowest sure failure (21 and 22 failed, unsure)


def test_the_binding_metric_is_the_first_failing_point_above_the_capacity():
    calls = []

    def measure(value):
        calls.append(value)
        return {'passed': value <= 5, 'sure': 'unsure', 'binding': 'itl_ms' if value == 6 else 'e2e_ms', 'runs': 1}
    found = load_search.search(measure, 1, 64)
    assert found['capacity'] == 5 and found['binding'] == 'itl_ms'


@pytest.mark.parametrize('threshold', [0.7, 3.3, 9.99, 12.0, 50.0])
def test_a_rate_search_bisects_geometrically_within_its_relative_resolution(threshold):
    server = Server(threshold)
    found = load_search.search(server, 0.5, 64.0, kind='request_rate', resolution=0.1, clock=server.clock)
    passes = [p['value'] for p in found['points'] if p['passed']]
    fails = [p['value'] for p in found['points'] if not p['passed']]
    assert found['bound_by'] == 'resolution' and found['capacity'] == max(passes) <= threshold < min(fails)
    assert min(fails) / max(passes) <= 1.1
    assert server.values[:2] == [0.5, 1.0]
    assert all(float('%g' % value) == value for value in server.values)  # rate_tag writes each rate whole
    assert len(found['points']) <= 8 + math.ceil(math.log2(math.log(2) / math.log(1.1)))


@pytest.mark.parametrize('threshold', [3.3, 10.0, 19.1, 40.0])
def test_a_rate_searchs_upper_end_is_its_lowest_sure_failure_never_below_the_capacity(threshold):
    server = Server(threshold)
    found = load_search.search(server, 1.0, 64.0, kind='request_rate', resolution=0.25, clock=server.clock)
    lowest_fail = min(p['value'] for p in found['points'] if p['sure'] == 'fail')
    assert found['capacity_high'] == lowest_fail
    assert found['capacity_low'] <= found['capacity'] <= threshold < found['capacity_high']


@pytest.mark.parametrize('kwargs, message', [
    (dict(lo=0, hi=4), 'min and max must satisfy'),
    (dict(lo=8, hi=4), 'min and max must satisfy'),
    (dict(lo=1, hi=4, resolution=0), 'resolution must be an integer of 1 or more'),
    (dict(lo=1.5, hi=4), 'a concurrency search takes integers'),
    (dict(lo=1.0, hi=4.0, kind='request_rate', resolution=0), 'resolution must be a relative step above 0'),
    (dict(lo=1, hi=4, kind='tokens'), 'kind must be one of concurrency, request_rate'),
])
def test_bounds_that_cannot_be_searched_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        load_search.search(lambda value: {'passed': True}, **kwargs)
