"""Two strays among 4 runs, which hide each other from stats/few_runs.py's rule; and a side of 4 split into two pairs.

At 4 runs few_runs_z judges each run against the other three: a second stray among them widens their range, so
neither is flagged. Planted campaigns of 4 runs a side, no effect, two pod runs 3x slow (1-5% lognormal noise for
throughput, log-t with 3 degrees of freedom at 3-8% for latency) carried OUTLIERS in 0 of 40 (each kind, median of 3
seeds), and their median, half a stray, read "pod 100% slower"; one run 3x slow and one 3x fast in 0 of 40 too. Here
the same rule judges two runs against the other two: both lie farther from the others' median than ``FAR`` (twice
or half it) and ``SPREAD`` (3) times the others' range (log values; few_runs.beyond, exactly at the bound is within).
The two are the lowest and the highest run, or the two at one end. Those campaigns now carry OUTLIERS in 40 of 40
(both kinds, both patterns); clean ones still in 0 of 40. Of 20,000 seeded sides of 4 (log-normal noise; median of 3
seeds): clean ones hold two strays at 5% and 10% noise in 0%, 20% in 0.03%, 30% in 1.3%; two runs 3x off are found in
98-100% (both one way or one each way, 2% and 10% noise), 10x off in all, 2x off in 18-31% (the edge by construction).

When the two at each end both pass against the other two ([1000, 1010, 10000, 10100]), the side split into two pairs
(``pairs_of``), and so when two at one end pass, the pairs' medians lie more than twice apart and the gap between the
pairs is more than ``SPREAD`` times the tighter pair's range: two strays, or a real level and two strays, or two modes,
which 4 runs cannot tell apart. No pair is reported as outliers: choosing the pair farther from the other side's median
(as first done) flagged the real level whenever the side had moved (pod [3000, 3050, 1000, 1010] beside a host near
1000: the 3000s, in 5,000 of 5,000 seeded sides), and when both sides drew on one two-level metric a 1% difference chose
each side's pair, reading as a difference that was not there. cell_analysis reports such a side as BIMODAL instead (its
two pairs' medians in place of its median, no ratio: the median lies between the pairs and describes neither), naming
both pairs and no culprit. The second case (review r8 M2): a tight pair beside a spread one ([1000, 1010, 3000, 9000])
flagged the spread pair, judged against the tight one, though which pair is tight is noise (the real level, moved
2.5-5x, was flagged in many seeded sides). Two at one end are never flagged either when a kept run lies more than twice
from their median.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from podtax_analyzer.stats.few_runs import FAR, SPREAD, beyond, few_to_check
from podtax_analyzer.stats.outliers import CUTOFF

_NONE = (np.zeros(0, dtype=np.int64), np.zeros(0))


@dataclass(frozen=True)
class Pairs:
    """A side of 4 measured runs split into two pairs: ``low`` and ``high``, their medians; ``boundary``, a value
    between them (the geometric mean of the low pair's top and the high pair's bottom)."""

    low: float
    high: float
    boundary: float

    @property
    def apart(self) -> float:
        """How many times the high pair's median is the low pair's."""
        return self.high / self.low


def _scores(lx: np.ndarray, strays: list[int]) -> np.ndarray | None:
    """Scores (in bounds: beyond 1) of ``strays`` against the other runs of ``lx``; None when either lies within."""
    rest = np.delete(lx, strays)
    bound = max(FAR, SPREAD * float(np.ptp(rest)))
    dev = lx[strays] - float(np.median(rest))
    return dev / bound if all(beyond(float(d), bound) for d in dev) else None


def _judged(x: np.ndarray) -> tuple[np.ndarray, dict[str, tuple[list[int], np.ndarray]]] | None:
    """The indices of the finite runs of ``x`` and, of the sets of two (the ends, the low end, the high end, as
    indices into those runs) that pass against the other two, each set and its scores; None unless 4 runs are
    measured, all positive (few_to_check)."""
    x = np.asarray(x, dtype=float)
    at = np.flatnonzero(np.isfinite(x))
    if len(at) != 4 or not few_to_check(x[at]):
        return None
    lx = np.log(x[at])
    order = np.argsort(lx, kind="stable")
    ends = {"both": [int(order[0]), int(order[3])], "low": [int(order[0]), int(order[1])],
            "high": [int(order[2]), int(order[3])]}
    return at, {k: (idx, s) for k, idx in ends.items() if (s := _scores(lx, idx)) is not None}


def pair_of(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The indices (into ``x``) of two strays of a side of 4 measured runs (few_to_check; a NaN beside them is left
    out) and their scores in bounds (signed; beyond 1). Empty when there are none, or when the side split into two
    pairs (pairs_of): 4 runs cannot tell which pair strayed."""
    judged = _judged(x)
    if judged is None or len(judged[1]) != 1 or _split(x, judged):  # none passed, both ends did, or a split
        return _NONE
    at, passed = judged
    ((end, (idx, s)),) = passed.items()
    lx = np.log(np.asarray(x, dtype=float)[at])
    if end != "both" and any(beyond(float(d), FAR) for d in np.delete(lx, idx) - float(np.median(lx[idx]))):
        return _NONE  # two at one end, the kept pair as far from them as they from it: which strayed is untold
    keep = np.argsort(at[idx])
    return at[idx][keep], s[keep]


def _split(x: np.ndarray, judged: tuple[np.ndarray, dict[str, tuple[list[int], np.ndarray]]]) -> bool:
    """Whether a side of 4 measured runs of which a set of two passed (_judged) lies in two pairs (module doc): both
    ends pass, or the pairs' medians are more than twice apart (``FAR``) and the gap between them more than
    ``SPREAD`` times the tighter pair's range (log values)."""
    if {"low", "high"} <= judged[1].keys():
        return True
    if not judged[1]:
        return False
    lx = np.sort(np.log(np.asarray(x, dtype=float)[judged[0]]))
    tighter = min(float(lx[1] - lx[0]), float(lx[3] - lx[2]))
    return beyond(float(np.median(lx[2:]) - np.median(lx[:2])), FAR) and float(lx[2] - lx[1]) > SPREAD * tighter


def pairs_of(x: np.ndarray) -> Pairs | None:
    """The two pairs of a side of 4 measured runs when the two at each end pass against the other two (module doc),
    else None."""
    judged = _judged(x)
    if judged is None or not _split(x, judged):
        return None
    v = np.sort(np.asarray(x, dtype=float)[judged[0]])
    return Pairs(float(np.median(v[:2])), float(np.median(v[2:])), float(np.sqrt(v[1] * v[2])))


def pair_z(x: np.ndarray, z: np.ndarray, cutoff: float = CUTOFF) -> np.ndarray:
    """``z`` (few_runs_z's scores of the side ``x``) with two strays (pair_of) scored beyond ``cutoff`` (cutoff times
    their distance in bounds), so they are reported as outliers; unchanged when there are none."""
    idx, scores = pair_of(x)
    if not len(idx):
        return z
    z = np.array(z, dtype=float)
    z[idx] = cutoff * scores
    return z
