"""The verdict of one cell, and the words "pod X% faster/slower".

Definitions (ratio r = median(pod) / median(host); [lo, hi] its 95% interval; t the practical
threshold, default 0.01 = 1%; p_adj the rank-test p-value after the campaign's correction;
alpha = 0.05):

- ``faster`` / ``slower``: p_adj < alpha AND the whole interval lies beyond the practical band
  on one side (lo > 1 + t or hi < 1 - t). Whether a higher value is faster comes from the metric
  (``higher_is_better``): for throughput r > 1 is faster, for a duration r < 1 is faster.
- ``no detectable difference``: the whole interval lies inside the band [1 - t, 1 + t], so any
  difference is smaller than the threshold (an equivalence statement, not just "not significant"),
  and the cell's outliers hold no second group: when some of them are runs of one side that lie
  together on one side of its median (stats.outliers.is_second_group: at least 2, their range at most a
  quarter of their distance from the median; another outlier beside them, on either side, does not hide
  them: stats.outliers.second_group_of), that share of the runs differs (2 of 12 pod runs 30%
  slower) and equivalence is not claimed: the verdict is ``inconclusive`` and the sentence says how
  many runs, how far and which way. A faster/slower verdict stands, and its sentence says the same. When each
  side's group lies nearer the other side's main runs than its own (groups_cross: each side holds runs toward the
  other's level, as two machines mixed into one cell in different shares do, 8 and 2 host runs, 2 and 8 pod runs;
  a side's one outlier is its group too, 9 and 1, 1 and 9, when the main medians lie more than the margin below
  apart and the two ratios below lie both within it or both beyond it), the ratio of medians compares one level with
  the other, so the sides are compared at each level: pod group / host main runs and pod main runs / host group
  (medians). The verdict stands only when both lie beyond 1 by more than
  t plus the sides' spread s (the larger 1.4826 MAD / median of their main runs) times 1 + 1/sqrt(k) (k: the smaller
  group's runs) on the side the ratio of medians gives; else it is ``inconclusive`` (at 3 and 7 runs the same mix
  is BIMODAL). Outlier runs and two machines read alike, so a verdict that stands gives the direction and, as its
  size, the span joining the 95% intervals of the ratio of medians, of the main runs' ratio and of both levels
  (level_interval: Student's t, and a spread pooling the groups' own scatter, at least the value step of tied runs:
  interval_spread): "Pod slower than host: 11.4% to 30.3% (95% intervals joined: the ratio of medians 0.701, 95% CI
  0.699 to 0.792, ...; if the groups are outlier runs, pod/host of the main runs 0.700 (95% CI 0.697 to 0.703); if
  two machines or settings, pod/host 0.880 (95% CI 0.875 to 0.886) at the host main runs' level (their median 1000
  events/s) and 0.853 (95% CI 0.848 to 0.858) at the pod main runs' level (...))".
- ``inconclusive``: anything else: the interval straddles a band edge, the test and the interval
  disagree, a blocking flag (CONFOUNDED, INSUFFICIENT, BIMODAL,
  DRIFT, OVERLAP, PARAMS_MISMATCH) withholds the headline, there is no interval at all, or (SEQUENTIAL, set by
  sequence.trend_check) the sides ran one after the other and the effect net of a steady change over their runs
  does not give the same verdict.
- ``not comparable``: the cell has no two sides (no runs on one, or a one-sided test such as
  pod-startup); set by cell_analysis.finalize, as no ratio can exist.
- ``set by the parameters``: the requested parameters fix the metric's value in every run
  (podtax.templates.set_by_params: sysbench's event count under `--events=N`), so there is nothing to
  compare: no ratio, interval or p-value (the cell is in no correction family); set by cell_analysis.

A figure that is only a lower bound (LOWER_BOUND: objects given up while waiting counted at the time they
were given up; the true figure is larger) bounds the ratio (``bound``, see quotient_bound): a bound numerator
(the candidate) means the true ratio is at least the one shown, so only a verdict on the ratio > 1 side stands
(for a duration ``slower``); a bound denominator (the baseline) is the mirror; a bound on both sides, or either
way, leaves no verdict; and ``no detectable difference`` never stands on a bound. A withheld verdict is
``inconclusive``. `podtax report` (a cell's candidate/baseline) and `podtax compare` (a change NEW/BASE) use it.
A figure that is only an upper bound (WATCH_GAP: timed after a dropped Kubernetes watch, the true time shorter) is
the mirror (``UPPER``): a side's upper bound can only make it look larger (for a duration slower), so a verdict
that needs it larger does not stand on it alone.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from podtax import pvalue
from podtax.sides import change_word
from scipy.special import stdtrit

FASTER = "faster"
SLOWER = "slower"
NO_DIFFERENCE = "no detectable difference"
INCONCLUSIVE = "inconclusive"
NOT_COMPARABLE = "not comparable"  # a cell without runs on both sides: no ratio can exist (cell_analysis)
SET_BY_PARAMS = "set by the parameters"  # the parameters fix the metric (podtax.templates.set_by_params)
VERDICTS = (FASTER, SLOWER, NO_DIFFERENCE, INCONCLUSIVE, NOT_COMPARABLE, SET_BY_PARAMS)
ALPHA = pvalue.ALPHA
AT_LEAST, AT_MOST = 1, -1  # how the true ratio may lie from the shown one when a figure is only a lower bound
EXACT: frozenset[int] = frozenset()
LOWER: frozenset[int] = frozenset({AT_LEAST})  # a figure that is a lower bound: the true one is at least it
UPPER: frozenset[int] = frozenset({AT_MOST})  # a figure that is an upper bound: the true one is at most it


def quotient_bound(numerator: frozenset[int], denominator: frozenset[int]) -> frozenset[int]:
    """Which ways the true numerator/denominator may lie from the shown one, given each figure's (EXACT, LOWER,
    or a quotient's own bound): a larger true numerator raises it, a larger true denominator lowers it."""
    return numerator | frozenset(-b for b in denominator)


