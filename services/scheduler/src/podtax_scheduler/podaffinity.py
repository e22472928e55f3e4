"""InterPodAffinity for required terms, as kube-scheduler's plugin of that name filters (its score, of preferred terms
and of existing pods' terms: affinity_score.py).

- the incoming pod's required pod affinity: on a node that has every term's topologyKey, each term needs an existing
  pod matching ALL the pod's terms in the node's domain of that key; when no existing pod anywhere matches them and
  the pod matches its own terms, any node with every key passes (the first pod of a group that attracts itself);
- the incoming pod's required pod anti-affinity: no existing pod matching a term in the node's domain of its key
  (a node without the key passes);
- existing pods' required anti-affinity (symmetry): no node sharing a (key, value) with an existing pod whose term
  matches the incoming pod.

Existing pods are the ones counted on nodes: bound and assumed (this scheduler's binds not yet seen by the informer).
A term's namespaces, as kube-scheduler reads them: its `namespaces` and, with a namespaceSelector, every namespace
whose labels match it (`{}`: every namespace); with neither, the pod's own namespace. The incoming pod's terms are
resolved to namespace names once an attempt (:meth:`AffinityTerm.resolved`, over the watched namespaces' labels); an
existing pod's term is matched against the labels of the incoming pod's namespace (none when it is not known).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
AFFINITY_REASON = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_REASON = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_REASON = "node(s) didn't satisfy existing pods anti-affinity rules"

Pair = tuple[str, str]  # (topology key, value)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """metav1.LabelSelector: matchLabels and matchExpressions ANDed; None (absent) matches nothing, {} everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    expressions: tuple[tuple[str, str, frozenset[str]], ...] = ()  # (key, operator, values)
    nothing: bool = False

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> LabelSelector:
        if raw is None:
            return cls(nothing=True)
        return cls(tuple((str(k), str(v)) for k, v in (raw.get("matchLabels") or {}).items()),
                   tuple((str(e.get("key", "")), str(e.get("operator", "")),
                          frozenset(str(v) for v in e.get("values") or ())) for e in raw.get("matchExpressions") or ()))

    def narrowing(self) -> list[tuple[str, str]] | None:
        """Label pairs one of which every matching pod carries (to look pods up by label), or None if there are none:
        the first matchLabels pair, else the values of the first In expression; [] for a selector matching nothing."""
        if self.nothing:
            return []
        if self.match_labels:
            return [self.match_labels[0]]
        for key, op, values in self.expressions:
            if op == "In":
                return [(key, v) for v in values]
        return None

    @property
    def empty(self) -> bool:
        return not self.nothing and not self.match_labels and not self.expressions

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for key, op, values in self.expressions:
            present = key in labels
            if op == "In":
                ok = present and labels[key] in values
            elif op == "NotIn":
                ok = not present or labels[key] not in values
            elif op == "Exists":
                ok = present
            elif op == "DoesNotExist":
                ok = not present
            else:  # the API server rejects other operators; an invalid selector matches nothing
                return False
            if not ok:
                return False
        return True


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """One PodAffinityTerm, resolved against the namespace of the pod that carries it."""

    selector: LabelSelector
    namespaces: frozenset[str] | None  # None: every namespace
    topology_key: str
    namespace_selector: LabelSelector | None = None  # a non-empty namespaceSelector: namespaces whose labels match

    def matches(self, namespace: str, labels: Mapping[str, str], ns_labels: Mapping[str, str] | None = None) -> bool:
        """Whether a pod of `namespace` (whose labels are `ns_labels`, read only by a namespaceSelector) with
        `labels` matches."""
        return (self.namespaces is None or namespace in self.namespaces
                or (self.namespace_selector is not None and self.namespace_selector.matches(ns_labels or {}))) \
            and self.selector.matches(labels)

    def resolved(self, ns_labels: Mapping[str, Mapping[str, str]]) -> AffinityTerm:
        """The term with its namespaceSelector unrolled into the names of the namespaces in `ns_labels` (name ->
        labels) that it selects, as kube-scheduler does for the incoming pod's terms."""
        if self.namespace_selector is None:
            return self
        chosen = {name for name, labels in ns_labels.items() if self.namespace_selector.matches(labels)}
        return AffinityTerm(self.selector, (self.namespaces or frozenset()) | chosen, self.topology_key)


