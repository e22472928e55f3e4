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
    """Why `pv` may have been there before the claim it is bound to ('' when a provisioner made it for that claim):
    no PROVISIONED_BY (made by hand); BOUND_BY_CONTROLLER "yes" from an external provisioner (the PV controller wrote
    its claimRef, bindVolumeToClaim, so it was Available before); or a name that is not <prefix>-<the uid of the
    claim it is bound to>. Only a provisioning for that claim names the PV so: the in-tree provisioners
    (kubernetes.io/..., CSI-migrated or not) name it "pvc-" + the claim's uid and set BOUND_BY_CONTROLLER themselves
    (pv_controller.go provisionClaimOperation, getProvisionedVolumeNameForClaim), the external-provisioner names it
    --volume-name-prefix (default "pvc") + "-" + that uid (named_for); a Retained PV an administrator freed for reuse by
    removing its claimRef keeps its annotations and its name, which holds the uid of the claim it was made for, not
    the one that bound it now. A PV that cannot be shown to be made for its claim is kept (never deleted)."""
    notes = (pv.get("metadata") or {}).get("annotations") or {}
    by = notes.get(PROVISIONED_BY)
    if not by:
        return f"no {PROVISIONED_BY}"
    if notes.get(BOUND_BY_CONTROLLER) == "yes" and not by.startswith("kubernetes.io/"):
        return f"made by {by} for an earlier claim, then bound by the PV controller: {BOUND_BY_CONTROLLER}"
    uid = ((pv.get("spec") or {}).get("claimRef") or {}).get("uid") or ""
    name = (pv.get("metadata") or {}).get("name") or ""
    if not uid or not named_for(name, uid):
        return (f"made by {by}, but not for the claim it is bound to (uid {uid or 'unset'}): a provisioner names the "
                f"PV it makes for a claim pvc-<that claim's uid>")
    return ""


def named_for(name: str, uid: str) -> bool:
    """Whether a PV's name is <prefix>-<uid>, as a provisioning for the claim of that uid names it: the uid as it is,
    or, by an external-provisioner started with --volume-name-uuid-length N, the uid without its dashes cut to N
    characters (makeVolumeName: strings.Replace(pvcUID, "-", "", -1)[0:N]); at least 8 of them."""
    prefix, _, last = name.rpartition("-")
    if name.endswith(f"-{uid}") and name != f"-{uid}":
        return True
    return bool(prefix) and len(last) >= 8 and uid.replace("-", "").startswith(last)


def claimed_by(pv: Obj, claims: set[tuple[str, str]]) -> bool:
    ref = (pv.get("spec") or {}).get("claimRef") or {}
    return (ref.get("namespace"), ref.get("name")) in claims


def bound_to(pv: Obj, claims: set[tuple[str, str]]) -> bool:
    """A PV of one of `claims` that its provisioner will delete (reclaim policy Delete)."""
    return claimed_by(pv, claims) and (pv.get("spec") or {}).get("persistentVolumeReclaimPolicy") == "Delete"
