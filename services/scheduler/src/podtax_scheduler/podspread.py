"""PodTopologySpread for `whenUnsatisfiable: DoNotSchedule`, as kube-scheduler's plugin of that name filters
(ScheduleAnyway ones score: spread_score.py).

For each such constraint of the incoming pod, the domains are the values of `topologyKey` on the nodes that carry
EVERY constraint's key and pass the inclusion policies (`nodeAffinityPolicy: Honor`, the default: the pod's
nodeSelector and required node affinity; `nodeTaintsPolicy: Honor`: no taint it does not tolerate; Ignore: every
node). A domain's count is the pods on its nodes (bound and assumed, not terminating) in the pod's namespace that
match the constraint's `labelSelector` (plus `matchLabelKeys`: each key the pod carries, with the pod's value). A node
passes when it carries every key and, for each constraint, count(its domain) + (1 if the pod matches the selector)
- min(counts over the domains) <= maxSkew, where the minimum is 0 while there are fewer domains than `minDomains`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from podtax_scheduler.podaffinity import LabelSelector

CONSTRAINTS_REASON = "node(s) didn't match pod topology spread constraints"
MISSING_LABEL_REASON = f"{CONSTRAINTS_REASON} (missing required label)"


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int = 1
    honor_affinity: bool = True  # nodeAffinityPolicy: Honor (default)
    honor_taints: bool = False  # nodeTaintsPolicy: Ignore (default)


def parse_constraints(spec: Mapping[str, Any], pod_labels: Mapping[str, str],
                      when: str = "DoNotSchedule") -> tuple[SpreadConstraint, ...]:
    """The pod's constraints whose whenUnsatisfiable is `when`: DoNotSchedule ones filter (here), ScheduleAnyway ones
    only score (spread_score.py)."""
    out = []
    for c in spec.get("topologySpreadConstraints") or ():
        if (c.get("whenUnsatisfiable") or "DoNotSchedule") != when:
            continue
        selector = LabelSelector.parse(c.get("labelSelector"))
        keys = [str(k) for k in c.get("matchLabelKeys") or () if str(k) in pod_labels]
        if keys and not selector.nothing:
            selector = LabelSelector(selector.match_labels, selector.expressions
                                     + tuple((k, "In", frozenset({pod_labels[k]})) for k in keys))
        out.append(SpreadConstraint(int(c.get("maxSkew") or 1), str(c.get("topologyKey") or ""), selector,
                                    int(c.get("minDomains") or 1), (c.get("nodeAffinityPolicy") or "Honor") == "Honor",
                                    (c.get("nodeTaintsPolicy") or "Ignore") == "Honor"))
    return tuple(out)


class Counted(Protocol):
    @property
    def namespace(self) -> str: ...
    @property
    def labels(self) -> dict[str, str]: ...
    @property
    def deleting(self) -> bool: ...


class Spreading(Counted, Protocol):
    @property
    def spread_constraints(self) -> tuple[SpreadConstraint, ...]: ...


Codes = Callable[[str], tuple[list[str], np.ndarray]]  # label key -> (its values, each slot's value index or -1)


@dataclass(slots=True)
class SpreadCycle:
    """PreFilter's state per constraint: the count per domain value, and the minimum the skew is taken from."""

    counts: list[dict[str, int]]  # the domains holding a matching pod (any other domain counts 0)
    minimum: list[int]
    self_match: list[int]
    by_code: list[np.ndarray]  # the count per value index of the constraint's key (0 where no domain)


def prefilter(pod: Spreading, eligible: Sequence[np.ndarray], codes: Codes,
              placed: Iterable[tuple[Counted, int]]) -> SpreadCycle:
    """`eligible[i]`: over node slots, the domains' nodes of constraint i (they carry every constraint's key and pass
    its inclusion policies); `placed`: (pod, its node's slot) of the placed pods that may match a selector."""
    constraints = pod.spread_constraints
    placed = [(other, slot) for other, slot in placed if not other.deleting and other.namespace == pod.namespace]
    counts, minimum, by_code = [], [], []
    for c, elig in zip(constraints, eligible, strict=True):
        values, code = codes(c.topology_key)
        n = len(elig)
        arr = np.zeros(len(values), dtype=np.int64)
        # an empty selector ({}) counts no pod, as kube-scheduler's countPodsMatchSelector: it never blocks
        slots = [] if c.selector.empty else [slot for other, slot in placed
                                             if slot < n and elig[slot] and c.selector.matches(other.labels)]
        if slots:
            np.add.at(arr, code[np.array(slots, dtype=np.int64)], 1)
        seen = np.zeros(len(values) + 1, dtype=bool)
        seen[code[:n][elig]] = True  # a slot without the key (-1) marks the extra last one
        present = np.flatnonzero(seen[:-1])
        counts.append({values[int(k)]: int(arr[k]) for k in np.flatnonzero(arr)})
        minimum.append(0 if len(present) < c.min_domains or not len(present) else int(arr[present].min()))
        by_code.append(arr)
    self_match = [int(c.selector.matches(pod.labels)) for c in constraints]
    return SpreadCycle(counts, minimum, self_match, by_code)


def filter_node(pod: Spreading, cycle: SpreadCycle, labels: Mapping[str, str]) -> str | None:
    constraints = pod.spread_constraints
    if not all(c.topology_key in labels for c in constraints):
        return MISSING_LABEL_REASON
    for i, c in enumerate(constraints):
        skew = cycle.counts[i].get(labels[c.topology_key], 0) + cycle.self_match[i] - cycle.minimum[i]
        if skew > c.max_skew:
            return CONSTRAINTS_REASON
    return None


def feasible_mask(pod: Spreading, cycle: SpreadCycle, alive: np.ndarray, codes: Codes) -> np.ndarray:
    """Vector form of :func:`filter_node` over node slots."""
    n = len(alive)
    mask = alive.copy()
    for i, c in enumerate(pod.spread_constraints):
        code = codes(c.topology_key)[1][:n]
        ok = cycle.by_code[i] + cycle.self_match[i] - cycle.minimum[i] <= c.max_skew
        mask &= (code >= 0) & np.append(ok, False)[code]  # a node without the key (-1) is in no domain
    return mask
