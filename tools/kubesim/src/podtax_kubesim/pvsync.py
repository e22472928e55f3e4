"""The PV controller's side of a volume (pv_controller.go syncVolume, deleteVolumeOperation), as pure functions
(used by provisioner.py)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from podtax_kubesim.util import Obj

RESYNC_S = 15.0  # kube-controller-manager's --pvclaimbinder-sync-period: every claim synced again this often
HOST_PATH_DELETABLE = re.compile("/tmp/.+")  # host_path.go Delete: regexp.MatchString, unanchored


def turns_available(pv: Obj) -> bool:
    """syncVolume makes the PV Available at once: no claimRef ("volume is unused": an admin removed a Released PV's
    claimRef to reuse it) or a claimRef without a uid (reserved for a claim by name, not bound yet), whatever its
    phase before (Released, Failed, Bound), unless a Bound claim names it (bound_owner)."""
    ref = pv["spec"].get("claimRef")
    return pv["status"].get("phase") != "Available" and (not ref or not ref.get("uid"))


def bound_owner(pv: Obj, claims: Iterable[Obj]) -> Obj | None:
    """The Bound claim whose spec.volumeName names `pv`, when `pv` has no claimRef: the PV controller binds the PV
    to it again (syncBoundClaim: "volume is unbound, fixing") rather than leaving it Available to a second claim."""
    if pv["spec"].get("claimRef"):
        return None
    name = pv["metadata"]["name"]
    return next((c for c in claims if c["spec"].get("volumeName") == name and c["status"].get("phase") == "Bound"),
                None)


def in_tree_delete_error(pv: Obj) -> str:
    """Why the PV controller cannot delete `pv` ('' when it can), a PV no provisioner made, reclaim policy Delete,
    released: it deletes it with the in-tree plugin of its source (deleteVolumeOperation, findDeletablePlugin by
    spec). hostPath has a deleter, which removes only a path matching /tmp/.+ (host_path.go); any other path fails
    with `host_path deleter only supports /tmp/.+ but received provided <path>`. Other sources (local, NFS, CSI...)
    have none: `error getting deleter volume plugin for volume "<pv>": no deletable volume plugin matched`. (Such a
    PV was deleted as if a provisioner had made it: a run whose claims bound such PVs finished here, and would wait
    for ever on a cluster.)"""
    name, path = pv["metadata"]["name"], (pv["spec"].get("hostPath") or {}).get("path")
    if path is not None and HOST_PATH_DELETABLE.search(path):
        return ""
    return (f"host_path deleter only supports /tmp/.+ but received provided {path}" if path is not None else
            f'error getting deleter volume plugin for volume "{name}": no deletable volume plugin matched')
