"""Hodges-Lehmann shift of log values with its Mann-Whitney (distribution-free) interval.

On log values a multiplicative pod/host effect is a shift, so ``exp(HL shift)`` estimates the
ratio pod/host and the classic Moses interval of the shift (order statistics of all pairwise
differences ``log pod_j - log host_i``, ranks from the Mann-Whitney U null distribution in its
normal approximation with continuity correction) gives its confidence interval. It is the
cross-check used where the BCa bootstrap is unstable (few runs, coarse resamples).

The k-th smallest pairwise difference is found exactly: directly when n*m is small, otherwise by
bisection on the value with a searchsorted count (O((n+m) log m) per step), then snapped to the
nearest actual difference. No n*m array is built for large cells.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtri

from podtax_analyzer.stats.bootstrap import RatioCI

DIRECT_LIMIT = 250_000


def _count_le(x: np.ndarray, y: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each threshold in t: number of pairs with y_j - x_i <= t (x, y ascending)."""
    idx = np.searchsorted(y, x[None, :] + t[:, None], side="right")
    return idx.sum(axis=1)


def kth_pairwise_differences(x: np.ndarray, y: np.ndarray, ks: np.ndarray) -> np.ndarray:
    """k-th smallest (1-indexed, each k in ks) of ``y_j - x_i`` over all pairs; x, y ascending."""
    n, m = len(x), len(y)
    ks = np.asarray(ks, dtype=np.int64)
    if n * m <= DIRECT_LIMIT:
        d = (y[None, :] - x[:, None]).ravel()
        part = np.partition(d, np.unique(ks - 1))
        return part[ks - 1]
    return _kth_by_bisection(x, y, [int(k) for k in ks])


def _kth_by_bisection(x: np.ndarray, y: np.ndarray, ks: list[int]) -> np.ndarray:
    """For each k: narrow (lo, hi] until it holds few differences, then select among them exactly.
    The grid, the first counts and the candidates of a bracket are shared by all ks."""
    n, m = len(x), len(y)
    few = max(4 * (n + m), 1024)
    # Start from a bracket read off a stratified 64 x 64 grid of the differences (x, y sorted),
    # widened until the exact counts confirm it holds the k-th; saves most bisection steps.
    grid = np.sort((y[:: max(1, m // 64), None] - x[None, :: max(1, n // 64)]).ravel())
    brackets: dict[int, tuple[float, float, int, int]] = {}
    for width in (0.02, 0.08):
        todo = [k for k in dict.fromkeys(ks) if k not in brackets]
        if not todo:
            break
        edges = []
        for k in todo:
            q = (k - 0.5) / (n * m)
            edges += [grid[max(0, int((q - width) * len(grid)) - 1)],
                      grid[min(len(grid) - 1, int((q + width) * len(grid)) + 1)]]
        c = _count_le(x, y, np.array(edges))
        for i, k in enumerate(todo):
            if c[2 * i] < k <= c[2 * i + 1]:
                brackets[k] = (edges[2 * i], edges[2 * i + 1], int(c[2 * i]), int(c[2 * i + 1]))
    out = np.empty(len(ks))
    chosen: list[tuple[float, float, int, np.ndarray]] = []  # (lo, hi, c_lo, sorted candidates)
    for j, k in enumerate(ks):
        lo, hi, c_lo, c_hi = brackets.get(k, (y[0] - x[-1] - 1.0, y[-1] - x[0] + 1.0, 0, n * m))
        shared = next((b for b in chosen if b[2] < k <= b[2] + len(b[3])), None)
        if shared is None:
            lo, hi, c_lo = _narrow(x, y, k, lo, hi, c_lo, c_hi, few)
            shared = (lo, hi, c_lo, _candidates(x, y, lo, hi))
            chosen.append(shared)
        cand, c_lo, hi = shared[3], shared[2], shared[1]
        pos = min(max(k - c_lo - 1, 0), len(cand) - 1)
        out[j] = float(cand[pos]) if len(cand) else float(hi)
    return out


def _narrow(x: np.ndarray, y: np.ndarray, k: int, lo: float, hi: float, c_lo: int, c_hi: int,
            few: int) -> tuple[float, float, int]:
    for _ in range(200):
        if c_hi - c_lo <= few:
            break
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        c = int(_count_le(x, y, np.array([mid]))[0])
        if c < k:
            lo, c_lo = mid, c
        else:
            hi, c_hi = mid, c
    return lo, hi, c_lo


def _candidates(x: np.ndarray, y: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Every difference y_j - x_i in (lo, hi], ascending."""
    n = len(x)
    a = np.searchsorted(y, x + lo, side="right")
    b = np.searchsorted(y, x + hi, side="right")
    lengths = b - a
    total = int(lengths.sum())
    rows = np.repeat(np.arange(n), lengths)
    offsets = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.sort(y[np.repeat(a, lengths) + offsets] - x[rows])


def hl_ratio(host: np.ndarray, pod: np.ndarray, *, confidence: float = 0.95, presorted: bool = False) -> RatioCI:
    """exp(Hodges-Lehmann shift of log pod vs log host) with its Mann-Whitney interval.

    host, pod: metric values per run (> 0; non-positive values make the method unavailable).
    Returns a :class:`RatioCI` with ``method="hodges-lehmann"``; ratios are dimensionless.
    low/high are None when the samples are too small for the requested confidence (e.g. fewer
    than 4 runs a side at 95%). presorted: both sides are already ascending (sorted once by the caller).
    """
    h = np.asarray(host, dtype=float)
    p = np.asarray(pod, dtype=float)
    method = "hodges-lehmann"
    if len(h) == 0 or len(p) == 0:
        return RatioCI(None, None, None, confidence, method, False, warnings=("a side has no runs",))
    if np.any(h <= 0) or np.any(p <= 0):
        return RatioCI(None, None, None, confidence, method, False,
                       warnings=("values must be positive to compare on a log scale",))
    x, y = (np.log(h), np.log(p)) if presorted else (np.sort(np.log(h)), np.sort(np.log(p)))
    n, m = len(x), len(y)
    nm = n * m
    mid = [nm // 2, nm // 2 + 1] if nm % 2 == 0 else [(nm + 1) // 2]
    z = float(ndtri(0.5 + confidence / 2.0))
    sd = math.sqrt(nm * (n + m + 1) / 12.0)
    c = math.floor(nm / 2.0 + 0.5 - z * sd)
    ks = mid + ([c, nm + 1 - c] if c >= 1 else [])
    vals = kth_pairwise_differences(x, y, np.array(ks))
    est = float(np.exp(vals[: len(mid)].mean()))
    if c < 1:
        return RatioCI(est, None, None, confidence, method, False,
                       warnings=(f"too few runs for a {confidence:.0%} distribution-free interval",))
    return RatioCI(est, float(np.exp(vals[-2])), float(np.exp(vals[-1])), confidence, method, True)
