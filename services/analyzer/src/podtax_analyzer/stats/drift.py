"""Drift: a change point over run order on one side (Pettitt's rank test).

Pettitt's statistic U_k = 2 * sum_{i<=k} r_i - k (n + 1) (r = mid-ranks of the values in run
order) measures how much the first k runs rank below or above the rest; K = max |U_k| at the
most likely change point k, and p ~= 2 exp(-6 K^2 / (n^3 + n^2)) (Pettitt 1979; the
approximation is conservative for small p). It is rank-based, so outliers do not fake a change
point, and a gradual trend is caught as well as a step.

Pettitt's approximate p cannot fall below 0.01 under 16 runs (a perfectly monotone series of 10
gives 0.066), so a side of up to ``TREND_MAX_RUNS`` (50) runs also gets the Mann-Kendall trend test:
Kendall's S of the values against run order, S = sum over i < j of sign(x_j - x_i), with its exact
null distribution when no value is tied (the Mahonian numbers; a monotone series of 10 gives
p = 2 / 10! = 5.5e-7), else the normal approximation with the tie-corrected variance
(n(n-1)(2n+5) - sum t(t-1)(2t+5)) / 18 and a continuity correction. Each test then runs at
``ALPHA`` / 2 (0.005). With the least-squares rule below, three rules at 0.005 each (Pettitt, Mann-Kendall, and
log_trend's p < 0.005 behind its Mann-Kendall guard) form the family: a stationary side's false alarms are bounded
by their sum (0.015), not by ``ALPHA``; measured rates are below.

To keep false positives low on stationary data, drift is reported only when p < ``ALPHA``
(0.01; ALPHA / 2 for each test where both run) AND the change is at least the practical
threshold (a statistically real but negligible shift is not worth a flag): the medians before and
after Pettitt's change point, or the Theil-Sen change from the first run to the last for the
trend test; with at least ``MIN_RUNS`` (6, the fewest a verdict needs) runs on the side. From 10 runs only, a pod
slowing by 1% a run over 8 runs (1% noise) read "slower" in 44 of 100 seeded cells, with no word; checked from 8, 67%
of 200 such cells are flagged. From 6 (at 6 runs only a monotone side passes, p = 2 / 6! = 0.0028): such a pod is
flagged in 50 of 200 cells at 6 runs and 98 at 7 (none before), while a stationary side is flagged in 0.23% of 4,000
at 6 runs and 0.17-0.30% at 7 (1-5% noise): the exact Mann-Kendall test keeps false alarms under ALPHA / 2 at any
size.

The ranks alone pass at 6 runs only a perfectly monotone side: one pair swapped by noise hid a drift of any size.
From 6 to 15 runs a side also drifts when the least-squares slope of its log values says so and the drift is large
(stats/log_trend.py: p < 0.005, at least 8% from the first run to the last, Mann-Kendall p < 0.06); ``fit_p`` then
holds that test's p.

A drift is described as a trend: the Theil-Sen slope over run order (median of pairwise slopes,
robust to outliers) as a share of the side's median per run, and the total change it implies from
the first run to the last (slope x (n - 1) / median). The change point is kept as where the
biggest step happened. A drifting side violates the "independent, identically distributed runs"
assumption of the interval, so the DRIFT flag withholds the verdict (podtax_analyzer.flags).

A warm-up is not a steady drift (review r8 M1): [868, 934, 975, 982, 1011, 1004, 1001, 1040] passed the
least-squares rule and read "rose by 10% over 8 runs", though the runs after the second are flat. When the first k
runs (1 to 3) all lie on one side of the rest's median and the rest shows no trend (Mann-Kendall p >= 0.05, at least
5 runs, its Theil-Sen change under half the step: a steady fall's rest of 5 passes the rank test), ``warmup``
holds k and the flag says so (the verdict stays withheld; only the words change).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from podtax_analyzer.stats.log_trend import MAX_RUNS as FIT_MAX_RUNS
from podtax_analyzer.stats.log_trend import RANK_GUARD, drifting
from podtax_analyzer.stats.medians import median, of_sorted

ALPHA = 0.01
MIN_RUNS = 6  # podtax.flags.MIN_RUNS; below 16 runs only the trend test can pass (Pettitt's p cannot)
TREND_MAX_RUNS = 50  # the Mann-Kendall test's O(n^2) sum is cheap up to here; Pettitt has the power beyond
WARMUP_MAX = 3  # a drift of the first runs only, up to this many, is worded as a warm-up (warm_up)
FLAT_P = 0.05  # the rest is flat when its Mann-Kendall p is at least this


@dataclass(frozen=True)
class Drift:
    """Change-point check of one side, values in run order.

    n: runs examined. index: the change point, i.e. runs [0, index) come before it (1..n-1); it and
    the fields after it are None (drift False) below MIN_RUNS, with one value only, or when a value is
    NaN or infinite (refused). p_value: Pettitt's approximate p-value in [0, 1]. before, after: medians
    of the two segments (metric unit). shift: after / before - 1 (dimensionless, e.g. -0.05 = 5% lower).
    drift: whether the flag applies (module doc: a step or a trend at least the threshold).
    slope: Theil-Sen trend per run as a fraction of the side's median (0.0015 = +0.15% per run),
    total: slope x (n - 1), the change from the first run to the last as a fraction; both None
    unless ``drift``. trend_p: the Mann-Kendall test's two-sided p-value in [0, 1], None above
    TREND_MAX_RUNS runs (and wherever index is None). fit_p: the least-squares trend test's p (stats/log_trend.py)
    when that test alone found the drift, else None. warmup: k when the drift is the first k runs (1..``WARMUP_MAX``)
    apart from a flat rest (warm_up), else None.
    """

    n: int
    index: int | None
    p_value: float | None
    before: float | None
    after: float | None
    shift: float | None
    drift: bool
    slope: float | None = None
    total: float | None = None
    trend_p: float | None = None
    fit_p: float | None = None
    warmup: int | None = None


def pettitt(x: np.ndarray, sorted_x: np.ndarray | None = None) -> tuple[int, float]:
    """Most likely change point (runs before it, 1..n-1) and Pettitt's p-value; needs n >= 2.
    sorted_x: x in ascending order, when the caller has it (the mid-ranks are then read off it)."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    from scipy.stats import rankdata  # lazy: ~65 MB an analyzer that only stores never loads

    r = rankdata(x) if sorted_x is None else mid_ranks(x, sorted_x)
    k = np.arange(1, n)
    u = 2.0 * np.cumsum(r)[:-1] - k * (n + 1)
    j = int(np.argmax(np.abs(u)))
    big_k = float(abs(u[j]))
    p = min(1.0, 2.0 * float(np.exp(-6.0 * big_k**2 / (n**3 + n**2))))
    return j + 1, p


