"""The candidate's effect when a cell's two sides ran one after the other, net of a steady change over its runs.

When every baseline run started before every candidate run (or mostly: sequence.py), a machine that warms up,
cools down or slowly fills its disk over the campaign moves the later side alone, and the ratio of medians reads
that change as the candidate's effect. Each side then also drifts within itself, but 10 runs a side rarely show
it: hP's planted campaigns (10 host runs then 10 pod runs, 2% noise, the machine 10% slower from the first run to
the last, no pod effect) read "pod slower" in 19 of 30, DRIFT flagged in 8.

``adjusted`` fits log(value) = a + b x time rank + c x candidate by least squares over the cell's runs (time rank:
a run's place among both sides' runs by start) and gives exp(c) with its 95% interval (Student t, n - 3 degrees of
freedom): the candidate's effect with a linear trend over the runs taken out. The runs the cell flags OUTLIERS
are left out of the fit first (``without``): least squares follows a single slow run. Interleaved sides leave c as
precise as the ratio itself; sides in two blocks leave c only as precise as the trend within them allows, so a
verdict the blocks owe to a trend has no interval beyond the band. A step between the blocks (another day, another
kernel) is no trend: nothing in the values tells it from the candidate's effect, which sequence.note says in words.
When the verdict stands, the ratio of medians still holds the trend's share of the gap between the blocks (the same
campaigns with the pod truly 10% slower: "slower" in 21 of 30, the interval of the ratio of medians covering 0.90 in
none, the net interval in all 21), so sequence.trend_check says the net ratio too, as a cross-check of the verdict
only: with a warm-up at the start of each block (no steady trend) the net interval covered the truth in 10 of 26.
``trend_p`` is the two-sided p of the trend's slope b (Student t).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

MIN_SIDE = 3  # runs a side needs (n - 3 degrees of freedom over both: at least 3)
LEVEL = 0.95


class Fit(NamedTuple):
    """The candidate/baseline ratio net of the trend, its 95% interval, and the trend's two-sided p."""

    ratio: float
    low: float
    high: float
    trend_p: float


def without(values: np.ndarray, ranks: np.ndarray, drop: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """``values`` and their time ``ranks`` without one run per value in ``drop`` (a side's flagged outliers: least
    squares follows a single slow run, and one run at half speed among 10 a side withheld a real 10% effect in 22
    of 30 of r3's planted campaigns); unchanged when their lengths differ (adjusted then declines)."""
    if len(values) != len(ranks) or not drop:
        return values, ranks
    keep = np.ones(len(values), dtype=bool)
    for v in drop:
        hit = np.flatnonzero(keep & (values == v))
        if len(hit):
            keep[hit[0]] = False
    return values[keep], ranks[keep]


def adjusted(base: np.ndarray, base_rank: np.ndarray, cand: np.ndarray, cand_rank: np.ndarray) -> Fit | None:
    """The candidate/baseline ratio net of a linear trend in time rank (module doc), from each
    side's values and their runs' time ranks; None with fewer than MIN_SIDE runs a side, a value that is not
    positive and finite, or time ranks that cannot tell the trend from the sides."""
    if min(len(base), len(cand)) < MIN_SIDE or len(base) != len(base_rank) or len(cand) != len(cand_rank):
        return None
    y = np.concatenate([base, cand]).astype(float)
    if not (np.all(np.isfinite(y)) and np.all(y > 0)):
        return None
    t = np.concatenate([base_rank, cand_rank]).astype(float)
    x = np.column_stack([np.ones(len(y)), t, np.r_[np.zeros(len(base)), np.ones(len(cand))]])
    coef, _, rank, _ = np.linalg.lstsq(x, np.log(y), rcond=None)
    dof = len(y) - 3
    if rank < 3:
        return None
    resid = np.log(y) - x @ coef
    s2 = float(resid @ resid) / dof
    cov = s2 * np.linalg.inv(x.T @ x)
    se = math.sqrt(float(cov[2, 2]))
    from scipy.stats import t as student  # lazy: ~65 MB an analyzer that only stores never loads

    q = float(student.ppf(0.5 + LEVEL / 2, dof))
    c = float(coef[2])
    slope_se = math.sqrt(float(cov[1, 1]))
    trend_p = 2.0 * float(student.sf(abs(float(coef[1])) / slope_se, dof)) if slope_se > 0 else float(coef[1] == 0)
    return Fit(math.exp(c), math.exp(c - q * se), math.exp(c + q * se), trend_p)
