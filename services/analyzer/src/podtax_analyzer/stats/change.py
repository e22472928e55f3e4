"""Bootstrap of a change between two campaigns (podtax compare): the difference and quotient of a cell's
figure in BASE and NEW, each figure a ratio of medians (candidate/baseline) or one environment's median.

The sides are resampled separately, seeded per cell; the intervals are 95% percentile intervals and the
p-value of "no change" is two-sided (twice the smaller tail share of the difference around 0). Pure.
"""

from __future__ import annotations

import numpy as np

BOOTSTRAP = 4000


def _boot_median(x: np.ndarray, rng: np.random.Generator, b: int) -> np.ndarray:
    return np.median(x[rng.integers(0, len(x), (b, len(x)))], axis=1)


def _boot_ratio(base: np.ndarray, cand: np.ndarray, rng: np.random.Generator, b: int) -> np.ndarray:
    mb, mc = _boot_median(base, rng, b), _boot_median(cand, rng, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        return mc / mb


def bootstrap_change(base: tuple[np.ndarray, np.ndarray], new: tuple[np.ndarray, np.ndarray], *,
                     seed: int, b: int = BOOTSTRAP) -> dict[str, float | None]:
    """diff and change of two ratios (each given as (baseline values, candidate values)) with 95%
    percentile intervals and a two-sided bootstrap p-value. Pure; seeded."""
    rng = np.random.default_rng(seed)
    r_base = float(np.median(base[1]) / np.median(base[0]))
    r_new = float(np.median(new[1]) / np.median(new[0]))
    return _estimates(r_base, r_new, _boot_ratio(*base, rng, b), _boot_ratio(*new, rng, b), b)


def bootstrap_median_change(base: np.ndarray, new: np.ndarray, *, seed: int,
                            b: int = BOOTSTRAP) -> dict[str, float | None]:
    """As bootstrap_change, for the medians of one environment's values in BASE and NEW. Pure; seeded."""
    rng = np.random.default_rng(seed)
    return _estimates(float(np.median(base)), float(np.median(new)), _boot_median(base, rng, b),
                      _boot_median(new, rng, b), b)


def _estimates(r_base: float, r_new: float, rb: np.ndarray, rn: np.ndarray, b: int) -> dict[str, float | None]:
    """diff = r_new - r_base and change = r_new / r_base with 95% percentile intervals from the bootstrap
    replicates rb and rn, and the two-sided p-value of "no change"."""
    ok = np.isfinite(rb) & np.isfinite(rn) & (rb > 0)
    d, q = (rn - rb)[ok], (rn / np.where(rb > 0, rb, 1.0))[ok]
    # a base ratio of 0 (the candidate's median is 0, e.g. an error count) has no NEW/BASE change
    change = r_new / r_base if r_base != 0 else None
    if len(d) < b // 2 or change is None:
        return dict(diff=r_new - r_base, diff_ci_low=None, diff_ci_high=None, change=change,
                    change_ci_low=None, change_ci_high=None, p_value=None)
    if np.all(d == 0):  # the same values on both campaigns: no change, and nothing to test
        p = 1.0
    else:
        p = float(min(1.0, 2.0 * min(np.mean(d <= 0), np.mean(d >= 0))))
        p = max(p, 1.0 / len(d))
    dl, dh = np.percentile(d, [2.5, 97.5])
    ql, qh = np.percentile(q, [2.5, 97.5])
    return dict(diff=r_new - r_base, diff_ci_low=float(dl), diff_ci_high=float(dh), change=change,
                change_ci_low=float(ql), change_ci_high=float(qh), p_value=p)
