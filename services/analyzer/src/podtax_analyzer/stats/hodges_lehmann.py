"""Hodges-Lehmann shift of log values with its Mann-Whitney (distribution-free) interval.

On log values a multiplicative pod/host effect is a shift, so ``exp(HL shift)`` estimates the
ratio pod/host and the classic Moses interval of the shift (order statistics of all pairwise
differences ``log pod_j - log host_i``, ranks from the Mann-Whitney U null distribution in its
normal approximation with continuity correction) gives its confidence interval. It is the
cross-check used where the BCa bootstrap is unstable (few runs, coarse resamples).

The k-th smallest pairwise difference is found directly when n*m is small (exact), otherwise by
narrowing a bracket on the value with searchsorted counts (O((n+m) log m) per round; one round
usually suffices), then selecting among the few differences inside. No n*m array is built for
large cells. The bracket path is exact up to rounding of x_i + g: it counts the pairs with
y_j <= x_i + g, not y_j - x_i <= g, so where a difference lies within an ulp of x_i + g of the
bracket's edge the value selected can differ from the direct path's by about that ulp (at most
1.5e-15 on values up to 40 in r6's probe of 300 large cells with near-ties; far below any
threshold the analysis applies).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtri

from podtax_analyzer.stats.bootstrap import RatioCI

DIRECT_LIMIT = 250_000


def kth_pairwise_differences(x: np.ndarray, y: np.ndarray, ks: np.ndarray) -> np.ndarray:
    """k-th smallest (1-indexed, each k in ks) of ``y_j - x_i`` over all pairs; x, y ascending."""
    n, m = len(x), len(y)
    ks = np.asarray(ks, dtype=np.int64)
    if n * m <= DIRECT_LIMIT:
        d = (y[None, :] - x[:, None]).ravel()
        part = np.partition(d, np.unique(ks - 1))
        return part[ks - 1]
    return _kth_by_brackets(x, y, [int(k) for k in ks])


class _Bracket:
    """(lo, hi] on the differences' value holding the k-th: c_lo < k <= c_hi count the pairs at or below lo,
    hi; a, b: for each x_i, the first y index above x_i + lo, x_i + hi (the pairs inside are y[a_i:b_i] - x_i).
    final: narrowing stops (few pairs left, no progress, or every pair inside has one value)."""

    def __init__(self, lo: float, hi: float, a: np.ndarray, b: np.ndarray, c_lo: int, c_hi: int) -> None:
        self.lo, self.hi, self.a, self.b, self.c_lo, self.c_hi = lo, hi, a, b, c_lo, c_hi
        self.final = False

    def span(self, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        """Smallest and largest difference inside (the bracket holds at least one pair)."""
        inside = self.a < self.b
        return (float(np.min(y[self.a[inside]] - x[inside])), float(np.max(y[self.b[inside] - 1] - x[inside])))


def _kth_by_brackets(x: np.ndarray, y: np.ndarray, ks: list[int]) -> np.ndarray:
    """For each k: narrow (lo, hi] until it holds few differences, then select among them exactly.

    The first guesses are read off a stratified 64 x 64 grid of the differences at the quantiles
    k -+ few/4 of n*m, so one count usually leaves a bracket of about few/2 pairs; later guesses
    interpolate within the differences left inside. All guesses of a round are counted in one
    searchsorted, whose indices are kept to list a bracket's pairs. Ties: a bracket whose pairs all
    have one value is the answer as it is; one that no guess narrows is selected from as it is."""
    n, m = len(x), len(y)
    nm = n * m
    few = max(4 * (n + m), 1024)
    grid = (y[:: max(1, m // 64), None] - x[None, :: max(1, n // 64)]).ravel()
    at = {k: [min(len(grid) - 1, max(0, int((t - 0.5) / nm * len(grid)))) for t in (k - few // 4, k + few // 4)]
          for k in ks}  # the grid's places of the first guesses: only they are put in order
    grid = np.partition(grid, sorted({i for pair in at.values() for i in pair}))
    whole = (float(y[0] - x[-1] - 1.0), float(y[-1] - x[0] + 1.0), np.zeros(n, np.int64), np.full(n, m, np.int64))
    brackets = {k: _Bracket(*whole, 0, nm) for k in dict.fromkeys(ks)}
    for step in range(64):
        todo = [k for k, br in brackets.items() if not br.final]
        for k in todo:
            br = brackets[k]
            br.final = br.c_hi - br.c_lo <= few or (step > 0 and len(set(br.span(x, y))) == 1)
        todo = [k for k in todo if not brackets[k].final]
        if not todo:
            break
        guesses = []
        for k in todo:
            br = brackets[k]
            low, high = (br.lo, br.hi) if step == 0 else br.span(x, y)
            for target, i in zip((k - few // 4, k + few // 4), at[k], strict=True):
                g = (float(grid[i]) if step == 0
                     else br.lo + (br.hi - br.lo) * (target - br.c_lo) / (br.c_hi - br.c_lo))
                guesses.append(g if low <= g < high and br.lo < g else 0.5 * (low + high))
        # a guess made for two k (the two middle ones usually share theirs) is counted once
        distinct, which = np.unique(np.array(guesses), return_inverse=True)
        rows = np.searchsorted(y, x[None, :] + distinct[:, None], side="right")[which]
        counts = rows.sum(axis=1)
        for gi, k in enumerate(todo):
            br = brackets[k]
            for j in (2 * gi, 2 * gi + 1):
                t, c = guesses[j], int(counts[j])
                if not br.lo < t < br.hi:
                    continue
                br = (_Bracket(t, br.hi, rows[j], br.b, c, br.c_hi) if c < k
                      else _Bracket(br.lo, t, br.a, rows[j], br.c_lo, c))
            if br is brackets[k]:
                br.final = True  # no guess narrowed it (ties at the edges)
            brackets[k] = br
    listed: list[tuple[_Bracket, list[int]]] = []  # brackets listed, each with the k it holds
    for k, br in brackets.items():
        held = next((ks_of for b, ks_of in listed if b.c_lo < k <= b.c_hi), None)
        if held is None:
            listed.append((br, [k]))
        else:
            held.append(k)
    out: dict[int, float] = {}
    for b, ks_of in listed:  # the differences of a bracket listed once, and put in order at its k's places at once
        d = _differences(x, y, b)
        pos = {k: min(max(k - b.c_lo - 1, 0), len(d) - 1) for k in ks_of}
        if len(d):
            d = np.partition(d, sorted(set(pos.values())))
        out.update({k: float(d[pos[k]]) if len(d) else b.hi for k in ks_of})
    return np.array([out[k] for k in ks])


def _differences(x: np.ndarray, y: np.ndarray, br: _Bracket) -> np.ndarray:
    """Every difference y_j - x_i inside the bracket (unordered); just one when they all have one value
    (it is then the answer for every k of the bracket)."""
    lengths = br.b - br.a
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0)
    low, high = br.span(x, y)
    if low == high:
        return np.full(1, low)
    starts = np.cumsum(lengths) - lengths  # where row i's pairs begin in the output
    return y[np.repeat(br.a - starts, lengths) + np.arange(total)] - np.repeat(x, lengths)


def hl_ratio(host: np.ndarray, pod: np.ndarray, *, confidence: float = 0.95, presorted: bool = False) -> RatioCI:
    """exp(Hodges-Lehmann shift of log pod vs log host) with its Mann-Whitney interval.

    host, pod: metric values per run (> 0 and finite; other values make the method unavailable).
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
    if not (x[-1] < np.inf and y[-1] < np.inf):  # NaN and inf sort last
        return RatioCI(None, None, None, confidence, method, False, warnings=("values must be finite numbers",))
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
