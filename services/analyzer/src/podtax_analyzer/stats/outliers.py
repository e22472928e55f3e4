"""Outliers by the modified z-score (Iglewicz and Hoaglin): reported, never dropped.

M_i = 0.6745 (x_i - median) / MAD, where MAD is the median absolute deviation. |M_i| > 3.5
marks an outlier (> 6 from 10 values, below). When more than half the values are identical (MAD = 0) the mean absolute
deviation times 1.2533 stands in for MAD / 0.6745 (both estimate sigma for normal data);
when that is zero too, no value is an outlier.

Small samples: the MAD of a handful of values is itself so unstable that ordinary 1% noise at
n = 5 crosses the cutoff in about one sample in five. Below ``MIN_RUNS`` (10) values the scale is
therefore floored at ``SMALL_N_FLOOR`` (5%) of the median, so only gross outliers (more than
3.5 x 5% = 17.5% from the median) are flagged there; with noise up to 5% that floor keeps false
flags below 1% of samples (planted-data check in tests/analysis/test_analysis_stats.py). From
``MIN_RUNS`` values on the floor is ``LARGE_N_FLOOR`` (1%) of the median: the MAD of 10 to 40 values
still swings so much that, with no floor, a side of 10 runs with 0.5% noise had a value flagged in
12% of samples (0.6% from its median), and 40 runs in 9%; with the floor a value must lie more than
6% from the median (the cutoff below), and such sides are flagged in none of 3,000 samples.
Noisier sides keep the plain rule. Fewer than 3 values: nothing is flagged.

From 5 to 9 positive values (``SMALL_N_WIDEN``) the runs are judged on log values by Rosner's generalized ESD: for
i = 1 .. (n - 1) // 2 the i-th farthest run from the median scores (log x - median) / max(w_n sd_i, log 1.05), sd_i
the sd of the runs left without the i farthest; the k farthest are outliers for the largest k whose score passes 3.5
(every run is scored on the scale of step k, of step 1 when k = 0, and the runs not among the k capped at 3.5);
w_n from 2.6 at 5 runs to 1.45 at 9. The MAD of so few runs is too unstable for 3.5: clean cells (6 runs a side, 10%
lognormal noise, no outlier planted) carried OUTLIERS in 32 and 38 of 200 (throughput, latency; through the store,
median of 3 seed sets; 14-22% of cells at 5 to 9 runs), a flag read as "a run misbehaved". The sd of the runs left is
steadier, and a stray does not widen its own yardstick, nor does a second one: scored against the runs but the single
farthest (beb75d8), two runs 10x off in six scored 1.18 and nothing was flagged, nor a second group of 2 runs in 8 at
a tenth of the speed (review of beb75d8). w_n puts each count's clean cells at about 4% (10% noise, 40,000 seeded
cells; 1,000 seeded values: 3.0-4.9% at 5 to 9 runs, 2.3-3.8% scoring against the runs but the farthest, 19-24% by
the MAD). On log values a run twice as slow lies as far off in throughput (half) as in latency (double); on the values
themselves the one lay 5 sds off and the other 10. Through the store (of 200, throughput and latency, median of 3):
clean cells 6 and 7 at 6 runs, 3 and 6 at 8, 11 and 7 at 5, 9 and 8 at 9; a pod run 2x slow found in 123 and 124 (145
and 195 by the MAD), 3x slow in 194 and 192 (181 and 199): a run twice as slow in 6 runs of 10% noise is near the edge
of what 6 runs can tell (8 runs: 160 and 159 of 200, 154 and 197 by the MAD). Two strays, of 1,000 seeded sides at 6
runs (by the MAD; against the runs but the farthest found none): two runs 10x off at 10% noise 1000 (1000), two at
double at 2% noise 1000 (1000), one at double and one at half 1000 (1000), at 10% noise 465 (669) and 535 (470); a
second group of 2 runs 30% slow (2% noise) 996 (965). Clean sides of 10% noise holding a second group: 6-8 of 2,000
at 5 to 9 runs (8-13 by the MAD).
With 1-5% noise the 5% floor rules as before (a run 25% off at 2% noise, 6 runs: 278 of 300 found, 297 before).
Fewer than 5 runs leave no spread to judge by: at 3 or 4 positive values only a run at least twice or half the median
of the others, and 3 times their range from it, is an outlier (stats/few_runs.py; the cell carries a note that the
side is too small to check otherwise, naming it); 2 values are never judged; a side of 3 or 4 holding 0 or less
keeps the rule above (no logarithm).

From ``MIN_RUNS`` values on, the cutoff is ``LARGE_N_CUTOFF`` (6), not 3.5: the MAD of 10 to 40 values swings so
much that at 3.5, clean cells (two sides of 2% noise, no outlier planted) were flagged in 19% of 1,000 seeded cells
at 10 runs a side (5% noise: 22.5%; 20 runs: 19% and 20.5%), a flag the user can do nothing about. At 6 they are
flagged in 0.4% (5% noise: 2.9%; 20 runs: 0.5% and 0.6%; 40 runs: 0% and 0.1%), and a run 10 standard deviations off
is still found in 90-99% of sides (20% off at 2% noise; 50% off at 5%: 89% at 10 runs), a run 10x off in all.
Tukey's far-out fences (3 IQR) did worse at both: 9.6% of clean cells at 10 runs, 2% noise, and 54% of runs 10% off
found against 31% (tests/analysis/test_outlier_cutoff.py checks 100 cells of each). Below ``MIN_RUNS`` the 5%
floor already keeps false flags under 1.3% at 3.5.

On a side with two modes (``modified_z_within``) each mode is scored among its own values, with the floor of its own
count, and a value is judged by the cutoff of that same count (``cutoffs_within``): a mode of 6 runs keeps 3.5 over
its 5% floor, as a side of 6 runs does (with the cutoff of the 12-run side, 6 over 5%, a run had to lie 30% off).

A second group, not noise (``is_second_group``): outliers of one side, at least ``GROUP_MIN`` (2), all on
the same side of that side's median and agreeing with each other: their range is at most ``GROUP_SPREAD``
(a quarter) of the distance from their own median to the side's. Two pod runs 30% slower within 1% of each
other are a second mode that the median hides (1 run in 6 of the work is slower), not two stray values; a
median-based "no detectable difference" is then not claimed (stats/verdict.py). A second group is looked for among
the values beyond ``GROUP_CUTOFF`` (3.5) whatever the count, then beyond the side's cutoffs (cell_analysis): with the
cutoff of 6 alone, 2 pod runs 15% slower within 0.5% (2% noise, 10 runs a side) were found in 439 of 1,000 seeded
cells (816 at 3.5 alone, 872 both ways; 20 runs: 657, 856, 958; 5% noise, 30% slower: 246, 649, 690). Each side is
searched by itself, while the other has no outlier beyond its own cutoff: pooled, one stray value of the other side
beyond 3.5 (no outlier at 6) hid the group, found then in 872 of those 1,000 cells, 909 per side (20 runs 958 -> 988;
5% noise, 30% slower 690 -> 731, 20 runs 901 -> 956). The group rule, not the cutoff, keeps noise out: clean cells
held a second group in 6 to 18 of 1,000 (3 to 17 pooled).

A real outlier hides no group, on either side (``second_group_of``): each side is searched whatever the other holds,
and a side's own outliers (beyond its cutoff) may be left out of its group, across its median from it or farther out,
unless one lies within the group's spread of it (then it belongs with the group: three runs trailing off are no group
of two); the runs left out are still reported beside the group. Searched only while the other side had none, and
spoiled by one of its own, 2 pod runs 15% slower (2% noise) beside one host run 25% off were found in 12 of 1,000
seeded cells at 10 runs, 0 at 20: now 917 and 987 (5% noise, 30% slower: 529 -> 747, 700 -> 955); beside a pod run
25% off, 0 -> 600-807 at 10 runs, 963-988 at 20.
Leaving out only the side's runs beyond twice its cutoff (6a5a29d) cut the clean cells of 10 runs at 5% noise holding a
group from 113 of 5,000 to 93, but it called 2 of 20 pod runs 15% slower beside a pod run 25% off "no detectable
difference" in 631 (+25%) and 668 (-25%) of 1,000 seeded cells, 12 and 9 now (10 runs: 232 and 0, now 34 and 0), to
save 3 and 2 correct "no detectable difference" verdicts of 5,000 clean cells at 5% noise (10 and 20 runs), 1 and 0 at
2%: a wrong verdict is worse than none. Clean cells holding a group, of 5,000 (10 and 20 runs a side): 1% noise 0 and
1, 2% 53 and 79, 5% 113 and 89.

A tied side (MAD 0) is searched with ``group_z``: the mean absolute deviation standing in for the MAD leaves out a run
alone on its side of the median and farthest from it, which alone inflated it: 7 pod runs at 1000, 2 at 500 and 1 at
2000 scored the two -2.0 and the cell was called "no detectable difference" (review hR7). Scoring such a side against
the 1% floor alone instead found errors counts 1 and 2 a "second group" and raised clean cells rounded to 5% steps
holding one from 158 to 212 of 500; leaving out the single farthest run whatever its side raised clean counts (1-3)
from 67 to 137 of 500. With ``group_z`` clean tied cells are unchanged (of 500, 10 and 20 runs a side: 5% steps 158
and 107, 1% steps 0 and 0, counts 67 and 150), continuous ones are by construction (MAD > 0); 2 of 10 pod runs at half
speed beside one at double (5% steps) were called "no detectable difference" in 53 of 300 seeded cells, 93 before.

A group lies more than a step of the scale from the rest of its side (``step_of``: the smallest gap between the
side's other runs, its outliers aside, and the other side's; at least 1 when all are whole numbers). On a discrete
scale the next value is the tail of the runs, not a second group: ties pass the group's spread test by themselves, and
on a tied side a value held by a few runs scores beyond 3.5 one step away (8 runs at 1 error, 2 at 2). Clean cells
holding a group, of 500 seeded (median of 3 seeds; both sides drawn alike), before and after: counts 1-3 (60/30/10%)
at 10 and 20 runs a side 82 and 157, now 8 and 0; (80/15/5%) at 10, 20, 30 runs 171, 403, 469, now 14, 16, 3;
Poisson(2) counts 0-5, 20 runs, 17 -> 5; 2% noise rounded to 5% steps, 10 and 20 runs, 141 and 126 -> 13 and 1;
1% steps 5 -> 4; continuous 2% noise unchanged (4 and 9). Planted groups found as such rose: 2 of 10 runs at 500
among 5% steps of 1000, 390 -> 454; 2 runs at 6 among counts 1-3 (80/15/5%), 20 runs, 196 -> 441 (a group of the
next value had been found instead); 2 runs 15% slower (2% noise) 451 and 491 at 10 and 20 runs, unchanged.

The step is taken within one side at a time (``scale_step``), from neighbouring values both held twice or a lone
one at most STEP_SHARE (10%) of the side's median away: a gap between the two sides is the difference measured, and a
wide gap to a lone run the stray itself; taken for the step they hid real groups (review r2: 17 host runs at 1000 and
3 at 500 beside one pod run at 1600 read 'equivalent'). Clean cells with a group, of 500 (median of seeds 7-9): counts
6 and 1 (10 and 20 runs), skewed counts 12, 5% steps 9 and 1; planted groups found 436 (counts at 6) and 457 (5% steps
at half).

An outlier, too, lies more than a step of the scale from its side's other runs (``off_the_scale``, the step of
``step_of``): on a tied side of counts the mean absolute deviation standing in for the MAD is so small that the next
count scored beyond 6 (19 runs at 1 error, 1 at 2: z 16), the tail of the runs, not a stray one. A run two steps
or more from the rest still is one (19 runs at 1, 1 at 3). Clean cells carrying OUTLIERS, of 500 seeded (median of 3
seeds), before and after, at 10 and 20 runs a side: counts 1-3 (60/30/10%) 45 and 30, now 15 and 0; (80/15/5%) 238
and 320, now 78 and 28 (a lone 3 beside nine 1s); Poisson(2) 27 and 30, now 25 and 22; 5% steps 13 and 3, 1%
steps 7 and 1, continuous 2% noise 8 and 9, unchanged. A planted run found as an outlier: 50% off among 5% steps
435 and 450, 30% off (2% noise) 497 and 496, 10 errors among counts 1-3 unchanged; 3 times the median among counts
(median 1: a 3, a value the clean runs take) 113 and 170, now 104 and 17: one step beyond a 2 it is their tail.
"""

