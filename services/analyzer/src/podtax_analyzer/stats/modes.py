"""Two modes in one side's values: detection (Hartigan's dip test AND Sarle's coefficient, or a wide gap
between tight modes) and split.

A side of at least ``MIN_RUNS`` runs is BIMODAL when Hartigan's dip test rejects
unimodality (p < ``DIP_ALPHA``) and either Sarle's bimodality coefficient exceeds 5/9 (the value of
a uniform distribution) or the dip test alone is strong (p < ``DIP_STRONG``, 0.01). Requiring both at
0.05 keeps false alarms rare: the dip test alone fires on 5% of unimodal samples, the coefficient
alone on skewed ones. But the coefficient cannot pass 5/9 at 10 runs unless the two modes are points
(a perfect 50/50 split of two values gives 0.566), so two modes 10% apart with 1% noise went
unflagged in every sample of 10 runs; at p < 0.01 the dip test stands alone (its null is the uniform,
the least favourable unimodal case), which finds them in 95% and keeps false alarms near 1% (uniform
values, 10 runs: 1.1%; normal, lognormal, exponential and t3 values: 0.1 to 0.9%).

Values at the printing resolution are not two modes: sysbench prints latencies to 0.01 ms, so runs
near 1.05 ms land on 1.05 and 1.06 and the dip test sees two points. A side whose neighbouring
values are never more than 1.5 printed steps apart (the smallest difference between two distinct
values) has no gap for two modes to sit across, so it is not bimodal (such sides were flagged in 11%
of samples of 10 runs, now 0.1%).

A small second mode is not found by either: 10 runs near 100 and 3 near 130 (1% noise) give a dip p
near 0.9, as the dip of a 10/3 split is small, and the outlier rule called them "a second group". Such
a side is bimodal too (``separated_modes``) when its 2-means split (below) leaves at least ``MODE_MIN``
(3) runs and ``MODE_SHARE`` (5%) of them in the smaller mode and the gap between the modes (log values)
is wider than ``SEPARATION`` (6) pooled within-mode standard deviations: two tight groups far apart.
Planted (bench/sim_bimodal.py, 1,000 samples each): 10/3, 17/3 and 37/3 splits 30% apart with 1% or 2%
noise are found in 99-100% (before: 0.0-0.3%), 20% apart with 1% noise in 100%, 10% apart in 69-75%,
30% apart with 3% noise in 45-60%; 12/2 stays OUTLIERS. Unimodal samples (normal, lognormal,
exponential, t3, uniform at 10, 13, 20 and 40 runs; 2,000 each) gain at most 0.3 points of false
alarms, at 10 runs only (uniform: 1.15% -> 1.45%; the others stay under 0.7%). The split is computed
only when the widest gap it could sit at may pass (an exact bound from the side's range, _separation),
which spares 98-100% of unimodal sides.

The gap must also exceed ``EACH_MODE`` (4) standard deviations of the wider mode by itself: pooled, the sd is
ruled by the larger, tight mode, and a tail of slow runs (10% of runs 5-40% slower, continuous, 1% noise) whose few
slowest runs happened to lie together was split off as a "mode" spread over 20% of the value: 50-run sides were
BIMODAL in 20.5% of 400 seeded samples (cells of two such sides through the store: 85 and 87 of 200, median of 3
seed sets), now 6.8% (per side). Planted small modes lose at most 4 points (17/3 10% apart, 1% noise: 78 -> 74%;
10/3, 37/3, 10/4 and 3/3 splits 10-30% apart with 1-3% noise: 0-3 points).

Nor may the larger mode, of at least ``TRAIL_MIN`` (20) runs, trail into the gap (``trails_off``): its run nearest
the gap must lie within ``STRAGGLE`` (6) robust standard deviations (MAD / 0.6745, floored at ``TRAIL_FLOOR``: 1% in
log units, as the outlier rule's floor from 10 runs on; 1% of |median| on a side holding 0 or less) of its median.
Unfloored, the MAD of a tied or very tight mode made ordinary runs 1-4% off stragglers and lost real second modes
(20 runs at 1000, 19 at 1001, one at 990 beside 5 near 800; 42 runs at 0.3% noise, 2 runs 2-4% slow, 4 runs 17%
slow: 3 of 300 seeded sides BIMODAL, now 300; 45/5 20% apart with t(3) 1% noise 241 of 300, now 285, 294 with no
such rule). Such a tail still read BIMODAL in 33 and 38 of 200 cells (throughput, latency; through
cell_analysis.analyze, median of 3 seed sets), in 2 of 5 of them split above its first runs, which stayed in the
main mode as stragglers 5-10% out (up to 17 robust sds of a 1% mode; a real mode's edge lies within 6 in 99% of
planted sides): now 18 and 26 (24 unfloored); per side, of 2,000 seeded: 50 runs 188 -> 115 (floored: 185 -> 118,
other seeds), 100 runs 26 -> 10 (36 -> 16), 20 runs 81 -> 81 (a main mode under 20 runs is not judged: at 10 runs
the MAD's swings cost 10/3 splits 20% apart 1% of their finds). Planted modes lose none (of 1,000 sides each: 10/3,
17/3, 37/3 splits 10-30% apart with 1-3% noise, 10/4, 35/15, 14/6, 47/3, 60/5; of 200 cells: two modes 15% apart,
30/70, at 1% noise 200/200 at 50 and 20 runs, at 2% noise 64/57 at 20, unchanged). The rest of such tails, slow runs
left together beyond a clean gap with no straggler, are not told from a small second mode with 2-3% noise by the
runs alone.

A side holding 0 or less (error counts: runs at 0 beside runs that failed often) is split on its values, not their
logarithms, as two_means_boundary splits it: the gap rule skipped such sides, and 17 runs at 0 errors beside 3 near
50 were not BIMODAL (0 of 1,000 seeded sides of 20; now 854). Unimodal counts
holding zeros gain at most 0.7 points of BIMODAL (Poisson(1), (3), geometric, normal around 0, 6 to 50 runs); half
zeros, half Poisson(5) (two modes of a kind) 0-7.6% -> 4.9-7.6%.

Below ``MIN_RUNS`` the dip test has no power, and a side whose runs were half 30% faster (2% noise, 6 or 8 runs)
read as one median between the modes, "slower" with a ratio neither mode has. From 2 x ``MODE_MIN`` (6) runs the
gap rule alone applies there: on unimodal samples (20,000 each) it fires in 0.7 / 0.5 / 0.3 / 0.2% of normal
samples of 6 / 7 / 8 / 9 runs (lognormal, t3 and exponential 0.1-0.9%, uniform 0.7-2.1%), and finds that
planted split in 97-98%.

Tied values (counts, timings printed to a resolution) are spread evenly across their printed step before the dip
test (``spread_ties``): the dip test assumes a continuous distribution, and ties are point masses, each a little mode
of its own. Sides of plain unimodal counts were BIMODAL (no ratio) in many samples (of 400 each, 10 / 20 / 50 runs):
Poisson(2) 3.5 / 17.5 / 21%, Poisson(5) 0.3 / 15 / 28%, geometric 13 / 38 / 83%, 2% noise rounded to 1% of the value
1.5 / 17 / 28.5%; spread, each at most 0.3%. Two modes of rounded timings (1000 and 1300, 2% noise, rounded to 10) are
still found in 99.8-100%; a mixture of Poisson(1) and Poisson(10) counts, whose ties the dip test had partly taken
for its modes, in 7.5 / 14.5 / 18% (10, 22.5, 74% before).

A bimodal side is split into two modes by exact one-dimensional 2-means on log values (the split
point minimising the within-mode sum of squares); the boundary is the geometric midpoint of the
gap. When one side is bimodal, both sides are described against its boundary, so "host: 48% near
130, 52% near 238; pod: 100% near 238" can be read side by side; when both are, each side is split
at its own boundary (pooled, two sides with different modes would be split host from pod).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import diptest
import numpy as np

from podtax_analyzer.stats.medians import median

MIN_RUNS = 10
DIP_ALPHA = 0.05
DIP_STRONG = 0.01
STEPS = 1.5  # neighbouring values at most 1.5 printed steps apart: rounding, no gap
BC_THRESHOLD = 5.0 / 9.0
MODE_MIN = 3  # runs in the smaller mode for separated_modes; 2 runs stay a second group of outliers
MODE_SHARE = 0.05  # and this share of the side: 3 stray runs among thousands are not a mode
SEPARATION = 6.0  # gap between the modes, in pooled within-mode standard deviations (log values)
EACH_MODE = 4.0  # and in the wider mode's own standard deviations (a skewed tail is no mode)
STRAGGLE = 6.0  # the larger mode's run nearest the gap lies within this many of its robust sds (trails_off)
TRAIL_MIN = 20  # when it holds this many runs (fewer: their MAD is too unsteady to tell)
TRAIL_FLOOR = 0.01  # the robust sd of trails_off is at least this (log units; of |median| on a side holding 0)


@dataclass(frozen=True)
class Unimodality:
    """Outcome of the bimodality checks on one side.

    n: runs examined. dip: Hartigan's dip statistic (0 .. 0.25). dip_p: its p-value in [0, 1]
    (None below MIN_RUNS, with one value only or a NaN/inf value). bc: Sarle's bimodality
    coefficient (0 .. 1; > 5/9 suggests two modes; None below 4 runs, with zero variance or a NaN/inf
    value). bimodal: the verdict described in the module doc. separated: the gap between the modes in
    within-mode standard deviations when ``separated_modes`` found them (a small mode the dip test
    does not see), else None. boundary: two_means_boundary of the side when ``separated_modes`` found
    the modes (its split, computed once), else None (a dip-test bimodal side's is not computed here). pairs: how
    many times apart a side of 4 runs split into two pairs lies (stats/two_strays.py, set by cell_analysis), else None.
    """

    n: int
    dip: float | None
    dip_p: float | None
    bc: float | None
    bimodal: bool
    separated: float | None = None
    boundary: float | None = None
    pairs: float | None = None


@dataclass(frozen=True)
class Mode:
    """One mode of one side. label: "low" or "high" (relative to the boundary, in metric units).
    n: runs in the mode. share: n / runs on the side, in [0, 1]. median: median value of the
    mode's runs (metric unit), None when the mode is empty."""

    label: str
    n: int
    share: float
    median: float | None


def bimodality_coefficient(x: np.ndarray) -> float | None:
    """Sarle's bimodality coefficient with sample-size corrected skewness and excess kurtosis."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    if n < 4:
        return None
    d = x - x.mean()
    d2 = d * d  # products, not d**3 / d**4 (numpy's pow is ~50x slower; they differ in the last bit)
    m2 = float(np.mean(d2))
    if not 0 < m2 < np.inf:  # one value, or a NaN/inf among them
        return None
    g = float(np.mean(d2 * d)) / m2**1.5
    k = float(np.mean(d2 * d2)) / m2**2 - 3.0
    g1 = g * np.sqrt(n * (n - 1)) / (n - 2)
    g2 = ((n + 1) * k + 6.0) * (n - 1) / ((n - 2) * (n - 3))
    return float((g1**2 + 1.0) / (g2 + 3.0 * (n - 1) ** 2 / ((n - 2) * (n - 3))))


def check_unimodality(x: np.ndarray, sorted_x: np.ndarray | None = None) -> Unimodality:
    """Run the dip test and Sarle's coefficient on one side's values (any positive unit).
    sorted_x: the same values ascending, when the caller has them (the dip test then skips its sort)."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    bc = bimodality_coefficient(x)
    if n < 2 * MODE_MIN or not 0 < (np.ptp(x) if sorted_x is None else sorted_x[-1] - sorted_x[0]) < np.inf:
        # too few runs for two modes, one value, or a NaN/inf (not a measurement; its spread is not finite): refused
        return Unimodality(n, None, None, bc, False)
    asc = np.sort(x) if sorted_x is None else sorted_x
    if n < MIN_RUNS:  # too few runs for the dip test: only two tight modes far apart are found (module doc)
        gap, boundary = (None, None) if _rounding(asc) else (_separation(asc) or (None, None))
        return Unimodality(n, None, None, bc, gap is not None, gap, boundary)
    dip, p = diptest.diptest(spread_ties(asc), sort_x=False)
    if _rounding(asc):
        return Unimodality(n, float(dip), float(p), bc, False)
    if p < DIP_ALPHA and ((bc is not None and bc > BC_THRESHOLD) or p < DIP_STRONG):
        return Unimodality(n, float(dip), float(p), bc, True)
    gap, boundary = _separation(asc) or (None, None)
    return Unimodality(n, float(dip), float(p), bc, gap is not None, gap, boundary)


def separated_modes(asc: np.ndarray) -> float | None:
    """Two tight modes far apart in ``asc`` (positive values, ascending), however few runs the smaller
    holds (module doc): the gap between the 2-means modes of the log values in pooled within-mode
    standard deviations when it exceeds SEPARATION and the smaller mode has MODE_MIN runs and MODE_SHARE
    of them; else None."""
    found = _separation(asc)
    return None if found is None else found[0]


def _separation(asc: np.ndarray) -> tuple[float, float] | None:
    """separated_modes' gap and the boundary of its split (two_means_boundary's), or None."""
    positive = bool(asc[0] > 0)  # split on log values; a side holding 0 or less on its values (two_means_boundary)
    lx = np.log(asc) if positive else np.asarray(asc, dtype=float)
    n = len(lx)
    least = max(MODE_MIN, MODE_SHARE * n)
    first = math.ceil(least)  # the first high-mode index that leaves `least` runs in each mode; the last: n - first
    if first > n - first:
        return None
    # Exact bound, before the split is computed: a mode of k >= 2 runs spanning r has a within sum of squares of at
    # least r^2 / 2, so with a gap g between the modes and the side's range R the pooled sd is at least
    # (R - g) / (2 sqrt(n - 2)), and a gap wider than SEPARATION sd needs g > SEPARATION (R - g) / (2 sqrt(n - 2)).
    # When the widest gap a split may sit at fails it (with a margin for rounding), no split passes.
    widest = float(np.max(lx[first:n - first + 1] - lx[first - 1:n - first]))
    if widest * 2.0 * math.sqrt(n - 2) < 0.999 * SEPARATION * float(lx[-1] - lx[0] - widest):
        return None
    cut = _best_split(lx)
    if cut is None or min(cut, n - cut) < least:
        return None
    low, high = lx[:cut], lx[cut:]
    if low[0] == low[-1] and high[0] == high[-1]:
        return None  # two points (printed levels), no spread within the modes to compare the gap with
    sd = float(np.sqrt((np.sum((low - low.mean()) ** 2) + np.sum((high - high.mean()) ** 2)) / (n - 2)))
    gap = float(high[0] - low[-1])
    if not sd > 0 or not gap > SEPARATION * sd:  # sd 0: squares under 1e-308 (values ~1e-160 apart) underflowed
        return None
    # and wider than EACH_MODE standard deviations of the wider mode: a tail of slow runs is no second mode (doc)
    if not gap > EACH_MODE * max(float(low.std(ddof=1)), float(high.std(ddof=1))):
        return None
    if trails_off(low, high, positive):  # the larger mode's runs trail into the gap: a skewed tail, no mode (doc)
        return None
    return gap / sd, (_boundary(lx, cut) if positive else float(0.5 * (lx[cut - 1] + lx[cut])))


def trails_off(low: np.ndarray, high: np.ndarray, logs: bool = True) -> bool:
    """True when the larger of two modes (``low``, ``high``: ascending values split at a gap; log values when
    ``logs``), of at least TRAIL_MIN runs, has its run nearest the gap more than STRAGGLE robust standard deviations
    (MAD / 0.6745, floored at TRAIL_FLOOR: 1% in log units, else 1% of the mode's |median|) from its median (module
    doc): the first runs of a tail, not the edge of a mode. False when that scale is 0 (ties at 0)."""
    big, edge = (low, low[-1]) if len(low) >= len(high) else (high, high[0])
    if len(big) < TRAIL_MIN:
        return False
    mid = median(big)
    scale = max(median(np.abs(big - mid)) / 0.6745, TRAIL_FLOOR * (1.0 if logs else abs(mid)))
    return bool(scale > 0 and abs(float(edge) - mid) > STRAGGLE * scale)


def _rounding(asc: np.ndarray) -> bool:
    """True when no gap between neighbouring values of ``asc`` (ascending) is wider than STEPS printed
    steps: values on a grid of adjacent printed levels, with no gap for two modes to sit apart."""
    steps = np.diff(asc)
    steps = steps[steps > 0]
    return len(steps) == 0 or bool(steps.max() <= STEPS * steps.min())


def spread_ties(asc: np.ndarray) -> np.ndarray:
    """``asc`` (ascending, finite) with each run of k tied values spread evenly across its printed step (the smallest
    gap between distinct values), centred on the value: v + step * ((i + 0.5) / k - 0.5), i = 0 .. k - 1; still
    ascending (module doc). Unchanged without ties or with one value only."""
    if len(asc) < 2:
        return asc
    # asc is in order, so its runs of equal values are np.unique's, found without np.unique's sort (17 us a side)
    first = np.flatnonzero(np.concatenate(([True], asc[1:] != asc[:-1])))
    if len(first) < 2 or len(first) == len(asc):
        return asc
    values, counts = asc[first], np.diff(np.append(first, len(asc)))
    step = float(np.diff(values).min())
    offsets = np.concatenate([step * ((np.arange(k) + 0.5) / k - 0.5) for k in counts])
    return np.repeat(values, counts) + offsets


def two_means_boundary(x: np.ndarray) -> float | None:
    """Boundary (metric unit) of the best 2-means split of log(x); None with < 2 distinct values. A side holding 0
    (or less: no logarithm) is split on its values, at the middle of the gap: on log values its 0s made every
    boundary NaN, every run fell in one mode, and BIMODAL read "Two modes in the pod values ...: pod: 20 runs (100%)
    near 4 count" for 10 runs at 0 errors and 10 near 10."""
    v = np.sort(np.asarray(x, dtype=float))
    if len(v) and not v[0] > 0:
        best = _best_split(v)
        return None if best is None else float(0.5 * (v[best - 1] + v[best]))
    lx = np.log(v)
    best = _best_split(lx)
    return None if best is None else _boundary(lx, best)


def _boundary(lx: np.ndarray, cut: int) -> float:
    """The geometric midpoint of the gap before ``lx[cut]`` (log values, ascending), in the metric unit."""
    return float(np.exp(0.5 * (lx[cut - 1] + lx[cut])))


def _best_split(lx: np.ndarray) -> int | None:
    """Index of the first value of the high mode in the best 2-means split of ``lx`` (ascending): the
    split minimising the within-mode sum of squares; None with < 2 distinct values."""
    n = len(lx)
    if n < 2 or lx[0] == lx[-1]:
        return None
    c1 = np.cumsum(lx)[:-1]  # sums of the first s values, s = 1 .. n-1 (products, not pow: module doc's note)
    c2 = np.cumsum(lx * lx)
    s = np.arange(1.0, n)
    rest = c1[-1] + lx[-1] - c1
    sse = c2[-1] - c1 * c1 / s - rest * rest / (n - s)  # within-mode sums of squares of both modes
    sse[lx[1:] == lx[:-1]] = np.inf
    return int(np.argmin(sse)) + 1


def describe_modes(x: np.ndarray, boundary: float) -> list[Mode]:
    """Split one side's values at ``boundary`` into a low and a high mode with shares and medians."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    out = []
    for label, part in (("low", x[x < boundary]), ("high", x[x >= boundary])):
        out.append(Mode(label, len(part), len(part) / n if n else 0.0,
                        median(part) if len(part) else None))
    return out
