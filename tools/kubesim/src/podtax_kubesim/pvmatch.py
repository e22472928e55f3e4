"""Whether a PV may be bound to a claim, as the PV controller tells it (used by provisioner.py)."""

from __future__ import annotations

from podtax_kubesim.util import Obj, quantity


def names(pv: Obj, claim: Obj) -> bool:
    """The PV's claimRef names `claim` (its namespace and name, and its uid when it has one): pre-bound to it."""
    ref, meta = pv["spec"].get("claimRef") or {}, claim["metadata"]
    return (ref.get("namespace"), ref.get("name")) == (meta["namespace"], meta["name"]) and \
        ref.get("uid", meta["uid"]) in (meta["uid"], "")


def unsatisfied(pv: Obj, claim: Obj) -> str:
    """Why `pv` cannot be bound to `claim`, which names it ('' when it can): pv_controller.go checkVolumeSatisfyClaim,
    its checks and words in its order (no selector, no node affinity: the user named the PV)."""
    spec = claim["spec"]
    want = quantity(((spec.get("resources") or {}).get("requests") or {}).get("storage", "0"))
    if pv["metadata"].get("deletionTimestamp"):
        return f'the volume is marked for deletion "{pv["metadata"]["name"]}"'
    if quantity(pv["spec"].get("capacity", {}).get("storage", "0")) < want:
        return "requested PV is too small"
    if pv["spec"].get("storageClassName", "") != (spec.get("storageClassName") or ""):
        return "storageClassName does not match"
    if pv["spec"].get("volumeMode", "Filesystem") != spec.get("volumeMode", "Filesystem"):
        return "incompatible volumeMode"
    if not set(spec.get("accessModes") or []) <= set(pv["spec"].get("accessModes") or []):
        return "incompatible accessMode"
    return ""
