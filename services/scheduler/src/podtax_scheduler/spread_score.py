"""PodTopologySpread's score for `whenUnsatisfiable: ScheduleAnyway`, as kube-scheduler's plugin scores (scoring.go).

- Candidates (the nodes that passed the filters) without every constraint's topologyKey are ignored: they score 0.
- For each constraint, the count of a domain is the pods (bound and assumed, not terminating) in the pod's namespace
  matching its labelSelector (plus matchLabelKeys; `{}` counts none) on the nodes that carry every constraint's key
  and pass its inclusion policies (nodeAffinityPolicy, nodeTaintsPolicy, as the filter); only the domains of the
  candidates are counted. For `kubernetes.io/hostname` the count is the node's own pods.
- A node's raw score is round(sum over constraints of count x log(size + 2) + (maxSkew - 1)), where size is the number
  of the candidates' domains of that key (the candidates themselves for the hostname): a constraint over few domains
  is not watered down by one over many.
- Normalised and inverted over the candidates not ignored: 100 x (max + min - raw) // max (integer), 100 for all when
  max is 0: the least crowded domain scores 100.

A pod without ScheduleAnyway constraints skips the plugin (kube-scheduler's PreScore Skip): it neither scores nor
weighs in the total. The cluster's default constraints (which kube-scheduler applies to a pod with no constraints at
all, selecting its Service's or ReplicaSet's pods) are not applied: this scheduler does not watch those objects.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from podtax_scheduler.filters import NodeAffinity, TaintToleration
from podtax_scheduler.model import PodInfo
from podtax_scheduler.podspread import SpreadConstraint
from podtax_scheduler.state import ClusterState

HOSTNAME = "kubernetes.io/hostname"
MAX_NODE_SCORE = 100


def normalizing_weight(size: int) -> float:
    """kube-scheduler's topologyNormalizingWeight: log(size + 2)."""
    return math.log(size + 2)


def normalize(raw: np.ndarray) -> np.ndarray:
    """kube-scheduler's NormalizeScore of PodTopologySpread over the scored (not ignored) nodes' int raw scores."""
    if raw.size == 0:
        return raw.astype(float)
    hi = max(int(raw.max()), 0)
    if hi == 0:
        return np.full(raw.size, float(MAX_NODE_SCORE))
    lo = int(raw.min())
    return ((MAX_NODE_SCORE * (hi + lo - raw)) // hi).astype(float)


class PodTopologySpreadScore:
    """kube-scheduler's PodTopologySpread score plugin, for the pod's ScheduleAnyway constraints."""

    name = "PodTopologySpread"

    def _eligible(self, pod: PodInfo, state: ClusterState, c: SpreadConstraint, has_all: np.ndarray) -> np.ndarray:
        """The nodes whose pods count for constraint `c`: every key, and its inclusion policies."""
        n = len(has_all)
        mask = has_all
        if c.honor_affinity:
            mask = mask & state._plugin_mask(pod, NodeAffinity())[:n]
        if c.honor_taints:
            mask = mask & state._plugin_mask(pod, TaintToleration())[:n]
        return mask

    def score(self, pod: PodInfo, state: ClusterState, idx: np.ndarray, cycle: dict[str, Any]) -> np.ndarray | None:
        constraints = pod.soft_spread_constraints
        if not constraints or len(idx) == 0:
            return None
        n = state.size
        codes = [state._codes(c.topology_key) for c in constraints]
        has_all = state.alive[:n].copy()
        for _, code in codes:
            has_all &= code[:n] >= 0
        scored = has_all[idx]
        cand = idx[scored]
        placed = [(other, state.slot[name]) for uid in state._carrying(c.selector for c in constraints)
                  if (other := state.placed.get(uid)) is not None and not other.deleting
                  and other.namespace == pod.namespace and (name := state.pod_node.get(uid)) in state.slot]
        total = np.zeros(len(cand))
        for c, (values, code) in zip(constraints, codes, strict=True):
            slots = np.array([] if c.selector.empty else [s for other, s in placed if c.selector.matches(other.labels)],
                             dtype=np.int64)
            if c.topology_key == HOSTNAME:
                count = np.bincount(slots, minlength=n)[cand]
                size = len(cand)
            else:
                code = code[:n]
                counted = slots[self._eligible(pod, state, c, has_all)[slots]]
                count = np.bincount(code[counted], minlength=len(values))[code[cand]]
                size = len(np.unique(code[cand]))
            total += count * normalizing_weight(size) + float(c.max_skew - 1)
        out = np.zeros(len(idx))
        out[scored] = normalize(np.floor(total + 0.5).astype(np.int64))  # math.Round: the values are not negative
        return out