def parse_terms(raw_terms: Iterable[Mapping[str, Any]] | None, own_namespace: str,
                own_labels: Mapping[str, str] | None = None) -> tuple[AffinityTerm, ...]:
    """Terms of the pod in `own_namespace` with `own_labels`: matchLabelKeys / mismatchLabelKeys add `key In` /
    `key NotIn` the pod's value of each key it carries to a labelSelector that is present, as the API server (1.31+)
    merges them at creation (merging an already merged term again changes nothing)."""
    labels = own_labels or {}
    terms = []
    for t in raw_terms or ():
        listed = frozenset(str(n) for n in t.get("namespaces") or ())
        raw_ns = t.get("namespaceSelector")
        ns_selector = None if raw_ns is None else LabelSelector.parse(raw_ns)
        if ns_selector is None:
            namespaces: frozenset[str] | None = listed or frozenset({own_namespace})
        elif ns_selector.empty:  # {}: every namespace
            namespaces, ns_selector = None, None
        else:
            namespaces = listed
        selector = LabelSelector.parse(t.get("labelSelector"))
        added = tuple((str(k), op, frozenset({labels[str(k)]}))
                      for field, op in (("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn"))
                      for k in t.get(field) or () if str(k) in labels)
        if added and not selector.nothing:
            selector = LabelSelector(selector.match_labels, selector.expressions + added)
        terms.append(AffinityTerm(selector, namespaces, str(t.get("topologyKey", "")), ns_selector))
    return tuple(terms)


def required_terms(spec: Mapping[str, Any], kind: str) -> list[Mapping[str, Any]]:
    """The raw required terms of `kind` (podAffinity or podAntiAffinity)."""
    return list((((spec.get("affinity") or {}).get(kind) or {}).get(REQUIRED)) or ())


@dataclass(frozen=True, slots=True)
class WeightedTerm:
    """One preferred term (WeightedPodAffinityTerm): its weight (1..100) and its term."""

    weight: int
    term: AffinityTerm


def preferred_terms(spec: Mapping[str, Any], kind: str, own_namespace: str,
                    own_labels: Mapping[str, str] | None = None) -> tuple[WeightedTerm, ...]:
    """The pod's preferred terms of `kind` (podAffinity or podAntiAffinity), parsed as :func:`parse_terms` does."""
    raw = list((((spec.get("affinity") or {}).get(kind) or {}).get(PREFERRED)) or ())
    terms = parse_terms([w.get("podAffinityTerm") or {} for w in raw], own_namespace, own_labels)
    return tuple(WeightedTerm(int(w.get("weight") or 0), t) for w, t in zip(raw, terms, strict=True))


# a placed pod's required affinity, preferred affinity and preferred anti-affinity terms (PodInfo.scoring_terms)
ScoringTerms = tuple[tuple[AffinityTerm, ...], tuple[WeightedTerm, ...], tuple[WeightedTerm, ...]]


def ungroup(groups: dict[Any, set[str]], key: Any, uid: str) -> None:
    """Take `uid` out of its group `key` of `groups` (placed pods grouped by their terms), and the group once empty."""
    if (uids := groups.get(key)) is not None:
        uids.discard(uid)
        if not uids:
            del groups[key]


class Placed(Protocol):
    """What the filter reads of an existing pod (a model.PodInfo)."""

    @property
    def namespace(self) -> str: ...
    @property
    def labels(self) -> dict[str, str]: ...
    @property
    def anti_affinity_terms(self) -> tuple[AffinityTerm, ...]: ...


class Incoming(Placed, Protocol):
    @property
    def affinity_terms(self) -> tuple[AffinityTerm, ...]: ...


@dataclass(slots=True)
class AffinityCycle:
    """PreFilter's counts per (topology key, value) for one incoming pod."""

    affinity: Counter[Pair]  # existing pods matching ALL the pod's affinity terms, per term's domain
    anti: Counter[Pair]  # existing pods matching one of the pod's anti-affinity terms
    existing_anti: Counter[Pair]  # existing pods whose anti-affinity term matches the pod
    matches_itself: bool  # the pod matches all its own affinity terms

    @property
    def idle(self) -> bool:
        return not self.affinity and not self.anti and not self.existing_anti


