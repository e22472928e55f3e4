"""Whether a PV may be bound to a claim, as the PV controller tells it (used by provisioner.py)."""

from __future__ import annotations

from collections.abc import Iterable

from podtax_kubesim.selectors import match_label_selector, node_requirement
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


def admits(pv: Obj, node: Obj | None) -> bool:
    """The PV's required node affinity admits `node` (any PV when no node is given, or the node is unknown: None)."""
    terms = ((pv["spec"].get("nodeAffinity") or {}).get("required") or {}).get("nodeSelectorTerms")
    if node is None or not terms:
        return True
    labels = node["metadata"].get("labels") or {}
    return any(all(node_requirement(e, labels) for e in t.get("matchExpressions") or []) for t in terms)


def best_match(claim: Obj, pvs: Iterable[Obj], node: Obj | None, prebound: bool = False) -> Obj | None:
    """The smallest Available PV of `pvs` that matches `claim` (of its class, big enough, with its access modes and
    volume mode, its labels matching the claim's selector, not being deleted; its node affinity admitting `node`),
    one pre-bound to it (its claimRef naming the claim) first, only such a one when `prebound`; None when none does
    (the PV controller's findBestMatchForClaim)."""
    spec = claim["spec"]
    want = quantity(((spec.get("resources") or {}).get("requests") or {}).get("storage", "0"))
    modes = set(spec.get("accessModes") or [])
    candidates = [pv for pv in pvs
                  if pv["status"].get("phase") == "Available"
                  and (names(pv, claim) if prebound else not pv["spec"].get("claimRef") or names(pv, claim))
                  and not pv["metadata"].get("deletionTimestamp")
                  and match_label_selector(spec.get("selector"), pv["metadata"].get("labels") or {})
                  and pv["spec"].get("storageClassName", "") == (spec.get("storageClassName") or "")
                  and pv["spec"].get("volumeMode", "Filesystem") == spec.get("volumeMode", "Filesystem")
                  and quantity(pv["spec"].get("capacity", {}).get("storage", "0")) >= want
                  and modes <= set(pv["spec"].get("accessModes") or []) and admits(pv, node)]
    if not candidates:
        return None
    return min(candidates, key=lambda pv: (not names(pv, claim), quantity(pv["spec"]["capacity"]["storage"])))