def mid_ranks(x: np.ndarray, sorted_x: np.ndarray) -> np.ndarray:
    """Ranks of x (1-based, ties get their mean rank, as ``rankdata``; NaNs tie with each other), from x
    sorted ascending: each run of equal sorted values [start, end) gets (start + end + 1) / 2, put back in
    x's order by a stable argsort (four times faster than searching every value)."""
    n = len(sorted_x)
    head, tail = sorted_x[1:], sorted_x[:-1]
    new = (head != tail) & ~(np.isnan(head) & np.isnan(tail))
    starts = np.flatnonzero(np.concatenate(([True], new)))
    ends = np.append(starts[1:], n)
    r = np.empty(n)
    r[np.argsort(x, kind="stable")] = np.repeat(0.5 * (starts + ends + 1), ends - starts)
    return r


def detect_drift(x: np.ndarray, threshold: float = 0.01, sorted_x: np.ndarray | None = None) -> Drift:
    """Check one side's values (in run order, metric unit) for a change point; see module doc.
    sorted_x: the same values ascending, when the caller has them (saves a ranking)."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    # refused: too few runs, one value, or a NaN/inf (not a measurement; its spread is not finite)
    if n < MIN_RUNS or not 0 < (np.ptp(x) if sorted_x is None else sorted_x[-1] - sorted_x[0]) < np.inf:
        return Drift(n, None, None, None, None, None, False)
    idx, p = pettitt(x, sorted_x)
    before, after = median(x[:idx]), median(x[idx:])
    shift = after / before - 1.0 if before != 0 else None
    trend_p = mann_kendall(x) if n <= TREND_MAX_RUNS else None
    alpha = ALPHA if trend_p is None else ALPHA / 2
    step = bool(p < alpha and shift is not None and abs(shift) >= threshold)
    slope = total = None
    med = median(x) if sorted_x is None else of_sorted(sorted_x)
    near = trend_p is not None and (trend_p < alpha or (trend_p < RANK_GUARD and n <= FIT_MAX_RUNS))
    if (step or near) and med != 0:
        from scipy.stats import theilslopes  # lazy: ~65 MB an analyzer that only stores never loads

        slope = float(theilslopes(x).slope) / abs(med)
        total = slope * (n - 1)
    trend = trend_p is not None and trend_p < alpha and total is not None and abs(total) >= threshold
    fit_p = drifting(x, trend_p, total) if not (step or trend) else None  # a steady drift by its size (log_trend.py)
    drift = step or trend or fit_p is not None
    if not drift:
        slope = total = None
    return Drift(n, idx, p, before, after, shift, drift, slope, total, trend_p, fit_p, warm_up(x) if drift else None)


def warm_up(x: np.ndarray) -> int | None:
    """The fewest first runs k (1..``WARMUP_MAX``) that all lie on one side of the median of the rest, the rest (at
    least ``MIN_RUNS`` - 1 runs) flat: its Mann-Kendall p at least ``FLAT_P`` and its Theil-Sen change from its first
    run to its last under half the step from the first k's median to its. None when no k does (module doc)."""
    from scipy.stats import theilslopes  # lazy: ~65 MB an analyzer that only stores never loads

    x = np.asarray(x, dtype=float)
    for k in range(1, WARMUP_MAX + 1):
        rest = x[k:]
        if len(rest) < MIN_RUNS - 1:
            return None
        mid = median(rest)
        if not (np.all(x[:k] < mid) or np.all(x[:k] > mid)) or mann_kendall(rest) < FLAT_P:
            continue
        step = abs(median(x[:k]) - mid)
        if abs(float(theilslopes(rest).slope)) * (len(rest) - 1) < step / 2:
            return k
    return None