def side_bound(lower: bool, upper: bool) -> frozenset[int]:
    """How a figure's true value may lie from the shown one: at least it (``lower``: LOWER_BOUND), at most it
    (``upper``: WATCH_GAP), either way (both), or EXACT."""
    return (LOWER if lower else EXACT) | (UPPER if upper else EXACT)


def _stands(ci_low: float, threshold: float, verdict: str, bound: frozenset[int]) -> bool:
    """Whether ``verdict`` survives ``bound`` (module docstring): above the band it needs a true ratio that can
    only be larger, below it one that can only be smaller; equivalence needs exact figures."""
    if verdict == NO_DIFFERENCE:
        return not bound
    return bound <= ({AT_LEAST} if ci_low > 1.0 + threshold else {AT_MOST})


def direction(ratio: float, higher_is_better: bool) -> str:
    """"faster" when the pod's value is better than the host's, "slower" when worse, else "same"."""
    if ratio == 1.0:
        return "same"
    return FASTER if (ratio > 1.0) == higher_is_better else SLOWER


def change_phrase(ratio: float, higher_is_better: bool, names: tuple[str, str] = ("host", "pod"),
                  unit: str = "") -> str:
    """E.g. "pod 3.0% slower" (the percentage is |ratio - 1|, one decimal); names = (baseline, candidate)
    as sentences call them: ("host", "pod") for the pod tax, ("kubernetes", "nomad") for volumes. A count
    (podtax.sides.COUNT_UNITS: objects_ok, errors, requests) is "nomad 91.5% fewer", not faster."""
    if ratio == 1.0:
        return f"{names[1]} and {names[0]} equal"
    return f"{names[1]} {abs(ratio - 1.0) * 100:.1f}% {change_word(ratio, higher_is_better, unit)}"


class Levels(NamedTuple):
    """groups_cross's answer: the pod-to-host ratio at each of the two levels, the host's main runs' level first (pod
    group / host main runs) then the pod's (pod main runs / host group; medians), those levels (the sides' main
    medians), each ratio's 95% interval (level_interval; None: no interval), the margin the ratios must lie beyond 1
    by (the band and the runs' spread), whether a verdict stands on them, and the ratio of the main runs' medians
    (pod / host: the size if the groups are outlier runs) with its 95% interval."""

    ratios: tuple[float, float]
    at: tuple[float, float]
    margin: float
    holds: bool
    cis: tuple[tuple[float, float] | None, tuple[float, float] | None]
    main: tuple[float, tuple[float, float] | None]


def level_interval(ratio: float, spread: float, n_top: int, n_bottom: int, df: int
                   ) -> tuple[float, float] | None:
    """A 95% interval of a ratio of two medians of ``n_top`` and ``n_bottom`` runs whose relative spread is
    ``spread`` (interval_spread) with ``df`` degrees of freedom: log ratio +- t(0.975, df) * spread * sqrt(pi/2 *
    (1/n_top + 1/n_bottom)) (a median's variance is pi/2 a mean's; Student's t, as the spread comes from a few runs:
    1.96 held the planted ratio in 91.6% of cells at 4 main runs). None when ``spread`` is 0 (no interval)."""
    if not spread > 0:
        return None
    half = float(stdtrit(max(df, 1), 0.975)) * spread * (np.pi / 2 * (1 / n_top + 1 / n_bottom)) ** 0.5
    return ratio * float(np.exp(-half)), ratio * float(np.exp(half))


