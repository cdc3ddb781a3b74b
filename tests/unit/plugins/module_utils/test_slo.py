# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""slo: SLO percentiles, goodput and a capacity search's point, on synthetic raw records with known answers."""

from __future__ import annotations

import pytest

from ansible_collections.specdec.bench.plugins.module_utils._stage import slo


def record(ttft, latency, tokens, itl=(), warmup=False, success=True):
    """A raw record of the builtin harness (seconds)."""
    return {'warmup': warmup, 'success': success, 'ttft_s': ttft, 'latency_s': latency, 'output_tokens': tokens,
            'itl_s': list(itl)}


@pytest.mark.parametrize('values, p, expected', [
    ([1, 2, 3, 4], 95, 3.85),  # numpy.percentile([1, 2, 3, 4], 95) = 3.85: rank 2.85
    ([10, 20, 30, 40, 50], 50, 30.0),
    ([15, 20, 35, 40, 50], 40, 29.0),  # rank 1.6: 20 + 0.6 * 15
    ([3, 1, 2], 99, 2.98),  # unsorted input
    ([7], 95, 7.0),
    ([1, 2, 3, 4], 25, 1.75),
])
def test_percentile_is_numpys_linear_default(values, p, expected):
    assert slo.percentile(values, p) == pytest.approx(expected, abs=1e-12)


def test_percentile_of_nothing_is_none():
    assert slo.percentile([], 95) is None


def test_request_values_follow_vllms_definitions():
    values = slo.request_values(record(0.1, 1.1, 11, itl=[0.1] * 10))
    assert values['ttft_ms'] == pytest.approx(100.0) and values['e2e_ms'] == pytest.approx(1100.0)
    assert values['tpot_ms'] == pytest.approx(100.0)  # (1.1 - 0.1) / (11 - 1)
    assert values['itl_ms'] == pytest.approx([100.0] * 10)
    assert slo.request_values(record(0.1, 0.2, 1))['tpot_ms'] is None


def test_measured_leaves_out_the_warm_up_and_failures():
    records = [record(1, 2, 3, warmup=True), record(1, 2, 3, success=False), record(0.5, 2, 3)]
    assert slo.measured(records) == [records[2]]


def test_run_percentiles_pool_every_gap_for_itl():
    records = [record(0.1, 1.0, 3, itl=[0.01, 0.02]), record(0.3, 2.0, 3, itl=[0.03, 0.04]), record(9, 9, 3, warmup=True)]
    got = slo.run_percentiles(records, {'ttft_ms': {'p': 50, 'max': 1}, 'itl_ms': {'p': 100, 'max': 1}})
    assert got['ttft_ms'] == pytest.approx(200.0)  # median of 100 and 300 ms; the warm-up left out
    assert got['itl_ms'] == pytest.approx(40.0)


def test_request_meets_checks_each_metric_on_the_requests_own_values():
    target = {'ttft_ms': {'p': 95, 'max': 200}, 'itl_ms': {'p': 50, 'max': 25}}
    assert slo.request_meets(record(0.1, 1, 3, itl=[0.01, 0.02, 0.03]), target)  # median gap 20 ms
    assert not slo.request_meets(record(0.3, 1, 3, itl=[0.01]), target)  # ttft 300 ms
    assert not slo.request_meets(record(0.1, 1, 3, itl=[0.03, 0.04]), target)  # median gap 35 ms
    assert slo.request_meets(record(0.1, 0.1, 1), {'tpot_ms': {'p': 95, 'max': 1}})  # no tpot: met


def test_goodput_counts_good_requests_and_their_tokens():
    records = [record(0.1, 1, 10), record(0.1, 1, 20), record(0.5, 1, 30), record(0.1, 1, 40, success=False),
               record(0.1, 1, 50, warmup=True)]
    got = slo.goodput(records, {'ttft_ms': {'p': 95, 'max': 200}}, duration_s=2.0, energy_j=60.0)
    assert got == {'completed': 3, 'good': 2, 'slo_attainment': pytest.approx(2 / 3.0), 'request_goodput': 1.0,
                   'token_goodput': 15.0, 'goodput_tokens_per_j': 0.5}
    assert slo.goodput(records, None, 0)['good'] == 3 and slo.goodput(records, None, 0)['request_goodput'] is None
    assert slo.goodput([], None, 1.0)['slo_attainment'] is None


def repeat(ttfts, tokens=5):
    return [record(ttft, ttft + 1.0, tokens) for ttft in ttfts]


def test_a_point_well_inside_its_slo_is_sure_to_pass():
    point = slo.evaluate_point([repeat([0.10, 0.10]), repeat([0.11, 0.11]), repeat([0.12, 0.12])],
                               {'ttft_ms': {'p': 95, 'max': 200}})
    metric = point['percentiles']['ttft_ms']
    assert metric['values'] == pytest.approx([100.0, 110.0, 120.0]) and metric['mean'] == pytest.approx(110.0)
    # s = 10, t(0.975, 2) = 4.303: 110 -/+ 4.303 * 10 / sqrt(3)
    assert metric['ci_low'] == pytest.approx(110 - 24.8434, abs=1e-3) and metric['ci_high'] == pytest.approx(134.8434, abs=1e-3)
    assert point['passed'] and point['sure'] == 'pass' and point['binding'] == 'ttft_ms'
    assert point['ratio'] == pytest.approx(110 / 200.0) and metric['ratio'] == point['ratio']


def test_a_point_near_its_limit_is_unsure_and_one_far_above_sure_to_fail():
    near = slo.evaluate_point([repeat([0.18]), repeat([0.21])], {'ttft_ms': {'p': 95, 'max': 200}})  # mean 195 ms
    assert near['passed'] and near['sure'] == 'unsure'
    far = slo.evaluate_point([repeat([0.50]), repeat([0.51]), repeat([0.52])], {'ttft_ms': {'p': 95, 'max': 200}})
    assert not far['passed'] and far['sure'] == 'fail'
    one = slo.evaluate_point([repeat([0.50])], {'ttft_ms': {'p': 95, 'max': 200}})
    assert not one['passed'] and one['sure'] == 'unsure' and one['percentiles']['ttft_ms']['ci_low'] is None


def test_the_binding_metric_is_the_one_closest_to_or_furthest_past_its_limit():
    records = [repeat([0.1, 0.1], tokens=11), repeat([0.1, 0.1], tokens=11)]  # ttft 100 ms, tpot 100 ms, e2e 1100 ms
    point = slo.evaluate_point(records, {'ttft_ms': {'max': 1000}, 'tpot_ms': {'max': 150}, 'e2e_ms': {'max': 5000}})
    assert point['binding'] == 'tpot_ms' and point['ratio'] == pytest.approx(100 / 150.0)
    assert point['percentiles']['ttft_ms']['p'] == 95.0  # the default percentile


def test_a_point_with_no_completed_request_fails_surely():
    point = slo.evaluate_point([[record(0.1, 1, 3, success=False)]], {'ttft_ms': {'p': 95, 'max': 200}})
    assert point['passed'] is False and point['sure'] == 'fail' and point['binding'] == 'ttft_ms' and point['ratio'] is None


def test_no_slo_passes():
    assert slo.evaluate_point([repeat([1.0])], None) == {'passed': True, 'sure': 'pass', 'percentiles': {}, 'binding': None,
                                                         'ratio': None}


def test_an_unknown_confidence_is_refused_naming_the_choices():
    with pytest.raises(ValueError, match='confidence must be one of 0.9, 0.95, 0.99'):
        slo.evaluate_point([repeat([0.1]), repeat([0.1])], {'ttft_ms': {'max': 1}}, confidence=0.8)
