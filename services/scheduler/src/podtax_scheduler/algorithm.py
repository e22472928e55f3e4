"""One scheduling decision: filter, score, pick (ties at random), or explain why nothing fits.

When a score plugin marks which candidates have evidence (``cycle["evidence"]``, a boolean per
candidate), the pick and the candidate order take those nodes first: a node without evidence never
outranks one with evidence (BenchmarkScore's ``unmeasured: last``). The total is the mean of the plugins' scores
weighted by the profile, over the plugins that did not skip the pod (a plugin that has nothing to say about it, such as
InterPodAffinity for a pod without preferences, neither scores nor dilutes the others)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from podtax_scheduler import prefilter
from podtax_scheduler.filters import count_reasons, failure_message
from podtax_scheduler.model import PodInfo
from podtax_scheduler.scoring import ScorePlugin
from podtax_scheduler.state import ClusterState

TOP_CANDIDATES = 5
EVIDENCE_BONUS = 1000.0  # above any weighted total (0..100)


@dataclass(slots=True)
class Decision:
    node: str | None
    candidates: list[tuple[str, float]] = field(default_factory=list)  # best first, total score 0..100
    message: str = ""
    feasible: int = 0
    details: dict[str, Any] = field(default_factory=dict)


def decide(pod: PodInfo, state: ClusterState, plugins: Sequence[ScorePlugin], weights: Mapping[str, float],
           rng: random.Random | None = None) -> Decision:
    """Choose a node for `pod` (the caller holds ``state.lock``)."""
    rng = rng or random.Random()
    pre = state.prefilter(pod)  # once per pod: the filters' and the explanations' PreFilter
    idx = state.feasible(pod, pre)
    if len(idx) == 0:
        reasons = count_reasons(state.explain(pod, pre=pre).values())
        return Decision(None, message=failure_message(len(state.nodes), reasons))
    cycle: dict[str, Any] = {prefilter.KEY: pre}
    total = np.zeros(len(idx))
    weight_sum = 0.0
    per_plugin: dict[str, np.ndarray] = {}
    for plugin in plugins:
        w = float(weights.get(plugin.name, 0.0))
        if w <= 0:
            continue
        s = plugin.score(pod, state, idx, cycle)
        if s is None:  # skipped: nothing to say about this pod
            continue
        per_plugin[plugin.name] = s
        total += w * s
        weight_sum += w
    if weight_sum > 0:
        total /= weight_sum
    evidence = cycle.get("evidence")
    rank = total + EVIDENCE_BONUS * evidence if evidence is not None and evidence.any() else total
    best = float(rank.max())
    ties = np.flatnonzero(rank >= best - 1e-9)
    pick = int(ties[rng.randrange(len(ties))]) if len(ties) > 1 else int(ties[0])
    k = min(TOP_CANDIDATES, len(idx))
    top = np.argpartition(-rank, k - 1)[:k] if len(idx) > k else np.arange(len(idx))
    order = sorted((int(j) for j in top), key=lambda j: (j != pick, -rank[j]))
    names = state.names
    candidates = [(str(names[idx[j]]), round(float(total[j]), 3)) for j in order]
    node = str(names[idx[pick]])
    details = {k: v for k, v in cycle.items() if k != prefilter.KEY}
    details["scores"] = {name: round(float(s[pick]), 3) for name, s in per_plugin.items()}
    return Decision(node, candidates, f"Successfully assigned {pod.key} to {node}", len(idx), details)