def interval_spread(mains: tuple[list[float], ...], groups: tuple[list[float], ...]) -> tuple[float, int]:
    """The relative spread (over the median) level_interval takes, and its degrees of freedom: the runs' scatter,
    each list's pooled (the root of their squares' mean weighted by n - 1; the degrees of freedom summed): the main
    runs' 1.4826 MAD and each group's (2 runs: range / 1.128, the mean range of 2 normal draws in sigmas; more: 1.4826
    MAD), or the main runs' resolution when larger: the smallest step d between a side's distinct values over sqrt(12)
    (the sd of rounding to a grid of d: when half the runs or more tie, as whole-millisecond latencies do, MAD is 0
    though the medians are known only to about d). The largest of the lists' scatters over-covered (99.3-100% of 95%
    intervals held the planted ratio at 4-8 main runs). 0 when the runs of each list tie: no interval. A list whose
    median is not above 0 (a group of failed runs at 0 events/s) has no relative scatter and is left out."""
    def rel(v: list[float]) -> tuple[float, int] | None:
        x = np.asarray(v, dtype=float)
        mid = float(np.median(x))
        if not mid > 0:
            return None
        scatter = float(np.ptp(x)) / 1.128 if len(x) == 2 else 1.4826 * float(np.median(np.abs(x - mid)))
        return scatter / mid, len(x) - 1
    lists = [r for v in (*mains, *groups) if (r := rel(v)) is not None]
    df = sum(d for _, d in lists)
    pooled = (sum(d * r * r for r, d in lists) / df) ** 0.5 if df else 0.0
    steps = [float(np.diff(np.unique(v)).min()) / float(np.median(v)) for v in mains if len(set(v)) > 1]
    return max([pooled, *(d / 12 ** 0.5 for d in steps)]), df


def groups_cross(host: tuple[list[float], list[float]], pod: tuple[list[float], list[float]], ratio: float | None,
                 threshold: float) -> Levels | None:
    """``host``, ``pod``: each side's (main runs, second group) values. None unless both sides hold a group and each
    group's median lies nearer the other side's main median than its own (each side holds runs toward the other's
    level, as two machines mixed in one cell in different shares). Then the verdict holds only when both per-level
    ratios lie beyond the band and a margin on the side of 1 where ``ratio`` lies: the larger relative spread s of the
    sides' main runs (1.4826 MAD / median) times 1 + 1/sqrt(k), k the smaller group's runs (a group of 2 runs gives
    its median a spread of its own; module docstring). A group of one run (a side's one outlier, cell_analysis) crosses
    only when the main medians lie more than the margin apart, as the ratio of medians then claims (with them together,
    which one a lone run lies nearer is noise: a host run 25% fast beside 2 pod runs 15% slow, mains 1000 and 1006),
    and the ratios at the two levels both lie within the margin of 1 (each lone run at the other side's level: the
    matched pair of two machines run 9/1 and 1/9) or a verdict holds on them; else (a lone run past the other side's
    level, or one ratio beyond the margin and one within) the runs may be outliers and the ratio of medians rules, as
    before (withheld instead, the part-way outlier cases of bench/bench_crossed_spans.py lost 1, 6, 10 and 13 of 200
    right verdicts)."""
    (hm, hg), (pm, pg) = host, pod
    if not (hm and hg and pm and pg):
        return None
    h_main, h, p_main, p = (float(np.median(v)) for v in (hm, hg, pm, pg))
    if not (abs(h - p_main) < abs(h - h_main) and abs(p - h_main) < abs(p - p_main)) or min(h_main, h, p_main) <= 0:
        return None
    ratios = (p / h_main, p_main / h)
    spread = max(1.4826 * float(np.median(np.abs(np.asarray(v) - m))) / m for v, m in ((hm, h_main), (pm, p_main)))
    margin = threshold + spread * (1 + 1 / min(len(hg), len(pg)) ** 0.5)
    holds = ratio is not None and ((max(ratios) < 1 - margin and ratio < 1) or (min(ratios) > 1 + margin and ratio > 1))
    if min(len(hg), len(pg)) == 1 and (1 - margin <= p_main / h_main <= 1 + margin
                                       or not (holds or all(abs(r - 1) <= margin for r in ratios))):
        return None
    s, df = interval_spread((hm, pm), (hg, pg))
    cis = (level_interval(ratios[0], s, len(pg), len(hm), df), level_interval(ratios[1], s, len(pm), len(hg), df))
    main = (p_main / h_main, level_interval(p_main / h_main, s, len(pm), len(hm), df))
    return Levels(ratios, (h_main, p_main), margin, holds, cis, main)


def decide(
    ratio: float | None,
    ci_low: float | None,
    ci_high: float | None,
    p_adjusted: float | None,
    higher_is_better: bool,
    *,
    threshold: float = 0.01,
    blocked: bool = False,
    second_group: bool = False,
    crossed: bool = False,
    alpha: float = ALPHA,
    bound: frozenset[int] = EXACT,
) -> str:
    """Return one of VERDICTS following the definitions in the module docstring (``second_group``: the
    cell's outliers hold a second group of one side's runs; ``crossed``: groups_cross gave levels that do not
    hold; ``bound``: quotient_bound of the ratio's figures)."""
    if blocked or crossed or ratio is None or ci_low is None or ci_high is None:
        return INCONCLUSIVE
    upper, lower = 1.0 + threshold, 1.0 - threshold
    significant = p_adjusted is not None and p_adjusted < alpha
    verdict = INCONCLUSIVE
    if significant and (ci_low > upper or ci_high < lower):
        verdict = direction(ci_low if ci_low > upper else ci_high, higher_is_better)
    elif lower <= ci_low and ci_high <= upper and not second_group:
        verdict = NO_DIFFERENCE
    return verdict if verdict == INCONCLUSIVE or _stands(ci_low, threshold, verdict, bound) else INCONCLUSIVE