def prefilter(pod: Incoming, placed: Iterable[tuple[Placed, Mapping[str, str]]],
              with_anti: Iterable[tuple[tuple[AffinityTerm, ...], Iterable[Mapping[str, str]]]],
              ns_labels: Mapping[str, str] | None = None) -> AffinityCycle:
    """Count over `placed` (every existing pod with its node's labels) and `with_anti` (the existing pods with
    required anti-affinity, grouped by those terms: each group's terms, and the labels of the node of each of its
    pods); `ns_labels` are the labels of the pod's namespace (an existing pod's namespaceSelector reads them), the
    pod's own terms are resolved already (AffinityTerm.resolved). Walks `placed` only when the pod has terms of its
    own, and a group's nodes only when one of its terms matches the pod (kube-scheduler walks every such pod: the
    counts are the same)."""
    affinity: Counter[Pair] = Counter()
    anti: Counter[Pair] = Counter()
    existing_anti: Counter[Pair] = Counter()
    aff_terms, anti_terms = pod.affinity_terms, pod.anti_affinity_terms
    if aff_terms or anti_terms:
        for other, labels in placed:
            if aff_terms and all(t.matches(other.namespace, other.labels) for t in aff_terms):
                for t in aff_terms:
                    if t.topology_key in labels:
                        affinity[(t.topology_key, labels[t.topology_key])] += 1
            for t in anti_terms:
                if t.topology_key in labels and t.matches(other.namespace, other.labels):
                    anti[(t.topology_key, labels[t.topology_key])] += 1
    for group_terms, node_labels in with_anti:
        hits = [t for t in group_terms if t.matches(pod.namespace, pod.labels, ns_labels)]
        if not hits:
            continue
        for labels in node_labels:
            for t in hits:
                if t.topology_key in labels:
                    existing_anti[(t.topology_key, labels[t.topology_key])] += 1
    matches_itself = bool(aff_terms) and all(t.matches(pod.namespace, pod.labels) for t in aff_terms)
    return AffinityCycle(affinity, anti, existing_anti, matches_itself)


def satisfies_affinity(pod: Incoming, cycle: AffinityCycle, labels: Mapping[str, str]) -> bool:
    pods_exist = True
    for t in pod.affinity_terms:
        if t.topology_key not in labels:
            return False  # every term's key must be on the node
        if cycle.affinity[(t.topology_key, labels[t.topology_key])] <= 0:
            pods_exist = False
    return pods_exist or (not cycle.affinity and cycle.matches_itself)


def filter_node(pod: Incoming, cycle: AffinityCycle, labels: Mapping[str, str]) -> str | None:
    """kube-scheduler's InterPodAffinity Filter for one node: its reason, or None when the node passes."""
    if pod.affinity_terms and not satisfies_affinity(pod, cycle, labels):
        return AFFINITY_REASON
    if cycle.anti and any(t.topology_key in labels and cycle.anti[(t.topology_key, labels[t.topology_key])] > 0
                          for t in pod.anti_affinity_terms):
        return ANTI_AFFINITY_REASON
    if cycle.existing_anti and any(cycle.existing_anti[pair] > 0 for pair in labels.items()):
        return EXISTING_ANTI_AFFINITY_REASON
    return None


def feasible_mask(pod: Incoming, cycle: AffinityCycle, alive: np.ndarray,
                  domain: Callable[[str], Mapping[str, np.ndarray]]) -> np.ndarray:
    """Vector form of :func:`filter_node` over node slots; `domain(key)` maps each value of the label `key` to the
    slots of the nodes that carry it."""
    mask = alive.copy()
    n = len(mask)

    def slots_of(pairs: Iterable[Pair]) -> np.ndarray:
        out = np.zeros(n, dtype=bool)
        for key, value in pairs:
            idx = domain(key).get(value)
            if idx is not None:
                out[idx[idx < n]] = True
        return out

    if pod.affinity_terms:
        has_keys = alive.copy()
        exist = alive.copy()
        for t in pod.affinity_terms:
            has_keys &= slots_of((t.topology_key, v) for v in domain(t.topology_key))
            exist &= slots_of(p for p, c in cycle.affinity.items() if c > 0 and p[0] == t.topology_key)
        mask &= has_keys if (not cycle.affinity and cycle.matches_itself) else exist
    keys = {t.topology_key for t in pod.anti_affinity_terms}
    if cycle.anti and keys:
        mask &= ~slots_of(p for p, c in cycle.anti.items() if c > 0 and p[0] in keys)
    if cycle.existing_anti:
        mask &= ~slots_of(p for p, c in cycle.existing_anti.items() if c > 0)
    return mask
