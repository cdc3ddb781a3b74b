# SPDX-License-Identifier: GPL-3.0-or-later
"""report_stats: the Student t interval, Fieller's interval of a ratio of means and Welch's test, on known answers."""
import math

import numpy as np
import pytest

from ansible_collections.specdec.bench.plugins.plugin_utils.report import stats as report_stats


def test_summary_is_the_textbook_student_t_interval():
    # 10, 12, 14: mean 12, sd 2, t(0.975, 2) = 4.302652729749464 (tables), half-width 4.3027 * 2 / sqrt(3) = 4.9683
    got = report_stats.summary([10, 12, 14])
    assert got['n'] == 3 and got['mean'] == pytest.approx(12.0) and got['sd'] == pytest.approx(2.0)
    assert got['ci_low'] == pytest.approx(12.0 - 4.968275, abs=1e-5)
    assert got['ci_high'] == pytest.approx(12.0 + 4.968275, abs=1e-5)
    assert got['cv'] == pytest.approx(2.0 / 12.0)


def test_summary_of_one_value_has_no_spread_and_of_none_no_mean():
    assert report_stats.summary([5.0]) == {'n': 1, 'mean': 5.0, 'sd': None, 'ci_low': None, 'ci_high': None, 'cv': None}
    assert report_stats.summary([])['mean'] is None


def test_summary_of_equal_values_is_a_point_and_of_a_zero_mean_has_no_cv():
    got = report_stats.summary([3.0, 3.0, 3.0])
    assert (got['sd'], got['ci_low'], got['ci_high'], got['cv']) == (0.0, 3.0, 3.0, 0.0)
    assert report_stats.summary([-1.0, 1.0])['cv'] is None


def _fieller_closed_form(x, y, vx, vy, t):
    a, b, c = y * y - t * t * vy, x * y, x * x - t * t * vx
    root = math.sqrt(b * b - a * c)
    return (b - root) / a, (b + root) / a


def test_fieller_is_the_closed_form_with_welch_satterthwaite_degrees_of_freedom():
    num, den = [120.0, 126.0, 123.0], [100.0, 98.0, 103.0]
    x, y = np.mean(num), np.mean(den)
    vx, vy = np.var(num, ddof=1) / 3, np.var(den, ddof=1) / 3
    r = x / y
    df = (vx + r * r * vy) ** 2 / (vx ** 2 / 2 + (r * r * vy) ** 2 / 2)
    low, high = _fieller_closed_form(x, y, vx, vy, report_stats.t_quantile(df))
    got = report_stats.fieller(num, den)
    assert got['ratio'] == pytest.approx(r) and got['df'] == pytest.approx(df)
    assert (got['low'], got['high']) == (pytest.approx(low), pytest.approx(high))
    assert got['low'] < r < got['high'] and got['low'] > 1.0  # a clear speedup: significant


def test_fieller_matches_the_delta_method_on_large_precise_samples():
    rng = np.random.default_rng(7)
    num, den = rng.normal(200.0, 2.0, 400), rng.normal(100.0, 1.0, 400)
    got = report_stats.fieller(num, den)
    r = num.mean() / den.mean()
    se = r * math.sqrt(num.var(ddof=1) / 400 / num.mean() ** 2 + den.var(ddof=1) / 400 / den.mean() ** 2)
    assert got['low'] == pytest.approx(r - 1.96 * se, rel=2e-4) and got['high'] == pytest.approx(r + 1.96 * se, rel=2e-4)


def test_fieller_covers_the_true_ratio_95_percent_of_the_time():
    rng = np.random.default_rng(2026)
    covered = 0
    for _experiment in range(2000):
        num, den = rng.normal(130.0, 8.0, 5), rng.normal(100.0, 12.0, 4)
        got = report_stats.fieller(num, den)
        covered += got['low'] is not None and got['low'] <= 1.3 <= got['high']
    assert 0.93 <= covered / 2000.0 <= 0.97


def test_fieller_is_unbounded_when_the_denominator_is_not_clearly_away_from_zero():
    got = report_stats.fieller([10.0, 11.0, 12.0], [0.1, -0.2, 0.3])
    assert got['ratio'] == pytest.approx(11.0 / (0.2 / 3)) and got['low'] is None and got['high'] is None
    assert report_stats.fieller([1.0, 2.0], [0.0, 0.0]) is None


def test_fieller_needs_two_values_a_side_and_is_a_point_without_variance():
    assert report_stats.fieller([1.0], [1.0, 2.0]) is None and report_stats.fieller([1.0, 2.0], [3.0]) is None
    got = report_stats.fieller([2.0, 2.0], [4.0, 4.0])
    assert (got['ratio'], got['low'], got['high']) == (0.5, 0.5, 0.5)


