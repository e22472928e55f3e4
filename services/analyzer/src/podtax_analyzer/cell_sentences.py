"""A cell's sentence by its verdict (finalize in cell_analysis.py): the verdict's own, why a bound on a side's
median withholds it, and the verdict of a side whose median is 0 (no ratio)."""

from __future__ import annotations

import numpy as np
from podtax.sides import change_word

from podtax_analyzer import flags as fl
from podtax_analyzer.cell_wording import median_text, sides_text
from podtax_analyzer.celldata import CellData
from podtax_analyzer.stats.verdict import (
    ALPHA,
    FASTER,
    INCONCLUSIVE,
    NO_DIFFERENCE,
    NOT_COMPARABLE,
    SLOWER,
    Levels,
    change_phrase,
    direction,
)
from podtax_analyzer.wording import fmt_pct, fmt_ratio, fmt_value, p_text_of, plural, side_name

NOT_FINITE = "no ratio: "  # the warning naming the runs whose values are NaN or infinite (cell_analysis)
# why one run a side toward the other side's level withholds the verdict, and what to do (9/1 and 1/9 mixes)
LONE_RUNS = (" (one node name over two machines or settings, or one outlier run a side: run both sides on one "
             "machine, or give the machines their own node names, and run the cell again)")


def sentence(f: dict, verdict: str, threshold: float, correction: str, group: str | None = None,
             levels: Levels | None = None) -> str:
    """The cell's sentence; ``group``: outlier_flags.second_group's phrase, said whatever the verdict
    (stats/verdict.py); ``levels``: stats.verdict.groups_cross (each side's group toward the other's level)."""
    if levels and group and f["ratio"] is not None and not any(name in f["flags"] for name in fl.WITHHOLD_RATIO):
        if verdict == INCONCLUSIVE and not levels.holds:
            return _crossed_sentence(f, group, levels, threshold)
        if verdict in (FASTER, SLOWER) and levels.holds:
            return _levels_sentence(f, group, levels, correction)
    text = _verdict_sentence(f, verdict, threshold, correction, group)
    if group and verdict in (FASTER, SLOWER, INCONCLUSIVE) and f["ratio"] is not None and group not in text:
        text += f" Besides, {group}: a second group of runs that the median does not show."
    return text


def _crossed_parts(f: dict, levels: Levels, intervals: bool = False) -> tuple[str, str, str, str]:
    """The side names, "0.880 at the host main runs' level (their median 1002 events/s) and 0.853 at the pod main
    runs' level (their median 700.5 events/s)" (the ratio at each level, ``intervals``: with its 95% interval) and
    "0.315, 95% CI 0.306 to 0.479" (the ratio of medians)."""
    pair = (f["baseline"], f["candidate"])
    base, cand = side_name(pair[0], pair), side_name(pair[1], pair)
    interval = f"95% CI {fmt_ratio(f['ci_low'])} to {fmt_ratio(f['ci_high'])}" if f["ci_low"] is not None \
        else "no interval"
    unit = f" {f['unit']}" * bool(f["unit"])
    each = " and ".join(
        f"{fmt_ratio(r)}{f' ({_ci(ci)})' * intervals} at the {name} main runs' "
        f"level (their median {fmt_value(at, f['unit'])}{unit})"
        for r, ci, name, at in zip(levels.ratios, levels.cis, (base, cand), levels.at, strict=True))
    return base, cand, each, f"{fmt_ratio(f['ratio'])}, {interval}"


def _ci(interval: tuple[float, float] | None) -> str:
    """"95% CI 0.875 to 0.885", or "no interval" (stats.verdict.level_interval: no spread to size one)."""
    return f"95% CI {fmt_ratio(interval[0])} to {fmt_ratio(interval[1])}" if interval else "no interval"


def _crossed_sentence(f: dict, group: str, levels: Levels, threshold: float) -> str:
    """Why each side's group toward the other side's level withholds the verdict (stats.verdict.groups_cross): the
    ratios at the two levels lie within the margin, or apart, or both beyond it against the ratio of medians. What
    split the runs (outlier runs, two machines or settings) is not known, so the sentence says what was found; with
    one run a side (``crossed_lone_runs``) it says what may have and what to do (LONE_RUNS)."""
    base, cand, each, medians = _crossed_parts(f, levels)
    low, high = min(levels.ratios), max(levels.ratios)
    why = (f"the other way from the ratio of medians, {medians}" if high < 1 - levels.margin or low > 1 + levels.margin
           else f"not both beyond ±{fmt_pct(levels.margin)}% (the ±{fmt_pct(threshold)}% band and the runs' spread) "
                f"one way; ratio of medians {medians}")
    advice = LONE_RUNS if f.get("crossed_lone_runs") else ""
    return (f"Inconclusive: the runs of each side lie in two groups, the smaller one toward the other side's main "
            f"runs ({group}); {cand}/{base} is {each}, {why}: no verdict{advice}.")


