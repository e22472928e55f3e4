"""Find and remove what control-plane runs created: Kubernetes objects by the `podtax.io/*` labels,
Nomad volumes by the `podtax-` name prefix (see nomad.py). Used by the executors when a run fails
or is stopped, and by `podtax volumes cleanup`."""

from __future__ import annotations

import logging
import time
from collections.abc import Collection
from dataclasses import dataclass, field

from kubernetes.client.rest import ApiException

from podtax_runner.controlplane.common import Context
from podtax_runner.controlplane.kubeapi import Kube, Obj
from podtax_runner.controlplane.timeline import Timeline

log = logging.getLogger("podtax.runner.controlplane")


@dataclass
class Removed:
    names: list[str] = field(default_factory=list)  # "kind namespace/name" of each object deleted
    left: int = 0  # objects (claims, pods, PVs of deleted claims) still present after waiting


def _items(kube: Kube, namespaced: object, everywhere: object, namespace: str | None, selector: str) -> list[Obj]:
    if namespace:
        return kube.call("list", namespaced, namespace, label_selector=selector).get("items") or []
    return kube.call("list", everywhere, label_selector=selector).get("items") or []


def _delete(kube: Kube, fn: object, name: str, ns: str) -> bool:
    try:
        kube.call("delete", fn, name, ns, grace_period_seconds=0)
        return True
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise


def _bound_to(pv: Obj, claims: set[tuple[str, str]]) -> bool:
    """A PV of one of `claims` that its provisioner will delete (reclaim policy Delete)."""
    spec = pv.get("spec") or {}
    ref = spec.get("claimRef") or {}
    return (ref.get("namespace"), ref.get("name")) in claims and spec.get("persistentVolumeReclaimPolicy") == "Delete"


def kubernetes(kube: Kube, namespace: str | None, selector: str, wait_s: float = 30,
               volumes: Collection[str] = ()) -> Removed:
    """Delete pods and claims matching `selector` (in `namespace`, or everywhere), then wait up to
    `wait_s` for them, the PVs bound to the claims and the PVs named in `volumes` (of claims deleted
    before, whose deletion a run gave up waiting for) to be gone."""
    core = kube.core
    out = Removed()
    deleted: set[tuple[str, str]] = set()  # claims: their PVs (even ones provisioned after this) must go too
    for pod in _items(kube, core.list_namespaced_pod, core.list_pod_for_all_namespaces, namespace, selector):
        m = pod["metadata"]
        if _delete(kube, core.delete_namespaced_pod, m["name"], m["namespace"]):
            out.names.append(f"pod {m['namespace']}/{m['name']}")
    claims = _items(kube, core.list_namespaced_persistent_volume_claim,
                    core.list_persistent_volume_claim_for_all_namespaces, namespace, selector)
    for claim in claims:
        m = claim["metadata"]
        deleted.add((m["namespace"], m["name"]))
        if _delete(kube, core.delete_namespaced_persistent_volume_claim, m["name"], m["namespace"]):
            out.names.append(f"persistentvolumeclaim {m['namespace']}/{m['name']}")
    deadline = time.monotonic() + wait_s
    while True:
        left = (len(_items(kube, core.list_namespaced_pod, core.list_pod_for_all_namespaces, namespace, selector))
                + len(_items(kube, core.list_namespaced_persistent_volume_claim,
                             core.list_persistent_volume_claim_for_all_namespaces, namespace, selector)))
        if deleted or volumes:
            left += sum(1 for pv in kube.call("list", core.list_persistent_volume).get("items") or []
                        if _bound_to(pv, deleted) or pv["metadata"]["name"] in volumes)
        out.left = left
        if left == 0 or time.monotonic() > deadline:
            return out
        time.sleep(0.2)


def after_failure(kube: Kube, ctx: Context, timeline: Timeline) -> None:
    """Delete what a failed or stopped run created; a cleanup error is logged, never masks the run's."""
    try:
        timeline.left_behind = kubernetes(kube, ctx.namespace, ctx.selector, wait_s=30).left
    except Exception as exc:  # noqa: BLE001 - the first error is the one to report
        log.warning("cleanup of run %s failed (%s): run `podtax volumes cleanup --backend kubernetes`",
                    ctx.run.run_id, exc)
