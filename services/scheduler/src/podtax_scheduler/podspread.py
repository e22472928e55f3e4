"""PodTopologySpread for `whenUnsatisfiable: DoNotSchedule`, as kube-scheduler's plugin of that name filters.

For each such constraint of the incoming pod, the domains are the values of `topologyKey` on the nodes that carry
EVERY constraint's key and pass the inclusion policies (`nodeAffinityPolicy: Honor`, the default: the pod's
nodeSelector and required node affinity; `nodeTaintsPolicy: Honor`: no taint it does not tolerate; Ignore: every
node). A domain's count is the pods on its nodes (bound and assumed, not terminating) in the pod's namespace that
match the constraint's `labelSelector` (plus `matchLabelKeys`: each key the pod carries, with the pod's value). A node
passes when it carries every key and, for each constraint, count(its domain) + (1 if the pod matches the selector)
- min(counts over the domains) <= maxSkew, where the minimum is 0 while there are fewer domains than `minDomains`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
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


def parse_constraints(spec: Mapping[str, Any], pod_labels: Mapping[str, str]) -> tuple[SpreadConstraint, ...]:
    """The pod's DoNotSchedule constraints (ScheduleAnyway ones only score, and no score here reads them)."""
    out = []
    for c in spec.get("topologySpreadConstraints") or ():
        if (c.get("whenUnsatisfiable") or "DoNotSchedule") != "DoNotSchedule":
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


@dataclass(slots=True)
class SpreadCycle:
    """PreFilter's state: per constraint, the count per domain value and the minimum the skew is taken from."""

    counts: list[dict[str, int]]
    minimum: list[int]
    self_match: list[int]


def prefilter(pod: Spreading, nodes: Iterable[tuple[Mapping[str, str], bool, bool, Iterable[Counted]]]) -> SpreadCycle:
    """`nodes`: (labels, passes the pod's node affinity, tolerates its taints, pods on it) of every node."""
    constraints = pod.spread_constraints
    counts: list[dict[str, int]] = [{} for _ in constraints]
    for labels, affinity_ok, taints_ok, pods in nodes:
        if not all(c.topology_key in labels for c in constraints):
            continue
        eligible = [(not c.honor_affinity or affinity_ok) and (not c.honor_taints or taints_ok) for c in constraints]
        if not any(eligible):
            continue
        matched = [0] * len(constraints)
        for other in pods:
            if other.deleting or other.namespace != pod.namespace:
                continue
            for i, c in enumerate(constraints):
                if eligible[i] and c.selector.matches(other.labels):
                    matched[i] += 1
        for i, c in enumerate(constraints):
            if eligible[i]:
                value = labels[c.topology_key]
                counts[i][value] = counts[i].get(value, 0) + matched[i]
    minimum = [0 if len(cnt) < c.min_domains or not cnt else min(cnt.values())
               for c, cnt in zip(constraints, counts, strict=True)]
    self_match = [int(c.selector.matches(pod.labels)) for c in constraints]
    return SpreadCycle(counts, minimum, self_match)


def filter_node(pod: Spreading, cycle: SpreadCycle, labels: Mapping[str, str]) -> str | None:
    constraints = pod.spread_constraints
    if not all(c.topology_key in labels for c in constraints):
        return MISSING_LABEL_REASON
    for i, c in enumerate(constraints):
        skew = cycle.counts[i].get(labels[c.topology_key], 0) + cycle.self_match[i] - cycle.minimum[i]
        if skew > c.max_skew:
            return CONSTRAINTS_REASON
    return None


def feasible_mask(pod: Spreading, cycle: SpreadCycle, alive: np.ndarray,
                  domain: Callable[[str], Mapping[str, np.ndarray]]) -> np.ndarray:
    """Vector form of :func:`filter_node` over node slots (`domain` as in podaffinity.feasible_mask)."""
    n = len(alive)
    mask = alive.copy()
    for i, c in enumerate(pod.spread_constraints):
        ok = np.zeros(n, dtype=bool)
        for value, idx in domain(c.topology_key).items():
            skew = cycle.counts[i].get(value, 0) + cycle.self_match[i] - cycle.minimum[i]
            if skew <= c.max_skew:
                ok[idx[idx < n]] = True
        mask &= ok  # a node without the key is in no domain
    return mask
