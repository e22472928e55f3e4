"""Which runs a node score counts when its node switched tool builds: the runs of the build it runs now, after a clean
switch; every run otherwise.

A key's runs (cluster, node, env, test, params, metric) come in parts, one per tool build: the tool's version text
(celldata.VERSION_SQL) and its executable's architecture (runs.tool_arch; a run naming none is a part of its own).
Runs of two builds in one score measure two codes (CONFOUNDED, and the scheduler ignores it). A node whose sysbench
was replaced once (a 32-bit armhf build by the 64-bit one, or 1.0.18 by 1.0.20) would stay CONFOUNDED for that
parameter set for good, since a score has no window. So:

- a clean switch: every run of the other builds ended before the first run of the newest build (the build whose
  first run is the latest; a run's time is its end, else when it was stored, as the score's updated_at): the score
  counts the newest build's runs only and says what it left out (`NodeScore.left_out`: the builds, their runs, and
  since when the kept build runs). Its n, interval and flags are of the runs kept: a switch leaving 2 runs gives a
  score of 2 runs with no interval, as any.
- builds that interleave (a run of an older build after the newest one's first, or at the same time): every run is
  counted, CONFOUNDED as before.
- builds that do not confound (one version, at most one named architecture: an agent upgrade that started naming
  tool_arch): every run is counted, as before.

No run is deleted or changed: the rule is applied each time a score is computed (scores.node_scores, the service's
score_cache.ScoreCache), so a run of an older build stored later (an import) makes the builds interleave again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np
from podtax.events import LeftOutRuns

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class Part:
    """One tool build's counted runs of a key: values sorted ascending (metric unit), their exact running sum
    (scores.add_exact; None: sum the values), end times (epoch microseconds) of the first and newest, units and
    directions said, throttled and overlapping runs."""

    build: str
    arch: str | None
    vals: np.ndarray
    first_us: int
    last_us: int
    units: set[str] = field(default_factory=set)
    directions: set[bool] = field(default_factory=set)
    throttled: int = 0
    overlap: int = 0
    total: list[float] | None = None


def label(part: Part) -> str:
    """A build as `podtax scores` names it: 'sysbench 1.0.18 (arm)'."""
    return f"{part.build} ({part.arch})" if part.arch else part.build


def kept(parts: Sequence[Part]) -> tuple[list[Part], LeftOutRuns | None]:
    """The parts a score counts and what it left out (None: every part counted); see the module doc."""
    if len({p.build for p in parts}) < 2 and len({p.arch for p in parts if p.arch}) < 2:
        return list(parts), None
    newest = max(parts, key=lambda p: p.first_us)
    older = [p for p in parts if p is not newest]
    if any(p.last_us >= newest.first_us for p in older):  # interleaved (or at the same time): both codes' runs
        return list(parts), None
    return [newest], LeftOutRuns(builds=sorted(label(p) for p in older), runs=sum(len(p.vals) for p in older),
                                 since=EPOCH + timedelta(microseconds=newest.first_us))
