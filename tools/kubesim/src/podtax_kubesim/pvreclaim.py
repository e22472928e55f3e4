"""The deleting side of kubesim's PV controller and external provisioner (a mixin of provisioner.Provisioner).

Deleting a claim: kubernetes.io/pvc-protection holds it while a scheduled pod that names it exists (finished or not);
once it is gone its PV becomes Released; with reclaimPolicy Delete, after the delete latency, the
provisioner deletes the PV and drops its finalizer, pv-protection goes, and the PV's DELETED event
ends the deletion (Retain: the PV stays Released). A PV no provisioner made (no pv.kubernetes.io/provisioned-by),
reclaim Delete, is the PV controller's to delete with an in-tree plugin (_failed_delete): a hostPath one under /tmp/
is deleted, any other is left Failed with the plugin's error and a VolumeFailedDelete event."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from podtax_kubesim import resources as R
from podtax_kubesim.api import Api
from podtax_kubesim.dist import Sampler
from podtax_kubesim.pvsync import in_tree_delete_error
from podtax_kubesim.resources import Resource
from podtax_kubesim.storageadmission import PVC_PROTECTION
from podtax_kubesim.store import Store
from podtax_kubesim.util import Obj, deepcopy, now

PROVISIONER_FINALIZER = "external-provisioner.volume.kubernetes.io/finalizer"
A_DELETE = "podtax.io/sim-delete-seconds"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"  # on the PVs a provisioner made: only those it deletes


def latency(claim: Obj, annotation: str, draw: Sampler) -> float:
    """The claim's own latency from `annotation` (seconds, `inf` = never), else (absent or not a number)
    one drawn from `draw`."""
    try:
        return max(float((claim["metadata"].get("annotations") or {})[annotation]), 0.0)
    except (KeyError, ValueError):
        return max(draw(), 0.0)


class Reclaim:
    """Release, reclaim and pvc-protection; Provisioner gives the rest."""

    api: Api
    store: Store
    delete_latency: Sampler
    _latencies: Callable[[Obj], tuple[Sampler, Sampler]]
    _set_phase: Callable[[Obj, str], Obj]

    def _release(self, claim: Obj) -> None:
        name = claim["spec"].get("volumeName")
        pv = self.store.get(R.PVS, "", name) if name else None
        if pv is None or (pv["spec"].get("claimRef") or {}).get("uid") != claim["metadata"]["uid"]:
            return
        pv = self._set_phase(pv, "Released")
        if pv["spec"].get("persistentVolumeReclaimPolicy") == "Delete" and not (
                pv["metadata"].get("annotations") or {}).get(PROVISIONED_BY):
            self._delete_in_tree(pv)
        elif pv["spec"].get("persistentVolumeReclaimPolicy") == "Delete":
            sc = self.store.get(R.STORAGECLASSES, "", pv["spec"].get("storageClassName", ""))
            delay = latency(claim, A_DELETE, self._latencies(sc)[1] if sc else self.delete_latency)
            asyncio.get_running_loop().call_later(delay, self.delete_volume, name, pv["metadata"]["uid"])

    def _delete_in_tree(self, pv: Obj) -> None:
        """A PV no provisioner made, reclaim policy Delete, released: deleted with its source's in-tree plugin, or
        left Failed with the plugin's error (pvsync.in_tree_delete_error) and a Warning event VolumeFailedDelete."""
        if not (message := in_tree_delete_error(pv)):
            if not pv["metadata"].get("deletionTimestamp"):
                self.api.delete(R.PV, "", pv["metadata"]["name"], {})
            return
        new = deepcopy(pv)
        new["status"] = {"phase": "Failed", "message": message, "lastPhaseTransitionTime": now()}
        self.api.record_event(self.store.update(R.PVS, new), "VolumeFailedDelete", message, "Warning",
                              "persistentvolume-controller")

    def delete_volume(self, name: str, uid: str) -> None:
        """The external provisioner after CSI DeleteVolume: delete the PV object, drop its finalizer."""
        pv = self.store.get(R.PVS, "", name)
        if pv is None or pv["metadata"]["uid"] != uid:
            return
        if not pv["metadata"].get("deletionTimestamp"):
            self.api.delete(R.PV, "", name, {})
        self._drop_finalizer(R.PV, "", name, PROVISIONER_FINALIZER)

    def _drop_finalizer(self, res: Resource, ns: str, name: str, finalizer: str) -> None:
        obj = self.store.get(res.store_key, ns, name)
        if obj is None or finalizer not in (obj["metadata"].get("finalizers") or []):
            return
        new = deepcopy(obj)
        new["metadata"]["finalizers"] = [f for f in new["metadata"]["finalizers"] if f != finalizer]
        self.api.commit_update(res, new)  # the last finalizer gone from a deleted object: DELETED

    # --- protection controllers ---------------------------------------------------------
    def _claim_in_use(self, namespace: str, name: str) -> bool:
        """A scheduled pod naming the claim uses it, finished (Succeeded, Failed) or not, until the pod is deleted
        (pvc_protection_controller podUsesPVC; the kubelet refuses to start a pod whose claim is being deleted, so
        unscheduled pods do not count; only an ephemeral volume's shut-down pod would not, and kubesim has none)."""
        return any(pod["spec"].get("nodeName")
                   and any((v.get("persistentVolumeClaim") or {}).get("claimName") == name
                           for v in pod["spec"].get("volumes") or [])
                   for pod in self.store.items(R.PODS, namespace))

    def _unprotect_claim(self, claim: Obj) -> None:
        meta = claim["metadata"]
        if PVC_PROTECTION in (meta.get("finalizers") or []) and not self._claim_in_use(meta["namespace"], meta["name"]):
            self._drop_finalizer(R.PVC, meta["namespace"], meta["name"], PVC_PROTECTION)

    def _claims_released_by(self, pod: Obj) -> None:
        ns = pod["metadata"]["namespace"]
        for vol in pod["spec"].get("volumes") or []:
            name = (vol.get("persistentVolumeClaim") or {}).get("claimName")
            claim = self.store.get(R.PVCS, ns, name) if name else None
            if claim is not None and claim["metadata"].get("deletionTimestamp"):
                self._unprotect_claim(claim)
