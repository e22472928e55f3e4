"""One scheduling decision: filter, score, pick (ties at random), or explain why nothing fits."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from podtax_scheduler.filters import count_reasons, failure_message
from podtax_scheduler.model import PodInfo
from podtax_scheduler.scoring import ScorePlugin
from podtax_scheduler.state import ClusterState

TOP_CANDIDATES = 5


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
    idx = state.feasible(pod)
    if len(idx) == 0:
        reasons = count_reasons(state.explain(pod).values())
        return Decision(None, message=failure_message(len(state.nodes), reasons))
    cycle: dict[str, Any] = {}
    total = np.zeros(len(idx))
    weight_sum = 0.0
    per_plugin: dict[str, np.ndarray] = {}
    for plugin in plugins:
        w = float(weights.get(plugin.name, 0.0))
        if w <= 0:
            continue
        s = plugin.score(pod, state, idx, cycle)
        per_plugin[plugin.name] = s
        total += w * s
        weight_sum += w
    if weight_sum > 0:
        total /= weight_sum
    best = float(total.max())
    ties = np.flatnonzero(total >= best - 1e-9)
    pick = int(ties[rng.randrange(len(ties))]) if len(ties) > 1 else int(ties[0])
    k = min(TOP_CANDIDATES, len(idx))
    top = np.argpartition(-total, k - 1)[:k] if len(idx) > k else np.arange(len(idx))
    order = sorted((int(j) for j in top), key=lambda j: (j != pick, -total[j]))
    names = state.names
    candidates = [(str(names[idx[j]]), round(float(total[j]), 3)) for j in order]
    node = str(names[idx[pick]])
    details = dict(cycle)
    details["scores"] = {name: round(float(s[pick]), 3) for name, s in per_plugin.items()}
    return Decision(node, candidates, f"Successfully assigned {pod.key} to {node}", len(idx), details)