from __future__ import annotations

import numpy as np

from podtax_analyzer.stats.few_runs import few_runs_z, few_to_check
from podtax_analyzer.stats.medians import median

CUTOFF = 3.5  # below MIN_RUNS values (the SMALL_N_FLOOR rules there)
LARGE_N_CUTOFF = 6.0  # from MIN_RUNS values on (module doc)
MIN_RUNS = 10
SMALL_N_FLOOR = 0.05
LARGE_N_FLOOR = 0.01
# 5 to 9 positive values: deviations over this many standard deviations of the other runs, times 3.5 (module doc)
SMALL_N_WIDEN = {5: 2.6, 6: 1.9, 7: 1.75, 8: 1.6, 9: 1.45}
SMALL_N_LOG_FLOOR = float(np.log1p(SMALL_N_FLOOR))  # and floored at this (log units: 5% of the median)
GROUP_MIN = 2
GROUP_CUTOFF = CUTOFF  # a side's second group is looked for beyond 3.5 at any count (module doc)
GROUP_SPREAD = 0.25


def modified_z(x: np.ndarray) -> np.ndarray:
    """Modified z-scores of x (dimensionless, same shape; zeros when the spread is zero; +-inf for a
    NaN/inf value, the others scored without it); the scale is
    floored at a share of the median (module doc)."""
    x = np.asarray(x, dtype=float)
    if len(x) == 0:
        return np.zeros(0)
    finite = np.isfinite(x)
    if not finite.all():  # a NaN/inf is no measurement: reported (z = +-inf), the others scored among themselves
        z = np.where(x == -np.inf, -np.inf, np.inf)
        z[finite] = modified_z(x[finite])
        return z
    if len(x) in SMALL_N_WIDEN and bool((x > 0).all()):
        return _small_side_z(np.log(x))
    if few_to_check(x):  # 3 or 4 runs: only a run noise cannot explain (stats/few_runs.py)
        return few_runs_z(x, CUTOFF)
    med = median(x)
    dev = np.abs(x - med)
    mad = median(dev)
    scale = mad / 0.6745 if mad > 0 else 1.253314 * dev.mean()
    scale = max(scale, (SMALL_N_FLOOR if len(x) < MIN_RUNS else LARGE_N_FLOOR) * abs(float(med)))
    if scale > 0:
        return (x - med) / scale
    return np.zeros(len(x))


