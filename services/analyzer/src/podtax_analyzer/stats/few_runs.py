"""Outliers on sides of 3 or 4 runs (``FEW_RUNS``): only a run so far off that noise cannot explain it.

With 3 or 4 runs no rule tells a stray run from noise reliably: there is no spread left to judge a run by. The MAD
rule (stats/outliers.py, 3.5 over a 5% floor) flagged a run in clean cells (two sides of 10% lognormal noise, nothing
planted) in 35 and 41 of 200 at 3 runs a side (throughput, latency; through cell_analysis.analyze, median of 3 seed
sets), 30 and 25 at 4: a flag that says a run misbehaved, said of noise. So at 3 or 4 positive values a run is an
outlier only when, on log values, it lies farther from the median of the side's other runs than both ``FAR`` (a
factor 2: twice or half their median) and ``SPREAD`` (3) times their range (a run no wider spread of the others
explains). Of 20,000 seeded sides (3 / 4 runs), clean sides are flagged at 5% noise in 0 / 0%, 10% in 0 / 0%, 20% in
0.8 / 0.4%, 30% in 8.9 / 3.6%; a run 3x off (10% noise) is found in 99 / 97%, 10x off in 100 / 100%, 2x off in
47 / 43% (twice the median is the edge by construction). Through analyze, of 200 cells (throughput / latency, median
of 3 seed sets; by the MAD before): clean cells at 10% noise 0 / 0 at 3 and at 4 runs a side (35 / 41 and 30 / 25), at
20% noise 5 / 3 and 2 / 3 (67 / 82, 63 / 53), at 30% 32 / 35 and 13 / 14 (100 / 94, 71 / 66); a pod run 3x slow found
in 197 / 196 at 3 runs (115 / 191) and 194 / 194 at 4 (157 / 200), 10x slow in 200 / 200 (150 / 200, 185 / 200);
2x slow in 97 / 97 (89 / 164) and 85 / 86 (108 / 184): a latency run at double among 3 or 4 is no longer told from
noise, as a throughput run at half was not before.

Short of that a side of 3 or 4 runs is not checked, and the cell says so in a note (``note``, cell_analysis) rather
than in OUTLIERS, as benchstat warns "need >= N samples to detect outliers". The note names each such side and its
runs ("pod side: 3 runs"), counts the measured runs (a side of 4 or 5 with a NaN holds 3 or 4), and covers a side
holding 0 or less too, which the MAD rule scores with a spread 3 or 4 runs cannot steady ([0, 0, 0, 1000] flags
nothing). Two strays of 4 runs hide each other here (the other widens the range): stats/two_strays.py judges two runs
against the other two by the same rule (cell_analysis), and a side that splits into two pairs so is BIMODAL, neither
pair an outlier. A side holding 0 or less keeps the MAD rule (no logarithm). A run exactly at the bound (twice the
others' median, they tied) is within it, whatever the float rounding of its logarithm (``beyond``): 1000 beside 2000
was flagged and 1 beside 2, 3 beside 6 or 0.1 beside 0.2 were not.
"""

from __future__ import annotations

import math

import numpy as np

FEW_RUNS = (3, 4)
FAR = math.log(2.0)  # a run more than twice or under half the median of the others (log units)
SPREAD = 3.0  # and this many times their range from it
NOTE = "Too few runs to check for outliers"  # how note() starts
REL_TOL = 1e-9  # a deviation this close to its bound (relative) is at it: float rounding decides nothing (beyond)


def few_to_check(x: np.ndarray) -> bool:
    """True when the side ``x`` is scored by few_runs_z: 3 or 4 values, all positive and finite."""
    x = np.asarray(x, dtype=float)
    return len(x) in FEW_RUNS and bool(np.isfinite(x).all() and (x > 0).all())


def few_runs_z(x: np.ndarray, cutoff: float) -> np.ndarray:
    """Scores of a side of 3 or 4 positive values (few_to_check) whose |z| exceeds ``cutoff`` exactly for the runs
    lying farther from the median of the others than FAR and SPREAD times their range (log values, module doc).
    Signed: a run above the others scores positive."""
    lx = np.log(np.asarray(x, dtype=float))
    z = np.zeros(len(lx))
    for i in range(len(lx)):
        others = np.delete(lx, i)
        dev = float(lx[i] - np.median(others))
        bound = max(FAR, SPREAD * float(np.ptp(others)))
        r = dev / bound  # beyond cutoff when beyond the bound
        z[i] = cutoff * (r if beyond(dev, bound) or abs(r) < 1 else math.copysign(1.0, r))  # at it: within
    return z


def beyond(dev: float, bound: float) -> bool:
    """True when the deviation ``dev`` (log units) lies beyond ``bound``, farther than rounding can put a value
    exactly at it: a run exactly twice the others' median (1000 beside 2000, 1 beside 2, 0.1 beside 0.2) is at
    FAR whatever the float rounding of its logarithm, so within."""
    return abs(dev) > bound and not math.isclose(abs(dev), bound, rel_tol=REL_TOL)


def unchecked(x: np.ndarray, found: np.ndarray) -> bool:
    """True when the side ``x`` holds 3 or 4 measured (finite) runs and none of them is among ``found`` (indices of
    its outliers): a side too small to check, which the cell's note names (module doc)."""
    finite = np.isfinite(np.asarray(x, dtype=float))
    return int(finite.sum()) in FEW_RUNS and not finite[np.asarray(found, dtype=int)].any()


def note(sides: list[tuple[str, np.ndarray]]) -> str:
    """The cell's note for its sides too small to check (``unchecked``), each given as (its name, its values):
    "Too few runs to check for outliers (at least 5 a side are needed; pod side: 3 runs): ..."."""
    named = []
    for name, x in sides:
        x = np.asarray(x, dtype=float)
        k = int(np.isfinite(x).sum())
        named.append(f"{name} side: " + (f"{k} runs" if k == len(x) else f"{k} of {len(x)} runs measured"))
    zero = [name for name, x in sides if not (np.asarray(x, dtype=float)[np.isfinite(x)] > 0).all()]
    return (f"{NOTE} (at least 5 a side are needed; {', '.join(named)}): on a side of 3 or 4 runs only a run more than "
            "twice or under half the median of the others and over 3 times their range from it is reported, and on a "
            "side of 4 two such runs judged against the other two"
            + (f"; on a side holding 0 or less ({', '.join(zero)}) only a run the median absolute deviation rules out, "
               "which so few runs cannot steady" if zero else ""))
