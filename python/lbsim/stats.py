"""Intervals over seeds for paired comparisons (no SciPy needed).

A comparison runs two arms on the same seeds; each seed gives both arms the
same flows (common random numbers), so the arms are compared seed by seed:

- **paired t interval on log ratios** (the default): with ``r_i = b_i / a_i``
  per seed, the mean of ``log r_i`` and its Student t interval with n - 1
  degrees of freedom, exponentiated. The ratio reported is the geometric
  mean of the per-seed ratios. Needs every value positive.
- **paired bootstrap** (where a value is zero, e.g. no drops in a seed):
  the ratio of the arms' means, with a percentile interval over 10,000
  resamples of the seeds (same seeds in both arms, a fixed random seed so
  the interval is reproducible).
- **paired t interval on differences** (where no ratio is defined: the
  baseline is 0 in every seed): with ``d_i = b_i - a_i`` per seed, the mean
  of ``d_i`` and its Student t interval with n - 1 degrees of freedom.

``seeds_needed`` projects how many seeds an interval needs to reach a
half-width, from the spread observed so far.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Optional, Sequence


def summary_value(summary: Any, dotted: str) -> Optional[float]:
    """The number at a dotted path of a summary.json dict
    (``fct_us.p99``; a list element by index: ``jobs.0.iteration_us.mean``),
    or None where the path leads nowhere (a missing key, an index past the
    end) or to anything but a number (a bool, a string, a table, null)."""
    d = summary
    for k in dotted.split("."):
        if isinstance(d, list) and k.isdigit() and int(k) < len(d):
            d = d[int(k)]
        elif isinstance(d, dict) and k in d:
            d = d[k]
        else:
            return None
    return float(d) if isinstance(d, (int, float)) and not isinstance(d, bool) else None


def nearest_rank(values, q: float, *, presorted: bool = False) -> float:
    """The q-quantile (0 < q <= 1) by the nearest-rank rule, as summary.json
    computes its percentiles: the value at rank ceil(q n) (1-based) of the
    n sorted values, q n snapped to an integer within rounding error (so
    99.9 % of 10,000 is rank 9,990). NaNs are left out; NaN if none remain.
    ``presorted``: ``values`` is sorted ascending (NaNs last) already.

    NumPy's equivalent is ``np.quantile(v, q, method="inverted_cdf")``;
    pandas' default ``Series.quantile`` interpolates linearly and differs.
    """
    import numpy as np

    v = np.asarray(values, dtype=float)
    if not presorted:
        v = np.sort(v)
    n = len(v) - int(np.isnan(v).sum())  # NaNs sort last
    if n <= 0:
        return math.nan
    x = q * n
    rank = round(x) if abs(x - round(x)) <= 1e-9 * max(x, 1.0) else math.ceil(x)
    return float(v[min(max(int(rank), 1), n) - 1])


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta function
    (modified Lentz)."""
    tiny, eps = 1e-300, 3e-16
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(lbeta) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbeta) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """Student t distribution's CDF."""
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with ``df`` degrees of freedom (by
    bisection on the CDF; p in (0, 1))."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@dataclass
class Ratio:
    """An arm's value over the baseline's, paired over seeds."""

    ratio: float
    ci_low: float
    ci_high: float
    seeds: int
    method: str

    def excludes_one(self) -> bool:
        return self.ci_high < 1.0 or self.ci_low > 1.0

    def half_width(self) -> float:
        """The interval's larger half-width relative to the ratio."""
        if not (self.ratio > 0 and math.isfinite(self.ci_low) and math.isfinite(self.ci_high)):
            return math.inf
        return max(self.ci_high / self.ratio - 1.0, 1.0 - self.ci_low / self.ratio)


