"""Admission of claims and volumes, as a real API server's admission plugins do it on create:

- DefaultStorageClass: a claim without `spec.storageClassName` (absent or null; "" means "no class")
  gets the default class: the StorageClass annotated `storageclass.kubernetes.io/is-default-class: "true"`
  (or the beta annotation); with several, the newest, then the first by name (GetDefaultClass).
- StorageObjectInUseProtection: claims get the finalizer `kubernetes.io/pvc-protection`, volumes
  `kubernetes.io/pv-protection` (the provisioner's protection controllers remove them when unused)."""

from __future__ import annotations

from collections.abc import Iterable

from podtax_kubesim.util import Obj

DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class",
                             "storageclass.beta.kubernetes.io/is-default-class")
PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"


def is_default(sc: Obj) -> bool:
    annotations = sc.get("metadata", {}).get("annotations") or {}
    return any(annotations.get(key) == "true" for key in DEFAULT_CLASS_ANNOTATIONS)


def default_class(classes: Iterable[Obj]) -> str | None:
    """The name of the default StorageClass: the newest default, ties broken by name; None without one."""
    defaults = [sc for sc in classes if is_default(sc)]
    if not defaults:
        return None
    newest = max(sc["metadata"].get("creationTimestamp", "") for sc in defaults)
    return min(sc["metadata"]["name"] for sc in defaults if sc["metadata"].get("creationTimestamp", "") == newest)


def _protect(obj: Obj, finalizer: str) -> None:
    finalizers = obj.setdefault("metadata", {}).setdefault("finalizers", [])
    if finalizer not in finalizers:
        finalizers.append(finalizer)


def admit_claim(claim: Obj, classes: Iterable[Obj]) -> None:
    spec = claim.setdefault("spec", {})
    if spec.get("storageClassName") is None:
        name = default_class(classes)
        if name is not None:
            spec["storageClassName"] = name
    _protect(claim, PVC_PROTECTION)


def admit_volume(volume: Obj) -> None:
    _protect(volume, PV_PROTECTION)