def mad_scored(x: np.ndarray) -> bool:
    """True when modified_z scores the side ``x`` by its MAD, a modified z-score: not 3 to MIN_RUNS - 1 measured
    values all positive, which are scored on log values (generalized ESD from 5, stats/few_runs.py at 3 or 4)."""
    x = np.asarray(x, dtype=float)
    f = x[np.isfinite(x)]
    return not (len(f) in SMALL_N_WIDEN or few_to_check(f))


def _small_side_z(lx: np.ndarray) -> np.ndarray:
    """modified_z of a side of 5 to MIN_RUNS - 1 positive values, given as logs ``lx`` (module doc): Rosner's
    generalized ESD. For i = 1 .. (n - 1) // 2 the i-th farthest run from the median is scored against SMALL_N_WIDEN
    (of the count) standard deviations of the runs left without the i farthest, the scale floored at
    SMALL_N_LOG_FLOOR; the k farthest are outliers for the largest k whose score passes CUTOFF. Every run is then
    scored against the scale of step k (of step 1 when k = 0), a run not among the k capped at CUTOFF."""
    n = len(lx)
    med = median(lx)
    dev = lx - med
    order = np.argsort(-np.abs(dev), kind="stable")
    scales = [max(SMALL_N_WIDEN[n] * float(np.std(np.delete(lx, order[:i]), ddof=1)), SMALL_N_LOG_FLOOR)
              for i in range(1, (n - 1) // 2 + 1)]
    k = max((i for i, s in enumerate(scales, 1) if abs(float(dev[order[i - 1]])) / s > CUTOFF), default=0)
    z = dev / scales[max(k, 1) - 1]
    rest = order[k:]
    z[rest] = np.clip(z[rest], -CUTOFF, CUTOFF)
    return z


def group_z(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """The scores a side's second group is looked for with: ``z``, but on a side whose MAD is 0 (ties: quantized
    timings, counts) the mean absolute deviation standing in for it leaves out a run alone on its side of the median
    and at least as far from it as any other: that run alone inflated it and hid a pair across the median (7 runs tied
    at 1000, two at 500 and one at 2000 scored the two -2.0). Counts 1, 1, 1, 2, 2, 3 keep every run: the 3 is not
    alone above the median."""
    x = np.asarray(x, dtype=float)
    if len(x) < 3 or not np.isfinite(x).all():
        return z
    med = median(x)
    dev = np.abs(x - med)
    if median(dev) > 0:
        return z
    for way in (x > med, x < med):
        if way.sum() == 1 and dev[way][0] >= dev.max():
            scale = 1.253314 * float(dev[~way].mean())
            scale = max(scale, (SMALL_N_FLOOR if len(x) < MIN_RUNS else LARGE_N_FLOOR) * abs(float(med)))
            return (x - med) / scale if scale > 0 else z
    return z


def modified_z_within(x: np.ndarray, boundary: float | None = None) -> np.ndarray:
    """Modified z-scores computed within each mode when a mode ``boundary`` is given (values below
    it and the rest scored separately), so a second mode is not mistaken for outliers."""
    x = np.asarray(x, dtype=float)
    if boundary is None:
        return modified_z(x)
    z = np.full(len(x), np.inf)  # a NaN is in neither mode: reported
    for mask in (x < boundary, x >= boundary):
        z[mask] = modified_z(x[mask])
    return z


def cutoff_for(n: int) -> float:
    """The |modified z-score| a side of ``n`` values must exceed to be an outlier (module doc)."""
    return CUTOFF if n < MIN_RUNS else LARGE_N_CUTOFF


def cutoffs_within(x: np.ndarray, boundary: float | None = None) -> np.ndarray:
    """Each value's cutoff: cutoff_for the count of finite values it was scored among by modified_z_within (its
    mode's when ``boundary`` is given), the count whose floor scored it (module doc)."""
    x = np.asarray(x, dtype=float)
    masks = [np.ones(len(x), dtype=bool)] if boundary is None else [x < boundary, x >= boundary]
    out = np.full(len(x), CUTOFF)  # a NaN is in neither mode (z = inf)
    for mask in masks:
        out[mask] = cutoff_for(int((mask & np.isfinite(x)).sum()))
    return out


def outlier_indices(x: np.ndarray, cutoff: float | None = None, boundary: float | None = None) -> np.ndarray:
    """Indices (into x) of values whose |modified z-score| exceeds ``cutoff`` (default: cutoffs_within(x,
    boundary)); scored within each mode when ``boundary`` is given. Fewer than 3 values: none."""
    if len(x) < 3:
        return np.zeros(0, dtype=np.int64)
    return outliers_of(modified_z_within(x, boundary), cutoffs_within(x, boundary) if cutoff is None else cutoff)


def outliers_of(z: np.ndarray, cutoff: float | np.ndarray | None = None) -> np.ndarray:
    """Indices of the modified z-scores ``z`` (from modified_z_within, one per value of a side) beyond ``cutoff``
    (one for all, or each value's from cutoffs_within; default: cutoff_for(len(z))); none below 3 values."""
    if len(z) < 3:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.abs(z) > (cutoff_for(len(z)) if cutoff is None else cutoff))


def is_second_group(outliers: np.ndarray, side_median: float) -> bool:
    """True when a side's ``outliers`` (values) form a second group rather than noise (module doc): at
    least GROUP_MIN of them, all above or all below ``side_median``, with a range of at most GROUP_SPREAD
    times the distance from their median to ``side_median``."""
    x = np.asarray(outliers, dtype=float)
    if len(x) < GROUP_MIN or not np.isfinite(x).all() or not np.isfinite(side_median):
        return False
    if not ((x > side_median).all() or (x < side_median).all()):
        return False
    return float(np.ptp(x)) <= GROUP_SPREAD * abs(median(x) - side_median)


def second_group_of(x: np.ndarray, z: np.ndarray, cutoff: float | np.ndarray, apart: np.ndarray,
                    other: np.ndarray | None = None) -> np.ndarray:
    """Indices of a second group (is_second_group) among the values of ``x`` whose modified z-scores ``z`` lie beyond
    ``cutoff``, or none. A value beyond it that is an outlier by itself (``apart``: a mask of the values beyond their
    own cutoffs) may be left out of the group, wherever it lies: one run far off does not hide a group beside it
    (module doc). The group lies more than a step (``step_of`` its side's other runs, but ``apart``, and the
    ``other`` side's values) from its side's other runs: on a discrete scale the next value is no group. The group is
    the most runs in a row on one side of the median, by distance from it."""
    x = np.asarray(x, dtype=float)
    other = np.zeros(0) if other is None else np.asarray(other, dtype=float)
    beyond = outliers_of(z, cutoff)
    best = beyond[:0]
    if len(beyond) < GROUP_MIN:
        return best
    mid = float(np.median(x))  # NaN on a side holding a NaN: no group there (outlier_flags.second_group)
    for way in (x[beyond] < mid, x[beyond] > mid):
        if not apart[beyond[~way]].all():  # a run beyond the cutoff on the other side, no outlier by itself
            continue
        near = beyond[way][np.argsort(np.abs(x[beyond[way]] - mid), kind="stable")]
        for size in range(len(near), max(GROUP_MIN, len(best) + 1) - 1, -1):
            for start in range(len(near) - size + 1):
                group, left = near[start:start + size], np.r_[near[:start], near[start + size:]]
                if apart[left].all() and is_second_group(x[group], mid) and _apart_from(x[left], x[group], mid) \
                        and _beyond_step(x, group, apart, other):
                    best = group
                    break
            if len(best) == size:
                break
    return np.sort(best)


def _apart_from(left: np.ndarray, group: np.ndarray, side_median: float) -> bool:
    """True when no value ``left`` out of a second group on its side of the median lies within the group's spread
    (GROUP_SPREAD of its distance from ``side_median``) of it: a run that close belongs with the group, not apart."""
    reach = GROUP_SPREAD * abs(median(group) - side_median)
    return not len(left) or float(np.abs(left[:, None] - group[None, :]).min()) > reach


STEP_SHARE = 0.1  # a gap to a lone run this share of the median or less may be the scale's step (scale_step)


def step_of(values: np.ndarray) -> float:
    """The step of the scale of ``values`` (their unit, >= 0): the smallest gap between two distinct finite ones
    (timings rounded to 5% of 1000: 50), and at least 1 when all are whole numbers (counts: 1 even if one value only
    occurs); 0.0 for fewer than two distinct values that are not all whole."""
    v = np.unique(np.asarray(values, dtype=float)[np.isfinite(values)])
    gap = float(np.diff(v).min()) if len(v) > 1 else 0.0
    return max(gap, 1.0) if len(v) and bool((v == np.round(v)).all()) else gap


def scale_step(rest: np.ndarray, other: np.ndarray) -> float:
    """The step of the scale a cell's runs were measured on (their unit, >= 0), for the runs ``rest`` of one side and
    the ``other`` side: the smallest gap between two neighbouring values of one side that is a resolution, not a
    stray: both values held at least twice (on the ``other`` side, one of three values or more), or the gap at most
    STEP_SHARE of the side's median (5% steps of 1000: 50). An other side of two values only, far apart (18 runs at
    1000 and 2 at 1600), holds two groups, not a scale: its gap, taken for the step, hid this side's own group (4 of
    20 runs at 500), and a cell holding a group on each side was called equivalent.
    A gap between the two sides is the difference being measured, and a wide gap to a lone run may be the stray
    itself: either taken for the step hid a real group (review r2: a pod run at 1600 beside 1000s made 500 'one step'
    from 1000, and the cell 'equivalent'). At least the printed step of every value (printed_step: 1 when all are
    whole, 0.01 for figures printed to 2 decimals); 0.0 when no gap qualifies and none is found."""
    steps = []
    for side, own in ((rest, True), (other, False)):
        v = np.asarray(side, dtype=float)
        v = v[np.isfinite(v)]
        values, counts = np.unique(v, return_counts=True)
        if len(values) > 1:
            # the other side's two values only, held twice, are two groups, not a resolution (docstring)
            gaps, twice = np.diff(values), (counts[:-1] >= 2) & (counts[1:] >= 2) & (own or len(values) > 2)
            fine = twice | (gaps <= STEP_SHARE * abs(float(np.median(v))))
            steps += gaps[fine].tolist()
    gap = min(steps) if steps else 0.0
    return max(gap, printed_step(np.concatenate([np.ravel(rest), np.ravel(other)])))


PRINTED_DIGITS = 6  # decimals a printed figure is looked for in (printed_step)


def printed_step(values: np.ndarray) -> float:
    """The step the finite ``values`` were printed to: 10^-k for the fewest decimals k (0 .. PRINTED_DIGITS) that
    hold every one of them (whole numbers: 1; sysbench's latencies in ms to 2 decimals: 0.01), else 0.0. Values
    one printed step apart may be one value rounded two ways: on latencies of 0.05 and 0.06 ms two pod runs at 0.05
    among 0.06s were 'a second group 16.7% faster', and one host run at 0.06 among 0.05s 'far from its side's
    median', in 15 of 20 seeded cells."""
    v = np.asarray(values, dtype=float)
    v = np.abs(v[np.isfinite(v)])
    if not len(v):
        return 0.0
    for k in range(PRINTED_DIGITS + 1):
        scaled = v * 10.0**k
        if bool(np.all(np.abs(scaled - np.round(scaled)) <= 1e-6 + 1e-15 * scaled)):  # a millionth of a step
            return 10.0**-k
    return 0.0


def _beyond_step(x: np.ndarray, group: np.ndarray, apart: np.ndarray, other: np.ndarray) -> bool:
    """True when the runs ``group`` (indices into ``x``) lie more than a step from every other run of ``x`` but the
    ``apart`` ones, the step (scale_step) taken from those runs and the ``other`` side's values (module doc): on a
    discrete scale the next value up or down is the tail of the runs, not a second group. A gap within 1e-9 of the
    step is the step (rounded floats)."""
    rest = np.ones(len(x), dtype=bool)
    rest[group] = False
    rest &= ~apart & np.isfinite(x)
    if not rest.any():
        return True
    gap = float(np.abs(x[rest][:, None] - x[group][None, :]).min())
    return gap > scale_step(x[rest], other) * (1 + 1e-9)


def off_the_scale(x: np.ndarray, found: np.ndarray, other: np.ndarray) -> np.ndarray:
    """The outliers ``found`` (indices into the side ``x``, ascending) that lie more than a step of the scale from
    every other run of ``x`` not found (scale_step of those runs and the ``other`` side, in x's unit; a gap within
    1e-9 of the step is the step): on a tied side the next count is the tail of the runs, not an outlier (module
    doc). All of ``found`` when no other finite run is left; a NaN/inf stays."""
    x = np.asarray(x, dtype=float)
    rest = np.isfinite(x)
    rest[found] = False
    if not rest.any() or not len(found):
        return found
    step = scale_step(x[rest], other) * (1 + 1e-9)
    gap = np.abs(x[found][:, None] - x[rest][None, :]).min(axis=1)
    return found[~(gap <= step)]
