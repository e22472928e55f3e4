"""Filter plugins: each a pure function of (pod, node) that returns None (fits) or its reason(s).

Reasons are kube-scheduler's texts so `kubectl describe pod` reads the same as for the default
scheduler; :func:`failure_message` counts them into "0/5 nodes are available: ...".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import ClassVar, Protocol

from podtax_scheduler.model import NodeInfo, PodInfo, Requirement, Taint, Term
from podtax_scheduler.quantity import PODS

Status = str | tuple[str, ...] | None
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


class FilterPlugin(Protocol):
    name: ClassVar[str]
    static: ClassVar[bool]  # True: answer depends only on the pod's spec and the node's labels/taints/state

    def filter(self, pod: PodInfo, node: NodeInfo) -> Status: ...


class NodeUnschedulable:
    name = "NodeUnschedulable"
    static = True
    REASON = "node(s) were unschedulable"

    def filter(self, pod: PodInfo, node: NodeInfo) -> Status:
        if not node.unschedulable:
            return None
        taint = Taint(UNSCHEDULABLE_TAINT, "", "NoSchedule")
        if any(t.tolerates(taint) for t in pod.tolerations):
            return None
        return self.REASON


class NodeReady:
    name = "NodeReady"
    static = True
    REASON = "node(s) were not ready"

    def filter(self, pod: PodInfo, node: NodeInfo) -> Status:
        return None if node.ready else self.REASON


class NodeArchitecture:
    name = "NodeArchitecture"
    static = True
    REASON = "node(s) didn't match the pod's architecture"

    def filter(self, pod: PodInfo, node: NodeInfo) -> Status:
        wanted = pod.arch
        if wanted is None or node.arch == wanted:
            return None
        return self.REASON


def _requirement_matches(req: Requirement, node: NodeInfo) -> bool:
    if req.field:
        if req.key != "metadata.name":
            return False
        present, value = True, node.name
    else:
        present = req.key in node.labels
        value = node.labels.get(req.key, "")
    op = req.operator
    if op == "In":
        return present and value in req.values
    if op == "NotIn":
        return not present or value not in req.values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(req.values) != 1:
            return False
        try:
            have, bound = int(value), int(req.values[0])
        except ValueError:
            return False
        return have > bound if op == "Gt" else have < bound
    return False  # unknown operator: the API server would have rejected it


def term_matches(term: Term, node: NodeInfo) -> bool:
    """Expressions of one term are ANDed; an empty term matches no node (as in Kubernetes)."""
    return bool(term) and all(_requirement_matches(r, node) for r in term)


class NodeAffinity:
    """spec.nodeSelector (every label must match) and required node affinity (terms ORed)."""

    name = "NodeAffinity"
    static = True
    REASON = "node(s) didn't match Pod's node affinity/selector"

    def filter(self, pod: PodInfo, node: NodeInfo) -> Status:
        labels = node.labels
        for key, value in pod.node_selector.items():
            if labels.get(key) != value:
                return self.REASON
        terms = pod.required_terms
        if terms is not None and not any(term_matches(t, node) for t in terms):
            return self.REASON
        return None


class TaintToleration:
    name = "TaintToleration"
    static = True
    REASON = "node(s) had untolerated taint"
    EFFECTS = ("NoSchedule", "NoExecute")

    def filter(self, pod: PodInfo, node: NodeInfo) -> Status:
        for taint in node.taints:
            if taint.effect not in self.EFFECTS:
                continue
            if not any(t.tolerates(taint) for t in pod.tolerations):
                return f"{self.REASON} {{{taint.key}: {taint.value}}}"
        return None


class NodeResourcesFit:
    """Requests against allocatable minus what bound and assumed (ledger) pods already request."""

    name = "NodeResourcesFit"
    static = False
    TOO_MANY_PODS = "Too many pods"
    INSUFFICIENT = "Insufficient {}"

    def filter(self, pod: PodInfo, node: NodeInfo) -> Status:
        reasons: list[str] = []
        if node.free(PODS) < 1:
            reasons.append(self.TOO_MANY_PODS)
        for res, q in pod.requests.items():
            if q > 0 and node.free(res) < q:
                reasons.append(self.INSUFFICIENT.format(res))
        if not reasons:
            return None
        return reasons[0] if len(reasons) == 1 else tuple(reasons)


DEFAULT_FILTERS: tuple[FilterPlugin, ...] = (
    NodeUnschedulable(), NodeReady(), NodeArchitecture(), NodeAffinity(), TaintToleration(), NodeResourcesFit(),
)


def run_filters(pod: PodInfo, node: NodeInfo, plugins: Sequence[FilterPlugin] = DEFAULT_FILTERS) -> Status:
    """The first failing plugin's status (like kube-scheduler), or None when the node fits."""
    for plugin in plugins:
        status = plugin.filter(pod, node)
        if status is not None:
            return status
    return None


def count_reasons(statuses: Iterable[Status]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for status in statuses:
        if status is None:
            continue
        if isinstance(status, str):
            counts[status] += 1
        else:
            counts.update(status)
    return counts


def failure_message(total_nodes: int, reasons: Counter[str]) -> str:
    """kube-scheduler's FailedScheduling text: "0/5 nodes are available: 2 ..., 3 Insufficient cpu."."""
    if total_nodes == 0:
        return "0/0 nodes are available: no nodes available to schedule pods."
    parts = sorted(f"{n} {reason}" for reason, n in reasons.items())
    return f"0/{total_nodes} nodes are available: {', '.join(parts)}."
