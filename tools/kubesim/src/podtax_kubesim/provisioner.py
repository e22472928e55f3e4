"""Volume provisioner and PV controller for PVCs.

A claim binds first to a matching Available PV (static binding: class, size, access modes, volume mode, the claim's
label selector; a PV pre-bound to it by its claimRef first), whatever its class, as the PV controller does
(pv_controller.go syncUnboundClaim: findBestMatchForClaim, provisionClaim only when no PV matched); a
WaitForFirstConsumer claim, whatever its class's provisioner, looks once a pod using it has a node
(volume.kubernetes.io/selected-node; the PV's node affinity must admit that node), as kube-scheduler's volume binder
matches before it provisions. A claim no PV matched, of a StorageClass whose provisioner is not
kubernetes.io/no-provisioner, gets a new PV (pvc-<claim uid>) after a latency drawn from the cluster file's
distribution; the claim is then Bound (spec.volumeName, status.phase, capacity). A PV that comes Available (created,
or its claimRef removed: syncVolume) binds a Pending claim it matches; so does one changed in place at the claims'
resync (every resyncSeconds). A claim its user pre-bound to a PV (spec.volumeName), whatever its class and mode, is
never provisioned: it waits for that PV and binds it (_bind_named). A claim with a selector no PV matched is refused
by the provisioner ('claim Selector is not supported', as podtax.io/sim-provision-error below) and stays Pending until
a PV it matches comes.

The order of writes follows the real controllers (pv_controller.go bind(): "volume is saved first"):
claim annotated volume.kubernetes.io/storage-provisioner -> PV created (phase Pending, finalizer
external-provisioner.volume.kubernetes.io/finalizer) -> PV status Bound -> claim spec.volumeName and
bind annotations -> claim status Bound. Every PV phase change sets status.lastPhaseTransitionTime.
Deleting a claim: pvreclaim.py (release, reclaim, pvc-protection).

Per claim, the annotations podtax.io/sim-provision-seconds and podtax.io/sim-delete-seconds replace
the class's provision latency and its PV's delete latency (`inf`: never provisioned, the claim stays
Pending; never deleted, the PV stays Released until a test ends it: testing.Sim.finish_volume_deletion): a
straggler among many claims, for tests. podtax.io/sim-provision-error makes each provisioning of the claim fail with
that error, as a CSI driver's CreateVolume refusing (`rpc error: code = ResourceExhausted desc = ...`): the claim
stays Pending, the external provisioner writes its Warning event ProvisioningFailed on the claim, the error alone
(external-provisioner v6's: sig-storage-lib-external-provisioner v13's controller.go; up to v5, lib v11.0, it read
'failed to provision volume with StorageClass "<class>": <error>') and tries again
after 1, 2, 4 ... s (at most 300 s: its retry-interval-start and -max), client-go's recorder counting the repeated
event up (count, lastTimestamp) instead of writing a new one; removing the annotation lets the next try succeed."""

from __future__ import annotations

import asyncio
import random

from podtax_kubesim import resources as R
from podtax_kubesim.api import Api
from podtax_kubesim.dist import Sampler, sampler
from podtax_kubesim.pvmatch import best_match, names, unsatisfied
from podtax_kubesim.pvreclaim import PROVISIONED_BY, PROVISIONER_FINALIZER, Reclaim, latency
from podtax_kubesim.pvsync import RESYNC_S, bound_owner, turns_available
from podtax_kubesim.storageadmission import PV_PROTECTION, default_class
from podtax_kubesim.store import Event
from podtax_kubesim.util import SIMULATED_ANNOTATION, Obj, deepcopy, new_uid, now

