"""TaintToleration's score, as kube-scheduler's plugin of that name scores (taint_toleration.go).

A `PreferNoSchedule` taint is how an operator says "avoid this node unless needed" (a Raspberry Pi beside x86
servers, a node being drained slowly): the filter lets such nodes pass, the score ranks them lower.

- A node's raw score is the number of its `PreferNoSchedule` taints the pod does not tolerate, counting only the
  pod's tolerations of that effect or of every effect (an empty `effect`).
- Normalised and inverted over the candidates: `100 - 100 x raw // max` (integer), as kube-scheduler's
  DefaultNormalizeScore(reverse): the node with the fewest intolerable taints scores 100.
- When every candidate has the same count (none: all would score 100; the same nonzero count: all would score 0,
  lowering every total by the plugin's weight) it changes no ranking: the plugin skips the pod and neither scores nor
  weighs in the total, as the other optional plugins do.
"""

from __future__ import annotations

import numpy as np

from podtax_scheduler.model import PodInfo, Taint, Toleration
from podtax_scheduler.state import ClusterState

EFFECT = "PreferNoSchedule"
MAX_NODE_SCORE = 100


def intolerable(taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]) -> int:
    """How many of `taints` (a node's PreferNoSchedule ones) no toleration in `tolerations` tolerates."""
    return sum(1 for taint in taints if not any(t.tolerates(taint) for t in tolerations))


def normalize(raw: np.ndarray) -> np.ndarray:
    """kube-scheduler's DefaultNormalizeScore(100, reverse=true): 100 - 100 x raw // max; all 100 when max is 0."""
    top = int(raw.max()) if raw.size else 0
    if top == 0:
        return np.full(raw.shape, float(MAX_NODE_SCORE))
    return (MAX_NODE_SCORE - (MAX_NODE_SCORE * raw.astype(np.int64)) // top).astype(float)


class TaintTolerationScore:
    """Each node's raw count is computed once per (node generation, the pod's PreferNoSchedule tolerations) into a
    column over the slots, so a decision reads `counts[idx]` (pods of one workload share their tolerations)."""

    name = "TaintToleration"
    MAX_COLUMNS = 64  # distinct toleration sets kept per node generation (cleared past it)

    def __init__(self) -> None:
        self._gen = -1
        self._tainted: list[tuple[int, tuple[Taint, ...]]] = []  # (slot, its PreferNoSchedule taints)
        self._counts: dict[tuple[Toleration, ...], np.ndarray | None] = {}

    def _column(self, state: ClusterState, tolerations: tuple[Toleration, ...]) -> np.ndarray | None:
        """Intolerable PreferNoSchedule taints per slot for `tolerations`; None when no node has one."""
        gen = (state.static_gen << 32) + state.layout_gen
        if gen != self._gen:
            self._gen, self._counts, self._tainted = gen, {}, []
            for i, name in enumerate(state.names):
                node = state.nodes.get(name) if name is not None else None
                prefer = tuple(t for t in node.taints if t.effect == EFFECT) if node is not None else ()
                if prefer:
                    self._tainted.append((i, prefer))
        if tolerations not in self._counts:
            if len(self._counts) >= self.MAX_COLUMNS:
                self._counts = {}
            counts = np.zeros(len(state.names), dtype=np.int64)
            for i, prefer in self._tainted:
                counts[i] = intolerable(prefer, tolerations)
            self._counts[tolerations] = counts if counts.any() else None
        return self._counts[tolerations]

    def score(self, pod: PodInfo, state: ClusterState, idx: np.ndarray, cycle: dict[str, object]) -> np.ndarray | None:
        if not len(idx):
            return None
        tolerations = tuple(t for t in pod.tolerations if not t.effect or t.effect == EFFECT)
        counts = self._column(state, tolerations)
        if counts is None:
            return None
        raw = counts[idx]
        if raw.min() == raw.max():  # every candidate alike: no ranking to change
            return None
        return normalize(raw)
