"""A trivial built-in "default-scheduler": binds pods whose schedulerName is empty or
default-scheduler to the first feasible node (in cluster-file order). Feasible means: Ready, not
cordoned, nodeSelector and required node affinity match, NoSchedule/NoExecute taints tolerated.
It does not account for resources. Pods of any other schedulerName are left alone."""

from __future__ import annotations

import asyncio

from podtax_kubesim import resources as R
from podtax_kubesim.api import Api, set_condition
from podtax_kubesim.selectors import node_requirement
from podtax_kubesim.store import Event
from podtax_kubesim.util import Obj, deepcopy

NAME = "default-scheduler"


def tolerates(taint: Obj, tolerations: list[Obj]) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        if tol.get("operator") == "Exists":
            if not tol.get("key") or tol["key"] == taint.get("key"):
                return True
        elif tol.get("key") == taint.get("key") and tol.get("value", "") == taint.get("value", ""):
            return True
    return False


def _affinity_ok(pod: Obj, node: Obj) -> bool:
    terms = (((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
    if not terms:
        return True
    labels = node["metadata"].get("labels") or {}
    fields = {"metadata.name": node["metadata"]["name"]}
    for term in terms:
        if all(node_requirement(e, labels) for e in term.get("matchExpressions") or []) and \
                all(node_requirement(e, fields) for e in term.get("matchFields") or []):
            return True
    return False


def why_not(pod: Obj, node: Obj) -> str:
    """'' when the pod fits the node, else a short reason as kube-scheduler words it."""
    conds = {c["type"]: c["status"] for c in node.get("status", {}).get("conditions", [])}
    tolerations = pod["spec"].get("tolerations") or []
    if conds.get("Ready") != "True":
        return "node(s) were not ready"
    if node["spec"].get("unschedulable") and not tolerates(
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}, tolerations):
        return "node(s) were unschedulable"
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (pod["spec"].get("nodeSelector") or {}).items()):
        return "node(s) didn't match Pod's node affinity/selector"
    if not _affinity_ok(pod, node):
        return "node(s) didn't match Pod's node affinity/selector"
    for taint in node["spec"].get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(taint, tolerations):
            return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}"
    return ""


class DefaultScheduler:
    def __init__(self, api: Api, retry_seconds: float = 1.0) -> None:
        self.api, self.store = api, api.store
        self.queue: dict[tuple[str, str], None] = {}
        self.unschedulable: dict[tuple[str, str], str] = {}
        self.retry_seconds = retry_seconds
        self._scheduled = False
        self.store.listen(R.PODS, self._on_pod)
        self.store.listen(R.NODES, self._on_node)

    def start(self) -> None:
        asyncio.get_running_loop().call_later(self.retry_seconds, self._retry)

    @staticmethod
    def wants(pod: Obj) -> bool:
        spec = pod["spec"]
        return (not spec.get("nodeName") and spec.get("schedulerName", NAME) in ("", NAME)
                and not pod["metadata"].get("deletionTimestamp"))

    def _on_pod(self, ev: Event) -> None:
        key = (ev.obj["metadata"]["namespace"], ev.obj["metadata"]["name"])
        if ev.type != "DELETED" and self.wants(ev.obj):
            if key not in self.unschedulable:
                self._enqueue(key)
        else:
            self.unschedulable.pop(key, None)

    def _on_node(self, ev: Event) -> None:
        for key in list(self.unschedulable):
            self._enqueue(key)

    def _retry(self) -> None:
        for key in list(self.unschedulable):
            self._enqueue(key)
        asyncio.get_running_loop().call_later(self.retry_seconds, self._retry)

    def _enqueue(self, key: tuple[str, str]) -> None:
        self.queue[key] = None
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._drain)

    def _drain(self) -> None:
        self._scheduled = False
        while self.queue:
            key = next(iter(self.queue))
            del self.queue[key]
            pod = self.store.get(R.PODS, *key)
            if pod is not None and self.wants(pod):
                self.schedule(pod)

    def schedule(self, pod: Obj) -> None:
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
        reasons: dict[str, int] = {}
        nodes = list(self.store.items(R.NODES))
        for node in nodes:
            reason = why_not(pod, node)
            if not reason:
                self.unschedulable.pop(key, None)
                self.api.assign(pod, node["metadata"]["name"])
                self.api.record_event(pod, "Scheduled", f"Successfully assigned {key[0]}/{key[1]} to "
                                      f"{node['metadata']['name']}", component=NAME)
                return
            reasons[reason] = reasons.get(reason, 0) + 1
        message = f"0/{len(nodes)} nodes are available: " + ", ".join(
            f"{n} {r}" for r, n in sorted(reasons.items())) + "."
        if self.unschedulable.get(key) == message:
            return
        self.unschedulable[key] = message
        new = deepcopy(pod)
        set_condition(new["status"], "PodScheduled", "False", "Unschedulable", message)
        self.store.update(R.PODS, new)
        self.api.record_event(pod, "FailedScheduling", message, "Warning", component=NAME)
