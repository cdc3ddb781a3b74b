# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The campaign report, data's statistics over repeated runs, with numpy and scipy (controller side).

- summary: mean, sample standard deviation (ddof=1), the Student t confidence interval of the mean (n-1 degrees of
  freedom) and the coefficient of variation (sd / mean) of one cell's repeats.
- fieller: Fieller's confidence interval for the ratio of the means of two independent samples (a speedup: a
  method's mean throughput over the baseline's). The ratio r is in the interval when the mean difference
  x - r*y is within t * its standard error, sqrt(vx + r^2 vy) (vx = sx^2/nx, vy = sy^2/ny); the bounds are the roots
  of (y^2 - t^2 vy) r^2 - 2 x y r + (x^2 - t^2 vx) = 0. t has the Welch-Satterthwaite degrees of freedom of
  x - r*y at the estimated ratio. The interval is bounded only when the denominator's mean is significantly
  non-zero (y^2 > t^2 vy); otherwise it is unbounded and reported as None.
- fieller_moments: the same interval from each side's mean, sd and count (the decode speedup's, over requests).
- fiellers: fieller of many pairs at once, one numpy pass per pair of sample sizes (the report's speedups and energy
  ratios).
- welch: Welch's unequal-variance t-test of two samples (what scipy.stats.ttest_ind(equal_var=False) gives).

