"""A steady drift over run order at 6 to ``MAX_RUNS`` runs: the least-squares slope of the log values.

The Mann-Kendall test (stats/drift.py) reads only the order of the runs: at 6 runs and its level (0.005) only a
perfectly monotone side passes, so one pair of neighbouring runs swapped by noise hides any drift, however large. A
pod drifting 15% worse over its runs (throughput noise 1-5%, latency log-t(3) 3-8%; hG's planted campaigns) was
DRIFT in 24% / 10% of sides at 6 runs and 64% / 40% at 10. The slope of the log values against run order by least
squares, tested by its t statistic (n - 2 degrees of freedom), weighs how far each run lies, not only its rank:
a side is ``drifting`` when that slope's two-sided p is below ``ALPHA`` (0.005) AND the change from the first run to
the last it implies is at least ``SIZE`` (8%), by least squares and by Theil-Sen alike (same sign), AND the
Mann-Kendall p is below ``RANK_GUARD`` (0.06: at 6 runs at most two pairs out of order): one far run alone, which
tilts a least-squares line, does not tilt the median of the pairwise slopes nor the ranks.

Per side (20,000 seeded stationary sides and 2,000 planted ones each, median of 3 seeds), before -> after: drifting
15% over 6 runs, throughput 24.5 -> 40.1%, latency 9.8 -> 20.0%; over 10 runs 63.8 -> 73.0%, 39.2 -> 46.4%; a 15%
step halfway through 8 runs 4 -> 25% (throughput); stationary sides 0.27 -> 0.40% (6 runs), 0.49 -> 0.58% (10) for
throughput, 0.29 -> 0.40%, 0.51 -> 0.60% for latency; one run 3 times slower (anywhere, or last) unchanged. At an
equal false-alarm rate the slope wins: its test alone (no rank test) flags 0.18% / 0.24% of stationary 6-run sides
(the ranks: 0.24% / 0.27%) and finds 39% / 19% of those drifts (the ranks: 24% / 10%). The rank test's next level
at 6 runs (p < 0.02: one pair out of order), with the same 8%, would flag 0.52% / 0.95% for 52% / 32%.
"""

from __future__ import annotations

import math

import numpy as np

ALPHA = 0.005
SIZE = 0.08  # least change from the first run to the last (fraction of the value) a drift must show
RANK_GUARD = 0.06
MIN_RUNS = 6
MAX_RUNS = 15  # from 16 runs Pettitt's test can pass as well, and the ranks have the power alone


def slope_p(x: np.ndarray) -> tuple[float, float] | None:
    """The least-squares slope of log(x) against run order (0 .. n-1), as the change it implies from the first run
    to the last (a fraction: exp(slope x (n - 1)) - 1), and its two-sided p (t test, n - 2 degrees of freedom).
    None with fewer than 3 values, a value <= 0 or not finite, or all values equal."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    if n < 3 or not np.all(np.isfinite(x)) or np.any(x <= 0):
        return None
    lx = np.log(x)
    t = np.arange(n) - (n - 1) / 2.0
    sxx = float(np.sum(t * t))
    slope = float(np.sum(t * (lx - lx.mean()))) / sxx
    resid = lx - lx.mean() - slope * t
    rss = float(np.sum(resid * resid))
    total = math.expm1(slope * (n - 1))
    if rss <= 0.0:
        return (total, 0.0) if slope != 0.0 else None
    from scipy.stats import t as student  # lazy: ~65 MB an analyzer that only stores never loads

    tstat = slope / math.sqrt(rss / (n - 2) / sxx)
    return total, float(min(1.0, 2.0 * student.sf(abs(tstat), n - 2)))


def drifting(x: np.ndarray, trend_p: float | None, theil_sen_total: float | None) -> float | None:
    """The least-squares p of a side of MIN_RUNS to MAX_RUNS runs that drifts by the rule of the module doc, else
    None. trend_p: its Mann-Kendall p; theil_sen_total: its Theil-Sen change from the first run to the last
    (fraction), both from stats/drift.py."""
    if not MIN_RUNS <= len(x) <= MAX_RUNS or trend_p is None or theil_sen_total is None or trend_p >= RANK_GUARD:
        return None
    found = slope_p(x)
    if found is None:
        return None
    total, p = found
    sized = abs(total) >= SIZE and abs(theil_sen_total) >= SIZE and (total > 0) == (theil_sen_total > 0)
    return p if p < ALPHA and sized else None
