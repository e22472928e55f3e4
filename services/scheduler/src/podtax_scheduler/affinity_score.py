"""InterPodAffinity's score, as kube-scheduler's plugin of that name scores (its scoring.go).

Over the existing pods (bound and assumed), each (topology key, value) of the node an existing pod is on gains:

- for each preferred pod affinity term of the incoming pod that the existing pod matches: the term's weight;
- for each preferred pod anti-affinity term of the incoming pod that it matches: minus the term's weight;
- symmetry, for each of the existing pod's terms that the incoming pod matches: `hard_pod_affinity_weight` (default 1)
  for a required affinity term, the weight for a preferred affinity term, minus the weight for a preferred
  anti-affinity term (its required anti-affinity is the filter's, and scores nothing).

A term counts only when its pod's node carries the term's topologyKey. A node's raw score is the sum of the values of
its own (key, value) pairs; the candidates' raw scores are then stretched to 0..100 by min and max,
floor(100 x ((raw - min) / (max - min))), all 0 when they are equal. When no term matched at all the plugin has
nothing to say and is skipped (kube-scheduler's PreScore Skip): it neither scores nor weighs in the total.

Namespaces are read as for the filter (podaffinity.py): the incoming pod's namespaceSelectors unrolled into the
namespaces they select, an existing pod's matched against the labels of the incoming pod's namespace.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import numpy as np

from podtax_scheduler.model import PodInfo
from podtax_scheduler.podaffinity import AffinityTerm, Pair, ScoringTerms, WeightedTerm
from podtax_scheduler.state import ClusterState

MAX_NODE_SCORE = 100


class Scored(Protocol):
    """What the score reads of a pod (a model.PodInfo), incoming or existing."""

    @property
    def namespace(self) -> str: ...
    @property
    def labels(self) -> dict[str, str]: ...
    @property
    def affinity_terms(self) -> tuple[AffinityTerm, ...]: ...
    @property
    def preferred_affinity_terms(self) -> tuple[WeightedTerm, ...]: ...
    @property
    def preferred_anti_affinity_terms(self) -> tuple[WeightedTerm, ...]: ...


def topology_score(pod: Scored, existing: Iterable[tuple[Scored, Mapping[str, str]]], hard_weight: int = 1,
                   groups: Iterable[tuple[ScoringTerms, Iterable[Mapping[str, str]]]] = (),
                   ns_labels: Mapping[str, str] | None = None) -> dict[Pair, int]:
    """The summed weights per (topology key, value) over `existing` (the pods that may match the pod's preferred
    terms, each with its node's labels) and `groups` (the pods with terms of their own, grouped by those terms: each
    group's terms and the labels of the node of each of its pods; a group's terms are matched against the pod once,
    a namespaceSelector of theirs against `ns_labels`, the labels of the pod's namespace; the pod's own terms are
    resolved already); a pair is present once a term matched there, even if its weights cancel out (the module doc)."""
    out: dict[Pair, int] = {}

    def add(hits: list[tuple[AffinityTerm, int]], node_labels: Mapping[str, str]) -> None:
        for term, weight in hits:
            value = node_labels.get(term.topology_key)
            if value is not None:
                pair = (term.topology_key, value)
                out[pair] = out.get(pair, 0) + weight

    def matching(weighted: Iterable[tuple[AffinityTerm, int]], of: Scored,
                 of_ns: Mapping[str, str] | None = None) -> list[tuple[AffinityTerm, int]]:
        return [(t, w) for t, w in weighted if t.matches(of.namespace, of.labels, of_ns)]

    own = [(w.term, w.weight) for w in pod.preferred_affinity_terms] + [
        (w.term, -w.weight) for w in pod.preferred_anti_affinity_terms]
    if own:
        for other, node_labels in existing:
            add(matching(own, other), node_labels)
    for (required, preferred, preferred_anti), node_labels_of in groups:
        hits = matching([(t, hard_weight) for t in required if hard_weight > 0]
                        + [(w.term, w.weight) for w in preferred] + [(w.term, -w.weight) for w in preferred_anti], pod,
                        ns_labels)
        if hits:
            for node_labels in node_labels_of:
                add(hits, node_labels)
    return out


def normalize(raw: np.ndarray) -> np.ndarray:
    """kube-scheduler's NormalizeScore of InterPodAffinity: min-max to 0..100, truncated; 0 when all are equal."""
    if raw.size == 0:
        return raw.astype(float)
    lo, hi = int(raw.min()), int(raw.max())
    if hi - lo <= 0:
        return np.zeros(raw.size)
    return np.floor(float(MAX_NODE_SCORE) * ((raw - lo).astype(float) / float(hi - lo)))


class InterPodAffinityScore:
    """kube-scheduler's InterPodAffinity score plugin (preferred terms, and the symmetry of existing pods' terms)."""

    name = "InterPodAffinity"

    def __init__(self, hard_pod_affinity_weight: int = 1) -> None:
        self.hard_weight = hard_pod_affinity_weight

    def _on_nodes(self, pod: PodInfo, state: ClusterState,
                  uids: Iterable[str]) -> Iterable[tuple[PodInfo, dict[str, str]]]:
        """The placed pods of `uids` (but `pod`) on known nodes, each with its node's labels."""
        for uid in uids:
            node = state.nodes.get(state.pod_node.get(uid, ""))
            other = state.placed.get(uid)
            if node is not None and other is not None and uid != pod.uid:
                yield other, node.labels

    def _existing(self, pod: PodInfo, state: ClusterState) -> Iterable[tuple[PodInfo, dict[str, str]]]:
        """The placed pods that may match one of the pod's preferred terms (looked up by label)."""
        terms = pod.preferred_affinity_terms + pod.preferred_anti_affinity_terms
        return self._on_nodes(pod, state, state._carrying(w.term.selector for w in terms)) if terms else ()

    def _groups(self, pod: PodInfo,
                state: ClusterState) -> Iterable[tuple[ScoringTerms, Iterable[Mapping[str, str]]]]:
        """The placed pods with terms of their own (state.with_affinity), grouped by those terms."""
        for terms, uids in state.with_affinity.items():
            yield terms, (labels for _, labels in self._on_nodes(pod, state, uids))

    def score(self, pod: PodInfo, state: ClusterState, idx: np.ndarray, cycle: dict[str, Any]) -> np.ndarray | None:
        if len(idx) == 0 or not (pod.preferred_affinity_terms or pod.preferred_anti_affinity_terms
                                 or state.with_affinity):
            return None
        pod = state.namespaces.resolved(pod)
        topo = topology_score(pod, self._existing(pod, state), self.hard_weight, self._groups(pod, state),
                              state.namespaces.of(pod.namespace))
        if not topo:
            return None
        raw = np.zeros(state.size, dtype=np.int64)
        for (key, value), weight in topo.items():
            slots = state._domain(key).get(value)
            if slots is not None:
                raw[slots] += weight
        return normalize(raw[idx])