Every function returns None (or None fields) where the statistic is undefined: fewer than 2 values, an unbounded
interval, a zero mean for a CV. Numbers are plain Python floats (JSON-ready).
"""

from __future__ import annotations

import math


CONFIDENCE = 0.95


_LIBS = []


def _libs():
    """(numpy, scipy.special), imported when first used: the collection's plugins import without them (ansible-test's
    import check), the report needs them (requirements.txt)."""
    if not _LIBS:
        try:
            import numpy  # pylint: disable=import-outside-toplevel
            from scipy import special  # pylint: disable=import-outside-toplevel
        except ImportError as exc:
            raise ImportError('the report\'s statistics need numpy and scipy on the controller (pip install -r '
                              'requirements.txt): %s' % exc) from exc
        _LIBS.extend((numpy, special))
    return _LIBS


def _floats(values):
    return _libs()[0].array(values, dtype=float)


def _number(value):
    """A float, or None for NaN and infinities (what strict JSON cannot hold)."""
    value = float(value)
    return value if math.isfinite(value) else None


def t_quantile(df, confidence=CONFIDENCE):
    """The two-sided Student t critical value for confidence with df degrees of freedom (scipy.special.stdtrit, the
    inverse of Student's t CDF that scipy.stats.t.ppf wraps, without its per-call argument checks: a report calls it
    for every row)."""
    return float(_libs()[1].stdtrit(df, 0.5 + confidence / 2.0))


def summary(values, confidence=CONFIDENCE):
    """{'n', 'mean', 'sd', 'ci_low', 'ci_high', 'cv'} of values: the mean, the sample sd (ddof=1), the Student t
    interval of the mean (n-1 degrees of freedom) and sd / mean. n < 2: sd, interval and cv are None (n = 0: all)."""
    data = _floats(values)
    out = {'n': int(data.size), 'mean': None, 'sd': None, 'ci_low': None, 'ci_high': None, 'cv': None}
    if data.size == 0:
        return out
    mean = float(data.mean())
    out['mean'] = mean
    if data.size < 2:
        return out
    sd = float(data.std(ddof=1))
    half = t_quantile(data.size - 1, confidence) * sd / math.sqrt(data.size)
    out.update(sd=sd, ci_low=mean - half, ci_high=mean + half, cv=sd / abs(mean) if mean else None)
    return out


def summaries(samples, confidence=CONFIDENCE):
    """[summary(values) for values in samples], computed per sample size as one numpy array (a report has thousands
    of small samples: one array operation per size instead of several per sample)."""
    out = [None] * len(samples)
    sizes = {}
    for index, values in enumerate(samples):
        sizes.setdefault(len(values), []).append(index)
    for size, indices in sizes.items():
        if size < 2:
            for index in indices:
                out[index] = summary(samples[index], confidence)
            continue
        data = _floats([samples[index] for index in indices])
        means = data.mean(axis=1)
        sds = data.std(axis=1, ddof=1)
        halves = t_quantile(size - 1, confidence) * sds / math.sqrt(size)
        for index, mean, sd, half in zip(indices, means.tolist(), sds.tolist(), halves.tolist()):
            out[index] = {'n': size, 'mean': mean, 'sd': sd, 'ci_low': mean - half, 'ci_high': mean + half,
                          'cv': sd / abs(mean) if mean else None}
    return out


def fieller(num_values, den_values, confidence=CONFIDENCE):
    """{'ratio', 'low', 'high', 'df'}: mean(num) / mean(den) and Fieller's interval of it (see the module docstring).

    None when either side has fewer than 2 values or the denominator's mean is 0; low and high are None when the
    interval is unbounded (the denominator's mean is not significantly different from 0). Zero variance on both
    sides gives the ratio itself as both bounds.
    """
    num, den = _floats(num_values), _floats(den_values)
    if num.size < 2 or den.size < 2:
        return None
    return _fieller(float(num.mean()), float(num.var(ddof=1)) / num.size, int(num.size), float(den.mean()),
                    float(den.var(ddof=1)) / den.size, int(den.size), confidence)


def fieller_moments(x, sx, nx, y, sy, ny, confidence=CONFIDENCE):
    """fieller from each side's mean, sample sd (ddof=1) and count instead of its values (a result keeps the mean, sd
    and count of its requests' decode TPOT, not the values): the same interval. None when a side has fewer than 2
    values, a figure is missing or the denominator's mean is 0."""
    if None in (x, sx, nx, y, sy, ny) or nx < 2 or ny < 2:
        return None
    return _fieller(x, sx * sx / nx, nx, y, sy * sy / ny, ny, confidence)


def _fieller(x, vx, nx, y, vy, ny, confidence):
    """Fieller's interval of x / y from the means and the variances of the means (vx = sx^2 / nx)."""
    if y == 0:
        return None
    ratio = x / y
    out = {'ratio': ratio, 'low': None, 'high': None, 'df': None}
    spread = vx + ratio * ratio * vy
    if spread == 0:
        out.update(low=ratio, high=ratio)
        return out
    df = spread * spread / (vx * vx / (nx - 1) + (ratio * ratio * vy) ** 2 / (ny - 1))
    t = t_quantile(df, confidence)
    a = y * y - t * t * vy
    if a <= 0:
        out['df'] = df
        return out
    b, c = x * y, x * x - t * t * vx
    root = math.sqrt(max(b * b - a * c, 0.0))
    out.update(low=(b - root) / a, high=(b + root) / a, df=df)
    return out


def fiellers(pairs, confidence=CONFIDENCE):
    """[fieller(num, den) for num, den in pairs], computed per pair of sample sizes as numpy arrays (a report has a
    speedup and an energy ratio per row: one array operation per size pair instead of several per ratio)."""
    out = [None] * len(pairs)
    sizes = {}
    for index, (num, den) in enumerate(pairs):
        if len(num) >= 2 and len(den) >= 2:
            sizes.setdefault((len(num), len(den)), []).append(index)
    numpy, special = _libs()
    for (n_num, n_den), indices in sizes.items():
        num = _floats([pairs[index][0] for index in indices])
        den = _floats([pairs[index][1] for index in indices])
        x, y = num.mean(axis=1), den.mean(axis=1)
        vx, vy = num.var(axis=1, ddof=1) / n_num, den.var(axis=1, ddof=1) / n_den
        with numpy.errstate(divide='ignore', invalid='ignore'):
            ratio = x / y
            spread = vx + ratio * ratio * vy
            df = spread * spread / (vx * vx / (n_num - 1) + (ratio * ratio * vy) ** 2 / (n_den - 1))
            t = special.stdtrit(df, 0.5 + confidence / 2.0)
            a = y * y - t * t * vy
            b, c = x * y, x * x - t * t * vx
            root = numpy.sqrt(numpy.maximum(b * b - a * c, 0.0))
            low, high = (b - root) / a, (b + root) / a
        for at, index in enumerate(indices):
            if y[at] == 0:
                continue
            item = {'ratio': float(ratio[at]), 'low': None, 'high': None, 'df': None}
            if spread[at] == 0:
                item.update(low=item['ratio'], high=item['ratio'])
            elif a[at] <= 0:
                item['df'] = float(df[at])
            else:
                item.update(low=float(low[at]), high=float(high[at]), df=float(df[at]))
            out[index] = item
    return out


def welch(a_values, b_values):
    """{'t', 'df', 'p'} of Welch's t-test of two samples: mean(a) - mean(b) over sqrt(va + vb) (v = s^2 / n), the
    Welch-Satterthwaite degrees of freedom and the two-sided p from Student's t (scipy.special.stdtr); the same
    numbers as scipy.stats.ttest_ind(a, b, equal_var=False), without its per-call cost (0.4 ms; compare calls it for
    every cell). None when a side has fewer than 2 values; t and p are None when both sides have zero variance."""
    a, b = _floats(a_values), _floats(b_values)
    if a.size < 2 or b.size < 2:
        return None
    va, vb = float(a.var(ddof=1)) / a.size, float(b.var(ddof=1)) / b.size
    if va + vb == 0:
        return {'t': None, 'df': None, 'p': None}
    t = (float(a.mean()) - float(b.mean())) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va * va / (a.size - 1) + vb * vb / (b.size - 1))
    return {'t': t, 'df': df, 'p': _number(2.0 * _libs()[1].stdtr(df, -abs(t)))}


def excludes(low, high, value=1.0):
    """True when the interval [low, high] excludes value, False when it contains it, None without an interval."""
    if low is None or high is None:
        return None
    return not low <= value <= high


def overlap(first, second):
    """True when the intervals (low, high) overlap, False when they do not, None when either is missing."""
    if None in (first[0], first[1], second[0], second[1]):
        return None
    return first[0] <= second[1] and second[0] <= first[1]


def _mean(values):
    values = [value for value in values if value is not None]
    return math.fsum(values) / len(values) if values else None
