"""volume-churn's storage class check on Kubernetes (before anything is made): the class its claims get exists, and is
one the run can time: it provisions (no kubernetes.io/no-provisioner), binds without a pod or has one (consumer), and
deletes its volumes (reclaimPolicy Delete). Without storage_class, the class the API server gives (default_class)."""

from __future__ import annotations

import logging

from kubernetes import client
from kubernetes.client.rest import ApiException
from podtax.templates import VolumeChurn

from podtax_runner.controlplane.common import Aborted
from podtax_runner.controlplane.kubeapi import Kube, Obj

log = logging.getLogger("podtax.runner.controlplane")
# what marks a default class (k8s.io/component-helpers storage/volume IsDefaultAnnotation): the GA and the beta key
DEFAULT_CLASS = ("storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class")


def default_class(classes: list[Obj]) -> Obj | None:
    """The class the API server gives a claim that names none (the DefaultStorageClass admission plugin's
    GetDefaultClass): of those annotated default (GA or beta annotation), the newest, then the first by name; None
    without one. Before, only the GA annotation was read, the first default listed taken (test_cp_default_class)."""
    def meta(c: Obj) -> Obj:
        return c.get("metadata") or {}

    defaults = sorted((c for c in classes if any((meta(c).get("annotations") or {}).get(key) == "true"
                                                 for key in DEFAULT_CLASS)), key=lambda c: meta(c).get("name", ""))
    return max(defaults, key=lambda c: meta(c).get("creationTimestamp") or "", default=None)  # the first of the newest


def check(kube: Kube, p: VolumeChurn) -> str | None:
    """Refuse at once, naming the fix, a storage class the run would only time out on (an audit: a class
    that does not exist, WaitForFirstConsumer without a consumer and Retain each ended in "the run did
    not finish within ...", after the whole timeout; Retain also left every PV Released), or one that provisions
    nothing (no-provisioner: the claims bound the cluster's own PVs, and the cleanup deleted those PVs). Returns the
    class's volumeBindingMode (Immediate when unset, the API server's default); None when classes cannot be read."""
    try:
        classes = kube.call("list", client.StorageV1Api(kube.api).list_storage_class).get("items") or []
    except ApiException as exc:
        if exc.status not in (401, 403, 404):  # not allowed to read classes: the run goes on unchecked
            raise
        log.info("storage classes not checked (%s %s)", exc.status, exc.reason)
        return None
    sc = next((c for c in classes if c["metadata"]["name"] == p.storage_class), None) \
        if p.storage_class else default_class(classes)
    name = p.storage_class or "(the default)"
    if sc is None:
        known = ", ".join(sorted(c["metadata"]["name"] for c in classes)) or "none"
        raise Aborted("bad-storage-class", f"storage class {name} does not exist (classes: {known}): set "
                                           "storage_class to one of them")
    if sc.get("provisioner") == "kubernetes.io/no-provisioner":  # claims bind to PVs made beforehand (not ours)
        raise Aborted("bad-storage-class", f"storage class {sc['metadata']['name']} provisions no volumes "
                                           "(provisioner kubernetes.io/no-provisioner): its claims would bind to "
                                           "PVs made beforehand, timing no provisioning, and release them; use a "
                                           "class with a dynamic provisioner")
    if sc.get("volumeBindingMode") == "WaitForFirstConsumer" and not p.consumer:
        raise Aborted("bad-storage-class", f"storage class {sc['metadata']['name']} binds a claim only once a pod "
                                           "uses it (WaitForFirstConsumer): set consumer: true, or use a class "
                                           "with volumeBindingMode Immediate")
    if sc.get("reclaimPolicy", "Delete") != "Delete":
        raise Aborted("bad-storage-class", f"storage class {sc['metadata']['name']} keeps its volumes "
                                           f"(reclaimPolicy {sc.get('reclaimPolicy')}): deletions would never "
                                           "finish and every PV would stay; use a class with reclaimPolicy Delete")
    return str(sc.get("volumeBindingMode") or "Immediate")