NO_PROVISIONER = "kubernetes.io/no-provisioner"
STORAGE_PROVISIONER = ("volume.kubernetes.io/storage-provisioner", "volume.beta.kubernetes.io/storage-provisioner")
A_PROVISION = "podtax.io/sim-provision-seconds"
A_ERROR = "podtax.io/sim-provision-error"
RETRY_START_S, RETRY_MAX_S = 1.0, 300.0  # external-provisioner's --retry-interval-start and --retry-interval-max
SELECTED_NODE = "volume.kubernetes.io/selected-node"
SELECTOR_REFUSED = "claim Selector is not supported"  # external-provisioner's Provision, for a claim with a selector


class Provisioner(Reclaim):
    def __init__(self, api: Api, config: Obj | None = None) -> None:
        self.api, self.store = api, api.store
        config = config or {}
        self.rng = random.Random(config.get("seed"))
        self.provision_latency = sampler(config.get("provisionLatency",
                                                    {"distribution": "lognormal", "median": 0.05, "sigma": 0.5}),
                                         self.rng)
        self.delete_latency = sampler(config.get("deleteLatency",
                                                 {"distribution": "lognormal", "median": 0.03, "sigma": 0.5}),
                                      self.rng)
        self.per_class: dict[str, tuple[Sampler, Sampler]] = {
            name: (sampler(c.get("provisionLatency"), self.rng, 0.0) if "provisionLatency" in c
                   else self.provision_latency,
                   sampler(c.get("deleteLatency"), self.rng, 0.0) if "deleteLatency" in c else self.delete_latency)
            for name, c in (config.get("classes") or {}).items()}
        self.pending: set[str] = set()  # claim uids with a provisioning timer
        self.failed: dict[str, int] = {}  # claim uid -> provisionings failed (A_ERROR), for the retry's backoff
        self.resync_s = float(config.get("resyncSeconds", RESYNC_S))
        self.store.listen(R.PVCS, self._on_claim)
        self.store.listen(R.PODS, self._on_pod)
        self.store.listen(R.PVS, self._on_volume)

    def storage_class(self, claim: Obj) -> Obj | None:
        name = claim["spec"].get("storageClassName")
        if name is None:  # created before any default class existed: assigned retroactively, as since 1.28
            name = default_class(self.store.items(R.STORAGECLASSES))
        return self.store.get(R.STORAGECLASSES, "", name) if name else None

    def _latencies(self, sc: Obj) -> tuple[Sampler, Sampler]:
        return self.per_class.get(sc["metadata"]["name"], (self.provision_latency, self.delete_latency))

    # --- claims -------------------------------------------------------------------
    def _on_claim(self, ev: Event) -> None:
        claim = ev.obj
        if ev.type == "DELETED":
            self._release(claim)
            return
        if claim["metadata"].get("deletionTimestamp"):
            self._unprotect_claim(claim)
            return
        if claim["spec"].get("volumeName"):
            self._bind_named(claim)
            return
        sc = self.storage_class(claim)
        selected = (claim["metadata"].get("annotations") or {}).get(SELECTED_NODE)
        if self._waits_for_a_node(claim, sc):
            # but a PV pre-bound to it binds at once: FindMatchingVolume returns one whose claimRef names the claim
            # before it skips the rest for want of a node (delayBinding); it waited for a pod (review r9 L5)
            self._bind_static(claim, prebound=True)
            return
        # a matching Available PV first, whatever the class's provisioner (syncUnboundClaim: findBestMatchForClaim,
        # then provisionClaim only when none matched): a claim of a dynamic class binds a PV made by hand
        if self._bind_static(claim, selected) or sc is None or sc.get("provisioner", NO_PROVISIONER) == NO_PROVISIONER:
            return
        self._schedule(claim, sc, selected)

    @staticmethod
    def _waits_for_a_node(claim: Obj, sc: Obj | None) -> bool:
        """A WaitForFirstConsumer claim without a node yet, whatever its class's provisioner (a no-provisioner class's
        too, as local volumes are: it was bound at once, review r6): neither matched nor provisioned until a pod using
        it is placed (the PV controller leaves such claims to the scheduler's volume binder: IsDelayBindingMode)."""
        return (sc is not None and sc.get("volumeBindingMode") == "WaitForFirstConsumer"
                and not (claim["metadata"].get("annotations") or {}).get(SELECTED_NODE))

    def _schedule(self, claim: Obj, sc: Obj, node: str | None) -> None:
        uid = claim["metadata"]["uid"]
        if uid in self.pending:
            return
        self.pending.add(uid)
        if current := self.store.get(R.PVCS, claim["metadata"]["namespace"], claim["metadata"]["name"]):
            annotations = current["metadata"].get("annotations") or {}
            if any(annotations.get(key) != sc["provisioner"] for key in STORAGE_PROVISIONER):
                current = deepcopy(current)  # the PV controller hands the claim to its provisioner first
                current["metadata"].setdefault("annotations", {}).update(
                    {key: sc["provisioner"] for key in STORAGE_PROVISIONER})
                current = self.store.update(R.PVCS, current)
            self.api.record_event(current, "Provisioning", f'External provisioner is provisioning volume for claim '
                                  f'"{claim["metadata"]["namespace"]}/{claim["metadata"]["name"]}"',
                                  component=sc.get("provisioner", "kubesim"), repeat=True)
        delay = latency(claim, A_PROVISION, self._latencies(sc)[0])
        asyncio.get_running_loop().call_later(delay, self._provision, claim, sc, node)

    def _provision(self, claim: Obj, sc: Obj, node: str | None) -> None:
        meta = claim["metadata"]
        self.pending.discard(meta["uid"])
        current = self.store.get(R.PVCS, meta["namespace"], meta["name"])
        if current is None or current["metadata"]["uid"] != meta["uid"] or current["spec"].get("volumeName"):
            self.failed.pop(meta["uid"], None)
            return
        if error := (current["metadata"].get("annotations") or {}).get(A_ERROR) or (
                SELECTOR_REFUSED if current["spec"].get("selector") is not None else ""):
            self._failed(current, sc, node, error)
            return
        self.failed.pop(meta["uid"], None)
        spec = current["spec"]
        size = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
        pv: Obj = {
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": f"pvc-{meta['uid']}", "annotations": {
                PROVISIONED_BY: sc["provisioner"], SIMULATED_ANNOTATION: "true"},
                "finalizers": [PROVISIONER_FINALIZER]},
            "spec": {"capacity": {"storage": size}, "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy", "Delete"),
                     "storageClassName": sc["metadata"]["name"], "volumeMode": spec.get("volumeMode", "Filesystem"),
                     "csi": {"driver": sc["provisioner"], "volumeHandle": new_uid(), "fsType": "ext4"},
                     "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": meta["namespace"],
                                  "name": meta["name"], "uid": meta["uid"]}},
            "status": {"phase": "Pending"},
        }
        if node:
            pv["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
        created = self.api.create(R.PV, "", pv)
        self._bind(current, created)
        self.api.record_event(current, "ProvisioningSucceeded",
                              f"Successfully provisioned volume {pv['metadata']['name']}", component=sc["provisioner"])

    def _failed(self, claim: Obj, sc: Obj, node: str | None, error: str) -> None:
        """A provisioning that failed with `error`: the Warning event, then another try after the backoff."""
        uid = claim["metadata"]["uid"]
        self.failed[uid] = tries = self.failed.get(uid, 0) + 1
        self.api.record_event(claim, "ProvisioningFailed", error, "Warning", sc["provisioner"], repeat=True)
        delay = min(RETRY_START_S * 2 ** (tries - 1), RETRY_MAX_S)
        asyncio.get_running_loop().call_later(delay, self._retry, claim, sc, node)

    def _retry(self, claim: Obj, sc: Obj, node: str | None) -> None:
        meta = claim["metadata"]
        current = self.store.get(R.PVCS, meta["namespace"], meta["name"])
        if current is None or current["metadata"]["uid"] != meta["uid"] or current["spec"].get("volumeName"):
            self.failed.pop(meta["uid"], None)
            return
        self._schedule(current, sc, node)

    def _set_phase(self, pv: Obj, phase: str) -> Obj:
        new = deepcopy(pv)
        new["status"] = {"phase": phase, "lastPhaseTransitionTime": now()}
        return self.store.update(R.PVS, new)

    def _bind(self, claim: Obj, pv: Obj) -> Obj:
        """Four writes in the order of the PV controller's bind(); the PV as bound."""
        ref = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": claim["metadata"]["namespace"],
               "name": claim["metadata"]["name"], "uid": claim["metadata"]["uid"]}
        if pv["spec"].get("claimRef") != ref:  # static binding: the controller claims the volume
            new_pv = deepcopy(pv)
            if not names(pv, claim):  # not pre-bound to it (IsVolumeBoundToClaim): said so (GetBindVolumeToClaim)
                new_pv["metadata"].setdefault("annotations", {})["pv.kubernetes.io/bound-by-controller"] = "yes"
            new_pv["spec"]["claimRef"] = ref
            pv = self.store.update(R.PVS, new_pv)
        pv = self._set_phase(pv, "Bound")
        new = deepcopy(claim)
        notes = new["metadata"].setdefault("annotations", {})
        notes["pv.kubernetes.io/bind-completed"] = "yes"
        if claim["spec"].get("volumeName") != pv["metadata"]["name"]:  # not named by its user (bindClaimToVolume)
            notes["pv.kubernetes.io/bound-by-controller"] = "yes"
        new["spec"]["volumeName"] = pv["metadata"]["name"]
        new = self.store.update(R.PVCS, new)
        new = deepcopy(new)
        new["status"] = {"phase": "Bound", "accessModes": pv["spec"].get("accessModes", []),
                         "capacity": dict(pv["spec"].get("capacity", {}))}
        self.store.update(R.PVCS, new)
        return pv

    def _bind_named(self, claim: Obj) -> None:
        """A claim its user pre-bound to a PV by name (spec.volumeName), not bound yet (no bind-completed), whatever
        its class and binding mode: never provisioned; it waits for that PV (Pending while it is absent) and binds
        it when its claimRef is empty and it satisfies the claim (else a Warning VolumeMismatch) or its claimRef names
        the claim; a PV claimed by another claim leaves it Pending with a Warning FailedBinding (pv_controller.go
        syncUnboundClaim, the branch for a claim with spec.volumeName; checkVolumeSatisfyClaim)."""
        meta = claim["metadata"]
        claim = self.store.get(R.PVCS, meta["namespace"], meta["name"]) or {}
        if ((claim.get("metadata") or {}).get("uid") != meta["uid"]
                or "pv.kubernetes.io/bind-completed" in (claim["metadata"].get("annotations") or {})):
            return
        name = claim["spec"]["volumeName"]
        pv = self.store.get(R.PVS, "", name)
        if pv is None:
            return  # "requested and not found, will try again next time": a PV that shows up binds it
        if not pv["spec"].get("claimRef"):
            if why := unsatisfied(pv, claim):
                self.api.record_event(claim, "VolumeMismatch", f'Cannot bind to requested volume "{name}": {why}',
                                      "Warning", "persistentvolume-controller", repeat=True)
            else:
                self._bind(claim, pv)
        elif names(pv, claim):
            self._bind(claim, pv)
        else:
            self.api.record_event(claim, "FailedBinding", f'volume "{name}" already bound to a different claim.',
                                  "Warning", "persistentvolume-controller", repeat=True)

    def _bind_static(self, claim: Obj, node: str | None = None, prebound: bool = False) -> bool:
        """Bind `claim` to the PV pvmatch.best_match picks (on `node`: its node affinity admitting that node; only a
        PV pre-bound to it when `prebound`): True when one matched (or the claim is bound already, or gone: its event
        was older than the store, as events are dispatched in turn)."""
        meta = claim["metadata"]
        claim = self.store.get(R.PVCS, meta["namespace"], meta["name"]) or {}
        if (claim.get("metadata") or {}).get("uid") != meta["uid"] or claim["spec"].get("volumeName"):
            return True
        found = best_match(claim, self.store.items(R.PVS), self.store.get(R.NODES, "", node) if node else None,
                           prebound)
        if found is None:
            return False
        self._bind(claim, found)
        return True

    # --- consumers (WaitForFirstConsumer) -------------------------------------------------
    def _on_pod(self, ev: Event) -> None:
        pod = ev.obj
        if ev.type == "DELETED":
            self._claims_released_by(pod)
            return
        if pod["status"].get("phase") in ("Succeeded", "Failed"):
            return
        node = pod["spec"].get("nodeName")
        if not node or (ev.old and ev.old["spec"].get("nodeName")):
            return
        for vol in pod["spec"].get("volumes") or []:
            claim_name = (vol.get("persistentVolumeClaim") or {}).get("claimName")
            claim = self.store.get(R.PVCS, pod["metadata"]["namespace"], claim_name) if claim_name else None
            if claim is None or claim["spec"].get("volumeName"):
                continue
            sc = self.storage_class(claim)
            if sc is not None and sc.get("volumeBindingMode") == "WaitForFirstConsumer":
                new = deepcopy(claim)
                new["metadata"].setdefault("annotations", {})["volume.kubernetes.io/selected-node"] = node
                self.store.update(R.PVCS, new)

    def _on_volume(self, ev: Event) -> None:
        pv = ev.obj
        if ev.type == "MODIFIED" and turns_available(pv):  # its claimRef removed: Available at once (syncVolume;
            owner = bound_owner(pv, self.store.items(R.PVCS))  # it stayed Released, the claim waiting Pending: r6 M2)
            pv = self._bind(owner, pv) if owner else self._set_phase(pv, "Available")  # a Bound claim's: r8 L1
        elif ev.type != "DELETED" and pv["status"].get("phase") == "Available" and (
                ev.old is None or ev.old["status"].get("phase") != "Available"):
            asyncio.get_running_loop().call_soon(self._rebind_pending)
        if (ev.type != "DELETED" and pv["metadata"].get("deletionTimestamp") and pv["status"].get("phase") != "Bound"
                and PV_PROTECTION in (pv["metadata"].get("finalizers") or [])):
            self._drop_finalizer(R.PV, "", pv["metadata"]["name"], PV_PROTECTION)  # pv-protection: unused
        if (ev.type != "DELETED" and pv["metadata"].get("deletionTimestamp") and pv["status"].get("phase") != "Bound"
                and pv["spec"].get("persistentVolumeReclaimPolicy") != "Delete"
                and PROVISIONER_FINALIZER in (pv["metadata"].get("finalizers") or [])):
            # a Retain volume deleted by hand: the external provisioner keeps the storage and lets the PV go
            # (an audit's Released PVs stayed Terminating for ever, `kubectl delete pv --all` hung)
            self._drop_finalizer(R.PV, "", pv["metadata"]["name"], PROVISIONER_FINALIZER)

    def start(self) -> None:  # the PV controller's periodic resync: a PV resized in place binds its claim
        asyncio.get_running_loop().call_later(self.resync_s, self._resync)

    def _resync(self) -> None:
        self._rebind_pending()
        self.start()

    def _rebind_pending(self) -> None:
        """A PV came Available, or the resync: each Pending claim tries static binding again, whatever its class (a
        claim being provisioned binds it, and its provisioning finds it bound)."""
        for claim in list(self.store.items(R.PVCS)):
            if claim["status"].get("phase") != "Pending" or claim["metadata"].get("deletionTimestamp"):
                continue
            if claim["spec"].get("volumeName"):
                self._bind_named(claim)  # pre-bound to a PV by name: the one it waited for may have come
            elif not self._waits_for_a_node(claim, self.storage_class(claim)):
                self._bind_static(claim, (claim["metadata"].get("annotations") or {}).get(SELECTED_NODE))
