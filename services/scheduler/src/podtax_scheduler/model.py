"""Parsed, precomputed views of pods and nodes: what the plugins read on the hot path.

The informers keep raw API objects (plain dicts from JSON); each pod and node is parsed once into
a :class:`PodInfo` / :class:`NodeInfo` so filters never walk nested dicts per scheduling attempt.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from podtax_scheduler import quantity
from podtax_scheduler.podaffinity import (
    AffinityTerm,
    ScoringTerms,
    WeightedTerm,
    parse_terms,
    preferred_terms,
    required_terms,
)
from podtax_scheduler.podspread import SpreadConstraint, parse_constraints
from podtax_scheduler.quantity import CPU, MEMORY, PODS

ARCH_LABEL = "kubernetes.io/arch"
PODTAX_ARCH_LABEL = "podtax.io/arch"
BENCHMARK_LABELS = ("test", "podtax.io/benchmark")
PARAMS_ANNOTATION = "podtax.io/params"
# Set by tools/kubesim on every node it makes: its exec kubelet runs a pod's benchmarks on the host that runs kubesim,
# whatever the node's kubernetes.io/arch says (a simulated arm64 node's runs are this host's native ones).
SIMULATED_ANNOTATION = "podtax.io/simulated"
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
DEFAULT_MAX_PODS = 110
# uname -m and Debian names of Kubernetes' (Go's) architectures: a 32-bit Raspberry Pi OS says armv7l (Pi 2-4) or
# armv6l (Pi 1, Zero), or armv8l (a 32-bit userland on a 64-bit kernel), Debian armhf or armel; its kubelet labels
# the node kubernetes.io/arch=arm. Debian's ppc64el, mips64el and mipsel are Go's ppc64le, mips64le and mipsle.
_ARCH_ALIASES = {"x86_64": "amd64", "x86-64": "amd64", "aarch64": "arm64", "armv8": "arm64",
                 "armv8l": "arm", "armv7l": "arm", "armv7": "arm", "armv6l": "arm", "armhf": "arm", "armel": "arm",
                 "i386": "386", "i486": "386", "i586": "386", "i686": "386",
                 "ppc64el": "ppc64le", "mips64el": "mips64le", "mipsel": "mipsle"}


def normalize_arch(arch: str) -> str:
    return _ARCH_ALIASES.get(arch.lower(), arch.lower())


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""  # empty: all effects

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True  # empty key with Exists tolerates every taint
        return bool(self.key) and self.value == taint.value


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class Requirement:
    """One matchExpressions (or matchFields, `field=True`) entry of a node selector term."""

    key: str
    operator: str
    values: tuple[str, ...] = ()
    field: bool = False


Term = tuple[Requirement, ...]


def _requirement(raw: dict[str, Any], field_: bool) -> Requirement:
    return Requirement(str(raw.get("key", "")), str(raw.get("operator", "")),
                       tuple(str(v) for v in raw.get("values") or ()), field_)


def _terms(affinity: dict[str, Any] | None) -> tuple[Term, ...] | None:
    """Required node affinity terms; None when the pod has none (an empty list matches nothing)."""
    na = ((affinity or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if not na:
        return None
    terms: list[Term] = []
    for t in na.get("nodeSelectorTerms") or ():
        reqs = [_requirement(e, False) for e in t.get("matchExpressions") or ()]
        reqs += [_requirement(e, True) for e in t.get("matchFields") or ()]
        terms.append(tuple(reqs))
    return tuple(terms)


def container_requests(spec: dict[str, Any]) -> dict[str, int]:
    """Effective pod requests: max(sum of containers + sidecars, each init container) + overhead."""
    total: dict[str, int] = {}
    for c in spec.get("containers") or ():
        for res, q in (((c.get("resources") or {}).get("requests")) or {}).items():
            total[res] = total.get(res, 0) + quantity.to_int(res, q)
    init_max: dict[str, int] = {}
    for c in spec.get("initContainers") or ():
        reqs = ((c.get("resources") or {}).get("requests")) or {}
        if c.get("restartPolicy") == "Always":  # sidecar: runs alongside the app containers
            for res, q in reqs.items():
                total[res] = total.get(res, 0) + quantity.to_int(res, q)
            continue
        for res, q in reqs.items():
            init_max[res] = max(init_max.get(res, 0), quantity.to_int(res, q))
    for res, v in init_max.items():
        total[res] = max(total.get(res, 0), v)
    for res, q in (spec.get("overhead") or {}).items():
        total[res] = total.get(res, 0) + quantity.to_int(res, q)
    return {k: v for k, v in total.items() if v > 0}


@dataclass(slots=True)
class PodInfo:
    uid: str
    namespace: str
    name: str
    scheduler_name: str = "default-scheduler"
    node_name: str = ""
    phase: str = "Pending"
    deleting: bool = False
    priority: int = 0
    resource_version: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    node_selector: dict[str, str] = field(default_factory=dict)
    required_terms: tuple[Term, ...] | None = None
    signature: str = ""
    scheduled: tuple[str, str, str] | None = None  # its PodScheduled condition: (status, reason, message)
    gated: bool = False  # spec.schedulingGates not empty: not ready to be scheduled (the API refuses its binding)
    affinity_terms: tuple[AffinityTerm, ...] = ()  # required pod affinity
    anti_affinity_terms: tuple[AffinityTerm, ...] = ()  # required pod anti-affinity
    spread_constraints: tuple[SpreadConstraint, ...] = ()  # topology spread, whenUnsatisfiable: DoNotSchedule
    soft_spread_constraints: tuple[SpreadConstraint, ...] = ()  # whenUnsatisfiable: ScheduleAnyway (scored)
    preferred_affinity_terms: tuple[WeightedTerm, ...] = ()  # preferred pod affinity (scored)
    preferred_anti_affinity_terms: tuple[WeightedTerm, ...] = ()  # preferred pod anti-affinity (scored)

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> PodInfo:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        affinity = spec.get("affinity")
        tolerations_raw = spec.get("tolerations") or []
        node_selector = {str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()}
        labels = meta.get("labels") or {}
        namespace = meta.get("namespace", "default")
        info = cls(
            uid=meta.get("uid", ""), namespace=namespace, name=meta.get("name", ""),
            scheduler_name=spec.get("schedulerName") or "default-scheduler",
            node_name=spec.get("nodeName") or "", phase=status.get("phase") or "Pending",
            deleting=bool(meta.get("deletionTimestamp")), priority=int(spec.get("priority") or 0),
            resource_version=str(meta.get("resourceVersion", "")),
            labels=labels, annotations=meta.get("annotations") or {},
            requests=container_requests(spec),
            tolerations=tuple(Toleration(str(t.get("key") or ""), str(t.get("operator") or "Equal"),
                                         str(t.get("value") or ""), str(t.get("effect") or ""))
                              for t in tolerations_raw),
            node_selector=node_selector, required_terms=_terms(affinity),
            gated=bool(spec.get("schedulingGates")),
            affinity_terms=parse_terms(required_terms(spec, "podAffinity"), namespace, labels),
            anti_affinity_terms=parse_terms(required_terms(spec, "podAntiAffinity"), namespace, labels),
            spread_constraints=parse_constraints(spec, labels),
            soft_spread_constraints=parse_constraints(spec, labels, "ScheduleAnyway"),
            preferred_affinity_terms=preferred_terms(spec, "podAffinity", namespace, labels),
            preferred_anti_affinity_terms=preferred_terms(spec, "podAntiAffinity", namespace, labels),
            scheduled=next(((str(c.get("status") or ""), str(c.get("reason") or ""), str(c.get("message") or ""))
                            for c in status.get("conditions") or () if c.get("type") == "PodScheduled"), None),
        )
        # Pods with the same signature get the same answers from every static filter.
        info.signature = json.dumps([node_selector, (affinity or {}).get("nodeAffinity"), tolerations_raw,
                                     labels.get(PODTAX_ARCH_LABEL)], sort_keys=True, default=str)
        return info

    @property
    def selects_namespaces(self) -> bool:
        """Whether one of its pod affinity or anti-affinity terms has a non-empty namespaceSelector (its namespaces
        depend on namespace labels: namespaces.NamespaceLabels.resolved)."""
        return any(t.namespace_selector is not None for t in self.affinity_terms + self.anti_affinity_terms) or any(
            w.term.namespace_selector is not None
            for w in self.preferred_affinity_terms + self.preferred_anti_affinity_terms)

    @property
    def filters_on_namespace_labels(self) -> bool:
        """Whether one of its required pod affinity or anti-affinity terms has a non-empty namespaceSelector: whether
        it fits may change when a namespace is added or relabelled (queue.move_namespace_waiters_to_active)."""
        return any(t.namespace_selector is not None for t in self.affinity_terms + self.anti_affinity_terms)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def same_to_schedule(self, other: PodInfo) -> bool:
        """Whether every field a scheduling decision reads is the same: an update of only its status (such as the
        PodScheduled condition this scheduler sets) gives an unschedulable pod no new chance."""
        return (self.signature, self.requests, self.labels, self.annotations, self.priority, self.node_name,
                self.phase, self.deleting) == (other.signature, other.requests, other.labels, other.annotations,
                                               other.priority, other.node_name, other.phase, other.deleting)

    @property
    def scores_affinity(self) -> bool:
        """Whether, placed, it weighs in other pods' InterPodAffinity score: its required affinity and preferred terms
        (kube-scheduler's PodsWithAffinity, less required anti-affinity, which no longer scores)."""
        return bool(self.affinity_terms or self.preferred_affinity_terms or self.preferred_anti_affinity_terms)

    @property
    def scoring_terms(self) -> ScoringTerms:
        """The terms by which, placed, it weighs in other pods' InterPodAffinity score (pods with the same ones are
        matched against an incoming pod once: state.with_affinity)."""
        return self.affinity_terms, self.preferred_affinity_terms, self.preferred_anti_affinity_terms

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES

    @property
    def benchmark(self) -> str | None:
        for label in BENCHMARK_LABELS:
            if self.labels.get(label):
                return self.labels[label]
        return None

    @property
    def arch(self) -> str | None:
        """The architecture the pod requires, or None."""
        raw = self.labels.get(PODTAX_ARCH_LABEL) or self.node_selector.get(ARCH_LABEL)
        return normalize_arch(raw) if raw else None


@dataclass(slots=True)
class NodeInfo:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    ready: bool = True
    allocatable: dict[str, int] = field(default_factory=dict)
    requested: dict[str, int] = field(default_factory=dict)
    pods: dict[str, dict[str, int]] = field(default_factory=dict)  # uid -> requests (bound + assumed)
    simulated: bool = False  # a kubesim node (SIMULATED_ANNOTATION): its arch label is not the runs' machine

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> NodeInfo:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())
        alloc_raw = status.get("allocatable") or status.get("capacity") or {}
        allocatable = {str(k): quantity.to_int(k, v) for k, v in alloc_raw.items()}
        allocatable.setdefault(PODS, DEFAULT_MAX_PODS)
        return cls(
            name=meta.get("name", ""), labels=dict(meta.get("labels") or {}),
            taints=tuple(Taint(str(t.get("key") or ""), str(t.get("value") or ""), str(t.get("effect") or ""))
                         for t in spec.get("taints") or ()),
            unschedulable=bool(spec.get("unschedulable")), ready=ready, allocatable=allocatable,
            simulated=(meta.get("annotations") or {}).get(SIMULATED_ANNOTATION) == "true",
        )

    @property
    def arch(self) -> str | None:
        raw = self.labels.get(ARCH_LABEL)
        return normalize_arch(raw) if raw else None

    def static_signature(self) -> tuple[Any, ...]:
        """Everything the static filters read: a change here invalidates their cached answers."""
        return (tuple(sorted(self.labels.items())), self.taints, self.unschedulable, self.ready, self.simulated)

    @property
    def pod_count(self) -> int:
        return len(self.pods)

    def add_pod(self, uid: str, requests: dict[str, int]) -> None:
        if uid in self.pods:
            self.remove_pod(uid)
        self.pods[uid] = requests
        for res, q in requests.items():
            self.requested[res] = self.requested.get(res, 0) + q

    def remove_pod(self, uid: str) -> dict[str, int] | None:
        requests = self.pods.pop(uid, None)
        if requests is not None:
            for res, q in requests.items():
                self.requested[res] = self.requested.get(res, 0) - q
        return requests

    def free(self, resource: str) -> int:
        if resource == PODS:
            return self.allocatable.get(PODS, 0) - self.pod_count
        return self.allocatable.get(resource, 0) - self.requested.get(resource, 0)


__all__ = ["CPU", "MEMORY", "PODS", "NodeInfo", "PodInfo", "Requirement", "Taint", "Toleration"]