def span(ratio: float, intervals: list[tuple[float, float]]) -> tuple[float, float]:
    """The sizes (|r - 1|, the way ``ratio`` lies from 1) from the nearest to the farthest end of ``intervals``
    (95% intervals of ratios); 0 when an interval reaches 1."""
    sign = 1.0 if ratio > 1 else -1.0
    ends = [sign * (r - 1.0) for interval in intervals for r in interval]
    return max(0.0, min(ends)), max(ends)


def _levels_sentence(f: dict, group: str, levels: Levels, correction: str) -> str:
    """A verdict both levels and the ratio of medians give when each side holds runs toward the other's level
    (stats.verdict.groups_cross). Outlier runs (the ratio of medians sizes it) and two machines or settings (the ratio
    at each level does) read alike, so the size is the span joining the 95% intervals of the ratio of medians, of the
    main runs' ratio (outlier runs) and of the ratio at each level (two machines or settings)."""
    base, cand, each, medians = _crossed_parts(f, levels, intervals=True)
    word = change_word(f["ratio"], f["higher_is_better"], f["unit"])
    ratio, interval = levels.main
    known = [ci or (r, r) for ci, r in zip((interval, *levels.cis), (ratio, *levels.ratios), strict=True)]
    low, high = span(f["ratio"], [(f["ci_low"], f["ci_high"]), *known])  # no interval: its point
    main = f"{cand}/{base} of the main runs {fmt_ratio(ratio)} ({_ci(interval)})"
    return (f"{cand.capitalize()} {word} than {base}: {fmt_pct(low)}% to {fmt_pct(high)}% (95% intervals joined: the "
            f"ratio of medians {medians}, {p_text_of(f['p_adjusted'])} after {correction}; if the groups are outlier "
            f"runs, {main}; if two machines or settings, {cand}/{base} {each}): each side holds runs toward the other "
            f"side's level ({group}), as "
            f"outlier runs or two machines or settings mixed in one cell in different shares would.")


def _verdict_sentence(f: dict, verdict: str, threshold: float, correction: str, group: str | None) -> str:
    flags = f["flags"]
    withheld = [name for name in fl.ORDER if name in flags and name in fl.WITHHOLD_RATIO]
    if withheld:
        return f["flag_details"][withheld[0]]
    ratio, lo, hi, unit = f["ratio"], f["ci_low"], f["ci_high"], f["unit"]
    pair = (f["baseline"], f["candidate"])
    base, cand = side_name(pair[0], pair), side_name(pair[1], pair)
    sides = ""
    if f["host_median"] is not None and f["pod_median"] is not None:
        sides = sides_text(f, base, cand)
    if not f["candidate"] and f["host_median"] is not None:  # a one-sided test (pod-startup)
        return (f"Not comparable: one side only: {base} median {median_text(f, 'host')} {unit} over "
                f"{plural(f['n_host'], 'run')}; compare two campaigns with `podtax compare`.")
    why = f["flag_details"].get("INSUFFICIENT", "")
    if verdict == NOT_COMPARABLE and (why.startswith(fl.FEW_HEAD) or fl.NO_ENV in why):  # too short; no such side
        return f"Not comparable: {why[0].lower()}{why[1:]}"
    if verdict == NOT_COMPARABLE and "ERRORS" in flags and why:  # runs lost to failed objects
        return f"Not comparable: {why[0].lower()}{why[1:]} {f['flag_details']['ERRORS']}"
    if verdict == NOT_COMPARABLE:
        return (f"Not comparable: {base} has {plural(f['n_host'], 'run')} and {cand} {plural(f['n_pod'], 'run')}; "
                f"a ratio needs runs on both sides.")
    if ratio is None:
        why = next((w.removeprefix(NOT_FINITE) for w in f["warnings"] if w.startswith(NOT_FINITE)), None)
        why = f": {why}" if why else ""
        return f"Inconclusive: no ratio could be computed{why} ({sides or 'a side has no runs'})."
    interval = f"95% CI {fmt_ratio(lo)} to {fmt_ratio(hi)}" if lo is not None else "no interval"
    p = f["p_adjusted"]
    p_text = f"{p_text_of(p)} after {correction}" if p is not None else "no p-value"
    band = fmt_pct(threshold)
    if verdict in (FASTER, SLOWER):
        head = f"{change_phrase(ratio, f['higher_is_better'], (base, cand), unit).capitalize()} than {base}"
        return f"{head} (ratio {fmt_ratio(ratio)}, {interval}, {p_text}; {sides})."
    if verdict == NO_DIFFERENCE:
        # the interval lies inside the band: an equivalence statement, whether or not the test detects
        # a (smaller) difference
        if p is not None and p < ALPHA:
            found = (f"a difference is detected ({p_text}, "
                     f"{change_phrase(ratio, f['higher_is_better'], (base, cand), unit)}) "
                     f"but it is smaller than ±{band}%")
        else:
            found = "no difference is detected"
        return (f"Within ±{band}% (equivalent at this threshold): ratio {fmt_ratio(ratio)} with {interval}; "
                f"{found} ({sides}).")
    within = lo is not None and 1 - threshold <= lo and hi <= 1 + threshold
    if "INSUFFICIENT" in flags:
        why = f"too few runs for an interval, a p-value or a verdict (at least {fl.MIN_RUNS} a side are needed)"
    elif "DRIFT" in flags:
        why = ("the values drifted while the campaign ran, so the verdict is withheld (its interval assumes "
               "runs that do not change over time)")
    elif lo is None:
        why = "no interval could be computed"
    elif group and within:
        why = (f"{group}: a second group of runs that the median does not show, so the cell is not called "
               f"equivalent although the interval lies within ±{band}%")
    elif p is None or p >= 0.05:
        why = f"the rank test is not significant ({p_text}) yet the interval is not within ±{band}%"
    else:
        why = f"the interval crosses the ±{band}% band"
    return (f"Inconclusive: {why}; ratio {fmt_ratio(ratio)} "
            f"({change_phrase(ratio, f['higher_is_better'], (base, cand), unit)}), "
            f"{interval} ({sides}).")


