"""Two modes in one side's values: detection (Hartigan's dip test AND Sarle's coefficient) and split.

A side is BIMODAL when it has at least ``MIN_RUNS`` runs, Hartigan's dip test rejects
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

A bimodal side is split into two modes by exact one-dimensional 2-means on log values (the split
point minimising the within-mode sum of squares); the boundary is the geometric midpoint of the
gap. When one side is bimodal, both sides are described against its boundary, so "host: 48% near
130, 52% near 238; pod: 100% near 238" can be read side by side; when both are, each side is split
at its own boundary (pooled, two sides with different modes would be split host from pod).
"""

from __future__ import annotations

from dataclasses import dataclass

import diptest
import numpy as np

from podtax_analyzer.stats.medians import median

MIN_RUNS = 10
DIP_ALPHA = 0.05
DIP_STRONG = 0.01
STEPS = 1.5  # neighbouring values at most 1.5 printed steps apart: rounding, no gap
BC_THRESHOLD = 5.0 / 9.0


@dataclass(frozen=True)
class Unimodality:
    """Outcome of the bimodality checks on one side.

    n: runs examined. dip: Hartigan's dip statistic (0 .. 0.25). dip_p: its p-value in [0, 1]
    (None below MIN_RUNS, with one value only or a NaN/inf value). bc: Sarle's bimodality
    coefficient (0 .. 1; > 5/9 suggests two modes; None below 4 runs, with zero variance or a NaN/inf
    value). bimodal: the verdict described in the module doc.
    """

    n: int
    dip: float | None
    dip_p: float | None
    bc: float | None
    bimodal: bool


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
    if n < MIN_RUNS or not 0 < (np.ptp(x) if sorted_x is None else sorted_x[-1] - sorted_x[0]) < np.inf:
        # too few runs, one value, or a NaN/inf (not a measurement; its spread is not finite): refused
        return Unimodality(n, None, None, bc, False)
    asc = np.sort(x) if sorted_x is None else sorted_x
    dip, p = diptest.diptest(asc, sort_x=False)
    bimodal = bool(p < DIP_ALPHA and ((bc is not None and bc > BC_THRESHOLD) or p < DIP_STRONG)
                   and not _rounding(asc))
    return Unimodality(n, float(dip), float(p), bc, bimodal)


def _rounding(asc: np.ndarray) -> bool:
    """True when no gap between neighbouring values of ``asc`` (ascending) is wider than STEPS printed
    steps: values on a grid of adjacent printed levels, with no gap for two modes to sit apart."""
    steps = np.diff(asc)
    steps = steps[steps > 0]
    return len(steps) == 0 or bool(steps.max() <= STEPS * steps.min())


def two_means_boundary(x: np.ndarray) -> float | None:
    """Boundary (metric unit) of the best 2-means split of log(x); None with < 2 distinct values."""
    lx = np.sort(np.log(np.asarray(x, dtype=float)))
    n = len(lx)
    if n < 2 or lx[0] == lx[-1]:
        return None
    c1 = np.cumsum(lx)
    c2 = np.cumsum(lx**2)
    s = np.arange(1, n)
    left = c2[s - 1] - c1[s - 1] ** 2 / s
    right = (c2[-1] - c2[s - 1]) - (c1[-1] - c1[s - 1]) ** 2 / (n - s)
    sse = left + right
    sse[lx[s] == lx[s - 1]] = np.inf
    best = int(s[np.argmin(sse)])
    return float(np.exp(0.5 * (lx[best - 1] + lx[best])))


def describe_modes(x: np.ndarray, boundary: float) -> list[Mode]:
    """Split one side's values at ``boundary`` into a low and a high mode with shares and medians."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    out = []
    for label, part in (("low", x[x < boundary]), ("high", x[x >= boundary])):
        out.append(Mode(label, len(part), len(part) / n if n else 0.0,
                        median(part) if len(part) else None))
    return out
