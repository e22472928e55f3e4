"""The namespaces' labels, which a pod affinity term's namespaceSelector reads (kube-scheduler's namespace lister).

The namespace informer writes them (:meth:`NamespaceLabels.sync`, :meth:`NamespaceLabels.upsert`); InterPodAffinity
reads them: the incoming pod's terms are resolved to namespace names (:meth:`NamespaceLabels.resolved`, cached until a
namespace is added, relabelled or removed), and an existing pod's term is matched against the labels of the incoming
pod's namespace (:meth:`NamespaceLabels.of`; a namespace not known has none, as kube-scheduler assumes).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from podtax_scheduler.model import PodInfo
from podtax_scheduler.podaffinity import AffinityTerm, WeightedTerm

NO_LABELS: Mapping[str, str] = {}


def _name_labels(obj: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    meta = obj.get("metadata") or {}
    return str(meta.get("name", "")), {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}


class NamespaceLabels:
    def __init__(self, lock: threading.RLock | None = None) -> None:
        self.lock = lock or threading.RLock()
        self.labels: dict[str, dict[str, str]] = {}
        self.gen = 0  # bumps whenever a namespace is added, relabelled or removed
        self._resolved: dict[AffinityTerm, tuple[int, AffinityTerm]] = {}

    def sync(self, items: Iterable[Mapping[str, Any]]) -> frozenset[str]:
        """The full list (the informer's list): the namespaces added or relabelled since the last one."""
        listed = dict(_name_labels(o) for o in items)
        with self.lock:
            changed = frozenset(name for name, labels in listed.items() if self.labels.get(name) != labels)
            if changed or listed.keys() != self.labels.keys():
                self.labels = listed
                self.gen += 1
            return changed

    def upsert(self, obj: Mapping[str, Any], deleted: bool = False) -> frozenset[str]:
        """A watch event: the namespace when it was added or its labels changed (what may let a pod schedule), else
        none."""
        name, labels = _name_labels(obj)
        with self.lock:
            if deleted:
                if self.labels.pop(name, None) is not None:
                    self.gen += 1
                return frozenset()
            if self.labels.get(name) == labels:
                return frozenset()
            self.labels[name] = labels
            self.gen += 1
            return frozenset((name,))

    def of(self, namespace: str) -> Mapping[str, str]:
        """The labels of `namespace`, none when it is not known."""
        return self.labels.get(namespace, NO_LABELS)

    def _term(self, term: AffinityTerm) -> AffinityTerm:
        cached = self._resolved.get(term)
        if cached is not None and cached[0] == self.gen:
            return cached[1]
        out = term.resolved(self.labels)
        if len(self._resolved) > 1024:
            self._resolved.clear()
        self._resolved[term] = (self.gen, out)
        return out

    def _weighted(self, terms: tuple[WeightedTerm, ...]) -> tuple[WeightedTerm, ...]:
        return tuple(WeightedTerm(w.weight, self._term(w.term)) for w in terms)

    def resolved(self, pod: PodInfo) -> PodInfo:
        """The pod with each namespaceSelector of its terms unrolled into the namespaces it selects now (the pod
        itself when it has none)."""
        if not pod.selects_namespaces:
            return pod
        with self.lock:
            return dataclasses.replace(
                pod, affinity_terms=tuple(self._term(t) for t in pod.affinity_terms),
                anti_affinity_terms=tuple(self._term(t) for t in pod.anti_affinity_terms),
                preferred_affinity_terms=self._weighted(pod.preferred_affinity_terms),
                preferred_anti_affinity_terms=self._weighted(pod.preferred_anti_affinity_terms))
