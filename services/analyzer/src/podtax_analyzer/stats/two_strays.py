"""Two strays among 4 runs, which hide each other from stats/few_runs.py's rule.

At 4 runs few_runs_z judges each run against the other three: a second stray among them widens their range, so
neither is flagged. Planted campaigns of 4 runs a side, no effect, two pod runs 3x slow (1-5% lognormal noise for
throughput, log-t with 3 degrees of freedom at 3-8% for latency) carried OUTLIERS in 0 of 40 (each kind, median of 3
seeds), and their median, half a stray, read "pod 100% slower"; one run 3x slow and one 3x fast in 0 of 40 too. Here
the same rule judges two runs against the other two: both lie farther from the others' median than ``FAR`` (twice
or half it) and ``SPREAD`` (3) times the others' range (log values). The two are the lowest and the highest run, or
the two at one end. Those campaigns now carry OUTLIERS in 40 of 40 (both kinds, both patterns); clean ones still in
0 of 40. Of 20,000 seeded sides of 4 (log-normal noise; median of 3 seeds): clean ones hold two strays at 5% and 10%
noise in 0%, 20% in 0.03%, 30% in 1.3%; two runs 3x off are found in 98-100% (both one way or one each way, 2% and
10% noise), 10x off in all, 2x off in 18-31% (twice the others' median is the edge by construction).

When the side splits into two pairs each of which passes against the other ([1000, 1010, 10000, 10100]), 4 runs
cannot tell two strays from two modes: the pair farther from the other side's median (log values) is reported and
``split_text`` says so; the side's median lies between the pairs and describes neither. Without another side to
tell them by (or equally far from it) nothing is reported and the side keeps the few-runs note.
"""

from __future__ import annotations

import math

import numpy as np

from podtax_analyzer.celldata import Side
from podtax_analyzer.stats.few_runs import FAR, SPREAD, few_to_check
from podtax_analyzer.stats.outliers import CUTOFF
from podtax_analyzer.wording import fmt_value, side_name


def _beyond(lx: np.ndarray, strays: list[int]) -> np.ndarray | None:
    """Scores (in bounds: beyond 1) of ``strays`` against the other runs of ``lx``; None when either lies within."""
    rest = np.delete(lx, strays)
    bound = max(FAR, SPREAD * float(np.ptp(rest)))
    dev = lx[strays] - float(np.median(rest))
    return dev / bound if bool((np.abs(dev) > bound).all()) else None


def pair_of(x: np.ndarray, other: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """The indices of two strays of the side ``x`` (4 positive finite values, few_to_check), their scores in bounds
    (signed; beyond 1), and whether the side split into two pairs that both passed (the one reported chosen by the
    ``other`` side's values). Empty indices when there are none, or when no other side tells a split apart."""
    none = (np.zeros(0, dtype=np.int64), np.zeros(0), False)
    x = np.asarray(x, dtype=float)
    if len(x) != 4 or not few_to_check(x):
        return none
    lx = np.log(x)
    order = np.argsort(lx, kind="stable")
    ends = {"both": [int(order[0]), int(order[3])], "low": [int(order[0]), int(order[1])],
            "high": [int(order[2]), int(order[3])]}
    passed = {k: s for k, idx in ends.items() if (s := _beyond(lx, idx)) is not None}
    if not passed:
        return none
    if len(passed) == 1:
        (k, s), = passed.items()
        return np.array(sorted(ends[k]), dtype=np.int64), s[np.argsort(ends[k])], False
    o = np.asarray(other, dtype=float)
    o = o[np.isfinite(o)]
    if not len(o) or not (o > 0).all():
        return none
    centre = float(np.median(np.log(o)))
    far = {k: abs(float(np.median(lx[ends[k]])) - centre) for k in passed}
    first, second = sorted(far, key=far.__getitem__, reverse=True)[:2]
    if math.isclose(far[first], far[second], rel_tol=1e-9):  # halfway (log values): nothing tells them apart
        return none
    return np.array(sorted(ends[first]), dtype=np.int64), passed[first][np.argsort(ends[first])], True


def pair_z(x: np.ndarray, z: np.ndarray, other: np.ndarray, cutoff: float = CUTOFF) -> np.ndarray:
    """``z`` (few_runs_z's scores of the side ``x``) with two strays (pair_of) scored beyond ``cutoff`` (cutoff times
    their distance in bounds), so they are reported as outliers; unchanged when there are none."""
    idx, scores, _ = pair_of(x, other)
    if not len(idx):
        return z
    z = np.array(z, dtype=float)
    z[idx] = cutoff * scores
    return z


def split_text(side: Side, other: Side, pair: tuple[str, str], unit: str) -> str | None:
    """The cell's warning when ``side`` split into two pairs (pair_of; ``pair``: the cell's baseline and candidate
    environments, which name the sides), else None."""
    x = np.asarray(side.values, dtype=float)
    idx, _, split = pair_of(x, other.values)
    if not split:
        return None
    name, other_name = side_name(side.env, pair), side_name(other.env, pair)
    kept, strays = float(np.median(np.delete(x, idx))), float(np.median(x[idx]))
    return (f"The {name} side's 4 runs form two pairs {max(strays / kept, kept / strays):.1f} times apart (near "
            f"{fmt_value(kept, unit)} and {fmt_value(strays, unit)} {unit}): two strays or two modes, which 4 runs "
            f"cannot tell apart; the pair farther from the {other_name} median is reported as outliers, and the "
            f"{name} median lies between the pairs, describing neither (add runs)")