def bound_sentence(cell: CellData, f: dict, withheld: str, correction: str, bound: frozenset[int]) -> str:
    """Why a verdict (``withheld``) is not given: a side's median is only a lower or an upper bound
    (stats/verdict.py's rule)."""
    pair, unit = (f["baseline"], f["candidate"]), f["unit"]
    larger = change_word(2.0, f["higher_is_better"], unit)  # a larger value: "slower" for a duration
    smaller = change_word(0.5, f["higher_is_better"], unit)
    parts = []
    for side, key in ((cell.host, "host"), (cell.pod, "pod")):
        if f[f"{key}_lower_bound"]:
            fails = side.failures
            lost = (f"{fails.failed} of its {fails.total_objects} objects never finished" if fails.error_runs
                    else "some of its objects never finished")
            parts.append(f"{side_name(side.env, pair)}'s {f['metric']} is only a lower bound (≥ "
                         f"{fmt_value(f[f'{key}_median'], unit)} {unit}): {lost}, so it may be {larger} than shown")
        if f[f"{key}_upper_bound"]:
            why = " and ".join(w for n, w in ((side.n_watch_gap, "timed it after a dropped watch"),
                                              (side.n_held, "held a retry's wait in it")) if n)
            runs = side.n_watch_gap + side.n_held
            parts.append(f"{side_name(side.env, pair)}'s {f['metric']} is only an upper bound (≤ "
                         f"{fmt_value(f[f'{key}_median'], unit)} {unit}): {runs} of its runs {why}, so it may be "
                         f"{smaller} than shown")
    cand = side_name(pair[1], pair)
    no = ("no verdict either way" if len(bound) == 2 else "no verdict of no detectable difference"
          if withheld == NO_DIFFERENCE else f"no verdict that {cand} is {withheld}")
    p_text = f"{p_text_of(f['p_adjusted'])} after {correction}" if f["p_adjusted"] is not None else "no p-value"
    return (f"Inconclusive: {'; '.join(parts)}; {no} (ratio {fmt_ratio(f['ratio'])}, 95% CI "  # decide's verdicts
            f"{fmt_ratio(f['ci_low'])} to {fmt_ratio(f['ci_high'])}, {p_text}).")             # all have a CI


def zero_median(cell: CellData, f: dict, correction: str) -> tuple[str, str] | None:
    """The verdict and sentence of a cell with no ratio because a side's median is 0 (UDP runs that lost no
    packet: lost_percent 0; the baseline's makes x/0, the candidate's a ratio of 0 with an interval of no
    width), or None: both sides all 0 are equal; otherwise a significant rank test (p_adjusted < alpha) and
    the medians' order say which side is worse, without a ratio or effect size."""
    host, pod = f["host_median"], f["pod_median"]
    if f["ratio"] is not None or 0.0 not in (host, pod) or None in (host, pod) or set(f["flags"]) & fl.BLOCKING \
            or any(f[f"{s}_{b}_bound"] for s in ("host", "pod") for b in ("lower", "upper")) or not f["candidate"]:
        return None
    pair = (f["baseline"], f["candidate"])
    base, cand = side_name(pair[0], pair), side_name(pair[1], pair)
    if not np.any(cell.host.values) and not np.any(cell.pod.values):
        return NO_DIFFERENCE, (f"{cand.capitalize()} and {base} equal: every run of both sides measured 0 "
                               f"{f['unit']} (no ratio of zeros).")
    p = f["p_adjusted"]
    if p is None or p >= ALPHA or pod == host:
        return None
    grew = 2.0 if pod > host else 0.5  # any ratio on the side of 1 the medians' order gives
    zero = base if host == 0.0 else cand
    sides = sides_text(f, base, cand)
    word = change_word(grew, f["higher_is_better"], f["unit"])
    said = (f"{cand.capitalize()} {word} than {base}" if word in (FASTER, SLOWER)  # else: a count or a level
            else f"{cand.capitalize()}'s {f['metric']} {word} than {base}'s")
    return direction(grew, f["higher_is_better"]), (
        f"{said} (no ratio: the {zero} median is 0; {p_text_of(p)} after {correction}; {sides}).")