def paired_ratio(base: Sequence[float], arm: Sequence[float], level: float = 0.95) -> Ratio:
    """``arm / base`` over paired seeds with a ``level`` interval (see the
    module's doc for the two methods)."""
    if len(base) != len(arm):
        raise ValueError("paired samples must have the same length")
    nan = float("nan")
    pairs = [(a, b) for a, b in zip(base, arm) if a is not None and b is not None and math.isfinite(a) and math.isfinite(b)]
    n = len(pairs)
    if n == 0:
        return Ratio(nan, nan, nan, 0, "none")
    if all(a > 0 and b > 0 for a, b in pairs):
        logs = [math.log(b / a) for a, b in pairs]
        m = sum(logs) / n
        if n < 2:
            return Ratio(math.exp(m), nan, nan, n, "t on log ratios")
        sd = math.sqrt(sum((x - m) ** 2 for x in logs) / (n - 1))
        h = t_quantile(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
        return Ratio(math.exp(m), math.exp(m - h), math.exp(m + h), n, "t on log ratios")
    sa, sb = sum(a for a, _ in pairs), sum(b for _, b in pairs)
    if sa == 0:
        return Ratio(nan if sb == 0 else math.inf, nan, nan, n, "bootstrap of the ratio of means")
    ratio = sb / sa
    if n < 2:
        return Ratio(ratio, nan, nan, n, "bootstrap of the ratio of means")
    rng = random.Random(12345)
    boots = []
    for _ in range(10_000):
        idx = [rng.randrange(n) for _ in range(n)]
        a = sum(pairs[i][0] for i in idx)
        b = sum(pairs[i][1] for i in idx)
        if a > 0:
            boots.append(b / a)
    boots.sort()
    if not boots:
        return Ratio(ratio, nan, nan, n, "bootstrap of the ratio of means")
    lo = nearest_rank(boots, (1 - level) / 2, presorted=True)
    hi = nearest_rank(boots, (1 + level) / 2, presorted=True)
    return Ratio(ratio, lo, hi, n, "bootstrap of the ratio of means")


def mean_interval(values: Sequence[float], level: float = 0.95) -> Ratio:
    """The mean of per-seed values with its Student t interval (for values
    that are not ratios: a share of a gain, a plain metric)."""
    v = [x for x in values if x is not None and math.isfinite(x)]
    n = len(v)
    nan = float("nan")
    if n == 0:
        return Ratio(nan, nan, nan, 0, "none")
    m = sum(v) / n
    if n < 2:
        return Ratio(m, nan, nan, n, "t on values")
    sd = math.sqrt(sum((x - m) ** 2 for x in v) / (n - 1))
    h = t_quantile(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
    return Ratio(m, m - h, m + h, n, "t on values")


def paired_difference(base: Sequence[float], arm: Sequence[float], level: float = 0.95) -> Ratio:
    """``arm - base`` over paired seeds: the mean of the per-seed
    differences with its Student t interval (``Ratio.ratio`` holds the mean
    difference). Seeds where either value is missing are left out."""
    if len(base) != len(arm):
        raise ValueError("paired samples must have the same length")
    d = [b - a for a, b in zip(base, arm) if a is not None and b is not None and math.isfinite(a) and math.isfinite(b)]
    r = mean_interval(d, level)
    return Ratio(r.ratio, r.ci_low, r.ci_high, r.seeds, "t on paired differences" if d else "none")


def seeds_needed(half_width: float, seeds: int, target: float, level: float = 0.95, most: int = 1_000_000) -> Optional[int]:
    """How many seeds a Student t interval needs to be at most ``target``
    wide on each side, at the spread observed so far: an interval of
    ``half_width`` over ``seeds`` seeds implies a standard deviation
    ``s = half_width * sqrt(seeds) / t(seeds - 1)``; the answer is the
    smallest ``m >= 2`` with ``t(m - 1) * s / sqrt(m) <= target`` (``t(k)``:
    the ``(1 + level) / 2`` quantile of Student's t with ``k`` degrees of
    freedom). ``seeds`` if the interval is that narrow already; None if no
    number up to ``most`` is enough (or ``target`` is 0)."""
    if not (math.isfinite(half_width) and seeds >= 2):
        return None
    if half_width <= target:
        return seeds
    if not target > 0:
        return None
    q = 0.5 + level / 2
    s = half_width * math.sqrt(seeds) / t_quantile(q, seeds - 1)

    def ok(m: int) -> bool:
        return t_quantile(q, m - 1) * s / math.sqrt(m) <= target

    lo, hi = seeds, max(seeds + 1, 2)  # ok(lo) is false; t(m - 1) / sqrt(m) falls with m
    while not ok(hi):
        if hi >= most:
            return None
        lo, hi = hi, min(most, hi * 2)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi
