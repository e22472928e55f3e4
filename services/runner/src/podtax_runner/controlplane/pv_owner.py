"""Whose a PersistentVolume is: one a provisioner made for the podtax claim it is bound to (a cleanup deletes it),
or one made beforehand that a podtax claim bound (its owner's); and which claims a PV belongs to (see cleanup.py)."""

from __future__ import annotations

from podtax_runner.controlplane.kubeapi import Obj

PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"  # on the PVs a provisioner made (by its name): only those go
# set on a PV by the PV controller when it writes the claimRef (a static bind), never by an external provisioner,
# which writes the claimRef when it creates the PV (the in-tree ones, named kubernetes.io/..., set it too)
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"


def provisioned(pv: Obj) -> bool:
    """A PV a provisioner made for the claim it is bound to, not one made beforehand that a podtax claim bound
    (Kubernetes matches an Available PV before it provisions, whatever the class: pv_controller.go
    syncUnboundClaim): made_by_hand says why not. A cleanup deletes and waits for the first kind only."""
    return not made_by_hand(pv)


def made_by_hand(pv: Obj) -> str:
    """Why `pv` was there before the claim it is bound to ('' when a provisioner made it for that claim): no
    PROVISIONED_BY (made by hand), or BOUND_BY_CONTROLLER "yes" from an external provisioner: the PV controller
    wrote its claimRef (bindVolumeToClaim), so it was Available before, as a Retained PV an administrator freed for
    reuse by removing its claimRef (it keeps the annotation of the provisioner that made it for an earlier claim)."""
    notes = (pv.get("metadata") or {}).get("annotations") or {}
    by = notes.get(PROVISIONED_BY)
    if not by:
        return f"no {PROVISIONED_BY}"
    if notes.get(BOUND_BY_CONTROLLER) == "yes" and not by.startswith("kubernetes.io/"):
        return f"made by {by} for an earlier claim, then bound by the PV controller: {BOUND_BY_CONTROLLER}"
    return ""


def claimed_by(pv: Obj, claims: set[tuple[str, str]]) -> bool:
    ref = (pv.get("spec") or {}).get("claimRef") or {}
    return (ref.get("namespace"), ref.get("name")) in claims


def bound_to(pv: Obj, claims: set[tuple[str, str]]) -> bool:
    """A PV of one of `claims` that its provisioner will delete (reclaim policy Delete)."""
    return claimed_by(pv, claims) and (pv.get("spec") or {}).get("persistentVolumeReclaimPolicy") == "Delete"
