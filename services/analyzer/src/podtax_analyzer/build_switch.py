"""Which runs a node score counts when its node switched tool builds: the runs of the build it runs now, after a clean
switch; every run otherwise.

A key's runs (cluster, node, env, test, params, metric) come in parts, one per tool build: the tool's version text
(celldata.VERSION_SQL) and its executable's architecture (runs.tool_arch; a run naming none is a part of its own).
Runs of two builds in one score measure two codes (CONFOUNDED, and the scheduler ignores it). A node whose sysbench
was replaced once (a 32-bit armhf build by the 64-bit one, or 1.0.18 by 1.0.20) would stay CONFOUNDED for that
parameter set for good, since a score has no window. So:

- a clean switch: every run of the other builds ended before the first run of the newest build (the build naming an
  architecture whose first run is the latest; a run's time is its end, else when it was stored, as the score's
  updated_at), and the newest build has at least MIN_KEPT runs: the score counts the newest build's runs only and says
  what it left out (`NodeScore.left_out`: the builds, their runs, and since when the kept build runs). Its n, interval
  and flags are of the runs kept: a switch leaving 3 runs gives a score of 3 runs with no interval, as any.
- runs naming no architecture (an imported older log, an older wrapper or agent) may be of any build of their version,
  so they never make a build the newest: those of the newest build's version from its first run on are counted with
  it; those that ended before its first run are left out as an older build's; any other (another version's after the
  switch, or some before and some after its first run) make the builds interleave. When no run names an
  architecture, no build is told newest: every run is counted, CONFOUNDED.
- a newest build of fewer than MIN_KEPT runs (a one-off trial of another binary after 30 runs): every run is counted,
  CONFOUNDED, as before the switch rule.
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
# Runs the newest build needs for a clean switch to be taken. Below, a one-off trial of another binary (1 run of
# sysbench 1.0.18 after 30 of 1.0.20) would replace the node's score by that run's figure and drop the rest; 3 runs
# are a build the node runs now, not a trial, and still no interval (scores.MIN_RUNS_CI): trusted as little as any.
MIN_KEPT = 3


@dataclass
class Part:
    """One tool build's counted runs of a key: values sorted ascending (metric unit), their exact running sum
    (scores.add_exact; None: sum the values), end times (epoch microseconds) of the first and newest, units and
    directions said, throttled, overlapping and emulated runs."""

    build: str
    arch: str | None
    vals: np.ndarray
    first_us: int
    last_us: int
    units: set[str] = field(default_factory=set)
    directions: set[bool] = field(default_factory=set)
    throttled: int = 0
    overlap: int = 0
    emulated: int = 0
    total: list[float] | None = None


def label(part: Part) -> str:
    """A build as `podtax scores` names it: 'sysbench 1.0.18 (arm)'."""
    return f"{part.build} ({part.arch})" if part.arch else part.build


def kept(parts: Sequence[Part]) -> tuple[list[Part], LeftOutRuns | None]:
    """The parts a score counts and what it left out (None: every part counted); see the module doc."""
    named = [p for p in parts if p.arch]
    if (len({p.build for p in parts}) < 2 and len({p.arch for p in named}) < 2) or not named:
        return list(parts), None
    newest = max(named, key=lambda p: p.first_us)  # a part naming no architecture is never the newest on its own
    counted = [p for p in parts if p is newest or (p.arch is None and p.build == newest.build
                                                   and p.first_us >= newest.first_us)]
    older = [p for p in parts if not any(p is c for c in counted)]
    if any(p.last_us >= newest.first_us for p in older):  # interleaved (or at the same time): both codes' runs
        return list(parts), None
    if sum(len(p.vals) for p in counted) < MIN_KEPT:  # a trial of another build, not a switch
        return list(parts), None
    return counted, LeftOutRuns(builds=sorted(label(p) for p in older), runs=sum(len(p.vals) for p in older),
                                since=EPOCH + timedelta(microseconds=newest.first_us))
