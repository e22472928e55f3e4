"""OUTLIERS, the flag of a cell's runs that lie far from their side's median, and the phrase of those that form a
second group on their side (second_group), each with a sentence a person understands (see flags.py)."""

from __future__ import annotations

import numpy as np
from podtax.sides import change_word

from podtax_analyzer.celldata import CellData
from podtax_analyzer.stats.outliers import MIN_RUNS as STEADY_RUNS  # below it, one outlier moves a median's CI
from podtax_analyzer.stats.outliers import is_second_group, mad_scored
from podtax_analyzer.wording import fmt_pct, fmt_value, plural, side_name


def second_group(cell: CellData, outliers: list[tuple[str, float]], main: bool = False) -> str | None:
    """"2 of 12 pod runs (129.0, 128.2 events/s) were 29.5% slower than the pod median of 182.3 events/s"
    when the cell's outliers (env, value) form a second group on their side (stats.outliers.is_second_group), else
    None. Outliers of both sides must each form one: both are said, the baseline's first, joined by "and". ``main``:
    against the median of the side's other runs, "... slower than the other 10 pod runs' median of 182.5 events/s"
    (the level stats.verdict.groups_cross compares at), where a side's one outlier alone is its group too ("1 of 10
    host runs (350.0 events/s) was 65.0% slower than the other 9 host runs' median of 1000 events/s")."""
    envs = [s.env for s in (cell.host, cell.pod) if any(env == s.env for env, _ in outliers)]
    if not envs or len(envs) != len({env for env, _ in outliers}):
        return None
    said = [_one_group(cell, env, [v for e, v in outliers if e == env], main) for env in envs]
    return None if None in said else " and ".join(str(s) for s in said)


def _one_group(cell: CellData, env: str, grouped: list[float], main: bool) -> str | None:
    """second_group's phrase for the runs ``grouped`` (values) of the side ``env``, or None when they form none."""
    side = cell.host if env == cell.host.env else cell.pod
    values = np.array(grouped)
    mid = float(np.median(side.values))
    if mid <= 0 or not (main and len(values) == 1 or is_second_group(values, mid)):
        return None
    name = side_name(side.env, cell.pair)
    against = f"the {name} median of"
    if main:
        rest = [float(v) for v in side.values]
        for v in grouped:
            rest.remove(v)
        mid, against = float(np.median(rest)), f"the other {len(rest)} {name} runs' median of"
    shift = float(np.median(values)) / mid
    shown = ", ".join(fmt_value(float(v), cell.unit) for v in values[:5]) + (", ..." if len(values) > 5 else "")
    word = change_word(shift, cell.higher_is_better, cell.unit)  # "lower" for a level, "fewer" for a count
    return (f"{len(values)} of {side.n} {name} runs ({shown} {cell.unit}) {'was' if len(values) == 1 else 'were'} "
            f"{fmt_pct(shift - 1)}% "
            f"{word} than {against} {fmt_value(mid, cell.unit)} {cell.unit}")


def outliers(cell: CellData, found: dict[str, np.ndarray], cutoffs: dict[str, np.ndarray],
             group: tuple[str | None, dict[str, np.ndarray]] = (None, {}), split: frozenset[str] = frozenset()
             ) -> str | None:
    """``found``: each side's outliers (indices), beyond ``cutoffs`` (each value's, stats.outliers.cutoffs_within);
    ``group``: second_group's phrase and its runs (indices, by side) when some of the outliers form a second group
    (on one side, or one on each), or each side's one outlier when the sides are read at each level (one run a side
    toward the other side's level, stats.verdict.groups_cross);
    ``split``: the sides scored within two modes (stats.outliers.modified_z_within), whose outliers lie far from their
    mode's median."""
    phrase, grouped = group
    if phrase and all(len(idx) == 1 for idx in grouped.values()):  # one run a side: cell_analysis.finalize's levels
        return (f"Outliers: {phrase}: each side's one run lies toward the other side's main runs, as two machines or "
                f"settings mixed in one cell or one outlier run a side would ({_score(cell, grouped, split)} above "
                f"{_above(grouped, cutoffs)}). "
                "They are kept; the median and the ratio do not show them, so the cell is never called equivalent.")
    if phrase:
        rest = {env: np.setdiff1d(idx, grouped.get(env, idx[:0])) for env, idx in found.items()}
        others = f"Besides, {far}. " if (far := _far_off(cell, rest, cutoffs, split)) else ""
        what = ("each side's runs lie together and on one side of its median, a second group of runs"
                if len(grouped) > 1 else "together and on one side of the median, a second group of runs")
        return (f"Outliers: {phrase}: {what} rather than noise ({_score(cell, grouped, split)} above "
                f"{_above(grouped, cutoffs)}). "
                f"{others}"
                "They are kept; the median and the ratio do not show them, so the cell is never called equivalent.")
    if not (far := _far_off(cell, found, cutoffs, split)):
        return None
    few = min(s.n for s in (cell.host, cell.pod) if s.n)  # a side with no runs has no outliers to feel
    resist = ("medians and rank tests resist them" if few >= STEADY_RUNS else
              f"with {plural(few, 'run')} on a side even medians and rank tests feel them: they widen the "
              "interval and weaken the test, so an inconclusive verdict may be theirs (add runs)")
    return f"Outliers: {far}. They are kept; {resist}."


def _score(cell: CellData, found: dict[str, np.ndarray], split: frozenset[str]) -> str:
    """"modified z-score" when each side with runs ``found`` is scored by its MAD, whole (stats.outliers.mad_scored);
    else "outlier score": on log values below 10 runs a side (generalized ESD, or at 3-4 runs the others' median
    and range: no modified z-score), or within each mode."""
    sides = [cell.host if env == cell.baseline else cell.pod for env, idx in found.items() if len(idx)]
    whole = all(s.env not in split and mad_scored(s.values) for s in sides)
    return "modified z-score" if whole else "outlier score"


def _above(found: dict[str, np.ndarray], cutoffs: dict[str, np.ndarray]) -> str:
    """"3.5 or 6": the cutoffs the runs ``found`` (each side's indices) lie beyond."""
    return " or ".join(f"{c:g}" for c in sorted({float(cutoffs[env][i]) for env, idx in found.items() for i in idx}))


def _far_off(cell: CellData, found: dict[str, np.ndarray], cutoffs: dict[str, np.ndarray], split: frozenset[str]
             ) -> str | None:
    """"1 host run (700.0 events/s) lies far from its side's median (modified z-score above 6)", or None (the score's
    name: _score)."""
    parts = []
    for env, idx in found.items():
        if len(idx) == 0:
            continue
        side = cell.host if env == cell.baseline else cell.pod
        shown = (", ".join(fmt_value(float(side.values[i]), cell.unit) for i in idx[:5])
                 + (", ..." if len(idx) > 5 else ""))
        parts.append(f"{plural(len(idx), side_name(env, cell.pair) + ' run')} ({shown} {cell.unit})")
    if not parts:
        return None
    verb, whose = ("lies", "its") if sum(len(i) for i in found.values()) == 1 else ("lie", "their")
    envs = {env for env, idx in found.items() if len(idx)}
    centre = "mode's" if envs <= split else "side's" if not envs & split else "side's or mode's"
    return (f"{' and '.join(parts)} {verb} far from {whose} {centre} median "
            f"({_score(cell, found, split)} above {_above(found, cutoffs)})")
