"""Builders of plain Kubernetes objects (dicts) for the scheduler tests and the benchmark."""

from __future__ import annotations

import uuid
from typing import Any

from podtax.events import NodeScore, now
from podtax_scheduler.state import ClusterState


def node(name: str, *, cpu: str = "4", memory: str = "8Gi", pods: int = 110, arch: str = "amd64",
         labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
         unschedulable: bool = False, ready: bool = True, extra: dict[str, str] | None = None) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra or {})}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/arch": arch,
                                              **(labels or {})}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {"allocatable": alloc, "capacity": alloc,
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def pod(name: str, *, namespace: str = "default", cpu: str | None = None, memory: str | None = None,
        test: str | None = "sysbench-cpu", scheduler: str = "benchmark-scheduler",
        node_selector: dict[str, str] | None = None, affinity: dict[str, Any] | None = None,
        tolerations: list[dict[str, Any]] | None = None, labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None, node_name: str | None = None, phase: str = "Pending",
        extra_requests: dict[str, str] | None = None, uid: str | None = None) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    requests.update(extra_requests or {})
    all_labels = dict(labels or {})
    if test:
        all_labels["test"] = test
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [
        {"name": "main", "image": "busybox", "resources": {"requests": requests} if requests else {}}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity:
        spec["affinity"] = affinity
    if tolerations:
        spec["tolerations"] = tolerations
    if node_name:
        spec["nodeName"] = node_name
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": all_labels}
    if uid is not None or node_name is not None:
        meta["uid"] = uid or uuid.uuid4().hex
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}


def with_uid(obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"].setdefault("uid", uuid.uuid4().hex)
    return obj


def term_pod(name: str, labels: dict[str, str] | None = None, *, namespace: str = "default", cpu: str = "100m",
             deleting: bool = False, spread: list[dict[str, Any]] | None = None, **kw: Any) -> dict[str, Any]:
    """A pod with a uid for the affinity and spread tables: ``deleting`` marks it terminating, ``spread`` gives its
    topologySpreadConstraints; ``kw`` goes to `pod` (affinity=...)."""
    obj = with_uid(pod(name, cpu=cpu, labels=labels, namespace=namespace, test=None, **kw))
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if spread:
        obj["spec"]["topologySpreadConstraints"] = spread
    return obj


def cluster(nodes: dict[str, dict[str, Any]], existing: list[tuple[dict[str, Any], str]],
            taint: dict[str, str] | None = None) -> ClusterState:
    """A ClusterState of ``nodes`` (name -> labels; a label ``taint`` gives that node ``taint`` instead) and the
    ``existing`` pods, each placed on its node."""
    s = ClusterState()
    for name, labels in nodes.items():
        labels = dict(labels)
        taints = [taint] if labels.pop("taint", None) and taint else None
        s.upsert_node(node(name, labels=labels, taints=taints))
    for obj, where in existing:
        obj["spec"]["nodeName"] = where
        s.upsert_pod(obj)
    return s


def affinity(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    """Required node affinity from terms, each a list of matchExpressions."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]}}}


def score(node_name: str, mean: float, n: int, *, test: str = "sysbench-cpu", metric: str = "events_per_second",
          params_key: str = "threads=1", cluster: str = "local", env: str = "kubernetes",
          higher_is_better: bool = True, updated_at: Any = None, ci: tuple[float, float] | None = None,
          flags: tuple[str, ...] = (), median: float | None = None) -> NodeScore:
    return NodeScore(cluster=cluster, node=node_name, env=env, test=test, params_key=params_key, metric=metric,
                     unit="events/s", higher_is_better=higher_is_better, median=mean if median is None else median,
                     mean=mean, n=n, ci_low=ci[0] if ci else None, ci_high=ci[1] if ci else None,
                     flags=list(flags), updated_at=updated_at or now())