def mann_kendall(x: np.ndarray) -> float:
    """Two-sided p-value of the Mann-Kendall trend test of x in run order (module doc); needs n >= 2."""
    n = len(x)
    s = int(np.triu(np.sign(x[None, :] - x[:, None]), 1).sum())  # [i, j]: sign(x_j - x_i)
    ties = np.unique(x, return_counts=True)[1]
    if len(ties) == n:  # no ties: exact, from the distribution of the number of inversions
        pairs = n * (n - 1) // 2
        return min(1.0, 2.0 * float(_inversions_cdf(n)[(pairs - abs(s)) // 2]))
    t = ties[ties > 1].astype(float)
    var = (n * (n - 1) * (2 * n + 5) - float(np.sum(t * (t - 1) * (2 * t + 5)))) / 18.0
    if var <= 0:
        return 1.0
    return min(1.0, math.erfc(max(abs(s) - 1, 0) / math.sqrt(var) / math.sqrt(2.0)))


@lru_cache(maxsize=64)
def _inversions_cdf(n: int) -> np.ndarray:
    """P(a random permutation of n values has <= k inversions), k = 0 .. n(n-1)/2 (the Mahonian numbers
    over n!); S = n(n-1)/2 - 2 x inversions."""
    p = np.ones(1)
    for k in range(2, n + 1):
        p = np.convolve(p, np.full(k, 1.0 / k))
    return np.cumsum(p)