def test_welch_is_scipys_and_the_hand_computed_statistic():
    # hand: means 20.0 and 22.0; variances 2.5 and 10.0 over n 5 each: se^2 = 0.5 + 2.0, t = -2 / sqrt(2.5)
    a, b = [18.0, 19.0, 20.0, 21.0, 22.0], [18.0, 20.0, 22.0, 24.0, 26.0]
    got = report_stats.welch(a, b)
    assert got['t'] == pytest.approx(-2.0 / math.sqrt(2.5))
    assert got['df'] == pytest.approx(2.5 ** 2 / (0.5 ** 2 / 4 + 2.0 ** 2 / 4))
    from scipy import stats  # pylint: disable=import-outside-toplevel
    assert got['p'] == pytest.approx(2 * stats.t.sf(abs(got['t']), got['df']))
    assert 0.05 < got['p'] < 0.5
    scipys = stats.ttest_ind(a, b, equal_var=False)
    assert (got['t'], got['p']) == (pytest.approx(float(scipys.statistic), rel=1e-12), pytest.approx(float(scipys.pvalue), rel=1e-9))


@pytest.mark.parametrize('seed', range(5))
def test_welch_is_scipys_ttest_ind_on_random_samples(seed):
    from scipy import stats  # pylint: disable=import-outside-toplevel
    rng = np.random.default_rng(seed)
    a, b = rng.normal(100.0, 5.0, 3 + seed), rng.normal(103.0, 9.0, 4)
    got, scipys = report_stats.welch(a, b), stats.ttest_ind(a, b, equal_var=False)
    assert got['t'] == pytest.approx(float(scipys.statistic), rel=1e-12)
    assert got['p'] == pytest.approx(float(scipys.pvalue), rel=1e-9) and got['df'] == pytest.approx(float(scipys.df), rel=1e-12)


def test_welch_is_undefined_with_one_value_a_side_or_no_variance():
    assert report_stats.welch([1.0], [1.0, 2.0]) is None
    assert report_stats.welch([1.0, 1.0], [2.0, 2.0]) == {'t': None, 'df': None, 'p': None}


def test_an_interval_excludes_or_contains_one_and_overlaps():
    assert report_stats.excludes(1.01, 1.2) is True and report_stats.excludes(0.9, 1.1) is False
    assert report_stats.excludes(None, 1.2) is None
    assert report_stats.overlap((1.0, 2.0), (1.5, 3.0)) is True and report_stats.overlap((1.0, 2.0), (2.5, 3.0)) is False
    assert report_stats.overlap((None, 2.0), (1.0, 2.0)) is None


def test_summaries_are_each_samples_summary():
    samples = [[10, 12, 14], [5.0], [], [3.0, 3.0, 3.0], [1.0, 2.0], [-1.0, 1.0], [2.5, 2.0, 9.0]]
    for got, values in zip(report_stats.summaries(samples), samples):
        want = report_stats.summary(values)
        assert got.keys() == want.keys()
        for key, value in want.items():
            assert got[key] == (value if value is None else pytest.approx(value, rel=1e-12)), (values, key)


def test_fiellers_batched_equal_fieller_one_by_one():
    """fiellers (the report's batched form, per pair of sample sizes) gives what fieller gives for each pair: bounded,
    unbounded (a denominator near 0), zero variance, a zero mean, and too few values."""
    rng = np.random.default_rng(5)
    pairs = []
    for _number in range(600):
        n_num, n_den = rng.choice([1, 2, 3, 5]), rng.choice([1, 2, 3, 4])
        spread = rng.choice([0.0, 0.01, 1.0, 50.0])
        pairs.append((list(rng.normal(100.0, spread, n_num)), list(rng.normal(rng.choice([0.0, 1.0, 100.0]), spread, n_den))))
    pairs += [([1.0, 1.0], [0.0, 0.0]), ([2.0, 2.0], [1.0, 1.0]), ([1.0], [1.0, 2.0])]
    got = report_stats.fiellers(pairs)
    kinds = set()
    for (num, den), item in zip(pairs, got):
        expected = report_stats.fieller(num, den)
        if expected is None:
            assert item is None
            kinds.add('none')
            continue
        kinds.add('unbounded' if expected['low'] is None else 'bounded')
        assert set(item) == set(expected)
        for key, value in expected.items():
            assert (item[key] is None) == (value is None) and (value is None or item[key] == pytest.approx(value, rel=1e-9, abs=1e-12)), key
    assert kinds == {'none', 'unbounded', 'bounded'}
