"""volume-churn on Kubernetes: create `count` claims with `concurrency` workers, observe claims and
PVs through watches opened before the first create (or, with `observe: poll`, by GETting every
unfinished object each interval, the seed's method), optionally a consumer pod per claim (kconsumers: deleted, and
waited for, before the claims), then delete them and wait for the claims' and PVs' DELETED events."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubernetes.client.rest import ApiException
from podtax.templates import VolumeChurn

from podtax_runner.controlplane import cleanup, kclasses, kconsumers, kevents, pv_owner
from podtax_runner.controlplane.apierrors import CALL_ERRORS
from podtax_runner.controlplane.churn import ObjectChurn
from podtax_runner.controlplane.common import KIND, LABEL_CAMPAIGN, LABEL_KIND, Context, poll_safely, pool
from podtax_runner.controlplane.kconsumers import consumer_manifest
from podtax_runner.controlplane.kubeapi import Kube, Obj, stored_before
from podtax_runner.controlplane.kwatch import Watcher, resync
from podtax_runner.controlplane.timeline import Timeline
from podtax_runner.controlplane.waits import wait_for

log = logging.getLogger("podtax.runner.controlplane")


def claim_manifest(ctx: Context, name: str, p: VolumeChurn) -> Obj:
    spec: Obj = {"accessModes": [p.access_mode], "resources": {"requests": {"storage": p.size}}}
    if p.storage_class:
        spec["storageClassName"] = p.storage_class
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "labels": ctx.labels(), "annotations": ctx.annotations()}, "spec": spec}


# kube-scheduler's VolumeBinding writes the node it picked for a pod on that pod's unbound WaitForFirstConsumer claims
# (the external provisioner's cue to provision there): the moment provisioning may begin
SELECTED_NODE = "volume.kubernetes.io/selected-node"


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}



class VolumeChurnK8s(ObjectChurn):
    DONE = ("bound", "Bound")

    def __init__(self, kube: Kube, ctx: Context, params: VolumeChurn, timeline: Timeline) -> None:
        self.kube, self.ctx, self.p, self.tl = kube, ctx, params, timeline
        self.ns = ctx.namespace
        self.names = [ctx.name("vc", i + 1) for i in range(params.count)]
        self.claims = set(self.names)
        self.consumer_of = {ctx.name("vcc", i + 1): n for i, n in enumerate(self.names)}  # pod -> claim
        self.consumer = {n: pod for pod, n in self.consumer_of.items()}  # claim -> pod
        self.consumers_deleting: set[str] = set()  # consumer pods whose delete was sent
        self.consumers_gone: set[str] = set()  # consumer pods seen gone (DELETED, or absent once deleted)
        self.pv_of: dict[str, str] = {}  # claim -> PV name
        self.made_before: set[str] = set()  # claims that bound a PV no provisioner made (_pv): failed, their PV kept
        self.uid: dict[str, str] = {}  # claim -> the uid its create answered (events of other uids are ignored)
        self.early: dict[str, list[tuple[str | None, float, Callable[[float | None], None]]]] = {}  # see _mine
        self.uid_lock = threading.Lock()
        self.failures: Counter[str] = Counter()
        self.pv_watcher: Watcher | None = None  # its listed_at: when its last list was asked for (on_pvs_listed)
        self.claim_watcher: Watcher | None = None  # likewise (on_claims_listed)
        self.events = kevents.Events(kube, self.ns)
        self.wffc = False  # the run's class is WaitForFirstConsumer (execute: kclasses.check): node_selected is timed
        self.lock = threading.Lock()
        for n in self.names:
            timeline.add(n)

    # ------------------------------------------------------------ observing
    def _mine(self, claim: str, uid: str | None, record: Callable[[float | None], None]) -> None:
        """Record an event of `claim` (record(at)) only when it is of the claim this run created (the uid its
        create answered): a claim or PV left by an earlier run under the same name is not (an audit: the old
        claim's PV stamped pv_created before request_sent and the parser rejected the whole run). An event
        that comes before the create's answer is kept, with its time, until the answer says whose it is."""
        with self.uid_lock:
            known = self.uid.get(claim)
            if known is None:
                if self.tl.objects[claim].error is None:
                    self.early.setdefault(claim, []).append((uid, self.tl.now(), record))
                return
        if uid == known:
            record(None)

    def _created(self, claim: str, uid: str) -> None:
        """The create of `claim` answered with `uid`: record the events of that claim that came before."""
        with self.uid_lock:
            self.uid[claim] = uid
            for seen_uid, at, record in self.early.pop(claim, []):
                if seen_uid == uid:
                    record(at)

    def on_claim(self, etype: str, obj: Obj) -> None:
        meta = _meta(obj)
        name = meta.get("name")
        if name in self.claims:
            self._mine(name, meta.get("uid"), lambda at: self._claim(name, etype, obj, at))

    def _claim(self, name: str, etype: str, obj: Obj, at: float | None) -> None:
        if etype == "DELETED":
            if self.tl.mark(name, "gone", at) and not self.tl.has(name, "delete_requested"):
                self.gone_early(name)
            return
        if self.wffc and SELECTED_NODE in (_meta(obj).get("annotations") or {}):
            self._node_selected(name, at)
        volume = (obj.get("spec") or {}).get("volumeName")
        if volume:
            self.pv_of.setdefault(name, volume)
        if (obj.get("status") or {}).get("phase") == "Bound":
            # a claim is Bound only once its PV exists (saved first): its PV was provisioned by now, whichever of
            # the two watches delivers first (an audit: a third of the claims' Bound came before their PV's ADDED,
            # up to 34 ms; with the PV watch behind, a run ended without waiting for PVs it had not seen)
            self.tl.mark(name, "pv_created", at)
            self.tl.mark(name, "bound", at)

    def _node_selected(self, name: str, at: float | None) -> None:
        """The scheduler gave the claim a node (a WaitForFirstConsumer class): its provisioning may begin, so the
        phases provisioned and bound start here (podtax.phases.PROVISION_START). Seen after its PV (the claim watch
        behind the PV watch), it happened before the PV: timed at the PV's, never after it (the phase is not
        negative: it was shorter than the watches can tell; clamped under the timeline's lock, review r9 L1). Only
        with a WaitForFirstConsumer class: the external-provisioner in --node-deployment mode writes the annotation on
        Immediate claims too, after a random wait (up to 20 s) that is the claim's provisioning (review r9 H1)."""
        self.tl.mark(name, "node_selected", at, not_after="pv_created")

    def on_claims_listed(self, items: list[Obj]) -> None:
        present = {_meta(o).get("name") for o in items}
        for o in items:
            self.on_claim("MODIFIED", o)
        listed = self.claim_watcher.listed_at if self.claim_watcher is not None else None
        for name in self.claims - present:
            t = self.tl.objects[name].t
            # absent from a list asked for after its create returned: gone (a list asked for before may not show it)
            if "delete_requested" in t or (listed is not None and t.get("api_accepted", listed) < listed):
                self.on_claim("DELETED", {"metadata": {"name": name, "uid": self.uid.get(name)}})

    def on_pv(self, etype: str, obj: Obj) -> None:
        ref = (obj.get("spec") or {}).get("claimRef") or {}
        claim = ref.get("name")
        if ref.get("namespace") == self.ns and claim in self.claims:
            self._mine(claim, ref.get("uid"), lambda at: self._pv(claim, etype, obj, at))

    def _pv(self, claim: str, etype: str, obj: Obj, at: float | None) -> None:
        meta = _meta(obj)
        if etype == "DELETED":
            if self.tl.has(claim, "delete_requested"):  # reclaim Delete: the PV goes only once its claim is gone
                self.tl.mark(claim, "gone", at)
            self.tl.mark(claim, "pv_gone", at)
            return
        self.pv_of.setdefault(claim, meta.get("name", ""))
        if (why := pv_owner.made_by_hand(obj)) and claim not in self.made_before:
            self._bound_made_before(claim, meta.get("name", ""), why)
        self.tl.mark(claim, "pv_created", at)
        self.tl.server(claim, "pv_created", meta.get("creationTimestamp"))
        self.tl.server(claim, "pv_last_phase_transition", (obj.get("status") or {}).get("lastPhaseTransitionTime"))

    def _bound_made_before(self, claim: str, pv: str, why: str) -> None:
        """The claim bound a PV made beforehand (no provisioned-by): Kubernetes matches an Available PV before it
        provisions, whatever the class (pv_controller.go syncUnboundClaim), so its provisioned and bound timed a
        static bind, and its deletion would wait for a PV that is not deleted. Failed, its times not counted; its PV
        is not waited for, and the cleanup leaves it (said)."""
        self.made_before.add(claim)
        self.tl.fail(claim, f"bound a PV made beforehand (persistentvolume {pv}, {why}): its "
                            f"times are not a provisioning; delete that PV or give it another class, or use a class "
                            f"no Available PV matches")

    def on_pvs_listed(self, items: list[Obj]) -> None:
        present = set()
        for o in items:
            self.on_pv("MODIFIED", o)
            present.add(_meta(o).get("name"))
        listed = self.pv_watcher.listed_at if self.pv_watcher is not None else None
        for claim, pv in list(self.pv_of.items()):
            # gone only if seen before the list was asked for: a re-list after a dropped watch is older than the PVs
            # the claim watch saw Bound meanwhile (test_cp_watch_gap: their pv_gone came before the PVs went)
            created = self.tl.objects[claim].t.get("pv_created")
            if pv not in present and created is not None and (listed is None or created < listed):
                self.tl.mark(claim, "pv_gone")

    def on_pod(self, etype: str, obj: Obj) -> None:
        name = _meta(obj).get("name")
        claim = self.consumer_of.get(name)
        # gone only once its delete was sent: a poll's 404 before its create was sent (the claim accepted, the pod
        # not made yet; a slow or retried create) is no pod gone, and the run did not wait for it (review r2)
        if claim and etype == "DELETED" and name in self.consumers_deleting:
            self.consumers_gone.add(name)
        elif claim and (obj.get("status") or {}).get("phase") == "Running":
            self.tl.mark(claim, "consumer_running")

    def on_pods_listed(self, items: list[Obj]) -> None:
        for o in items:
            self.on_pod("MODIFIED", o)
        self.consumers_gone.update(self.consumers_deleting - {_meta(o).get("name") for o in items})

    def watchers(self) -> list[Watcher]:
        core = self.kube.core
        self.pv_watcher = Watcher(self.kube, core.list_persistent_volume, (), None, self.on_pvs_listed, self.on_pv,
                                  "PV")
        self.claim_watcher = Watcher(self.kube, core.list_namespaced_persistent_volume_claim, (self.ns,),
                                     self.ctx.selector, self.on_claims_listed, self.on_claim, "claim")
        out = [self.claim_watcher, self.pv_watcher]
        if self.p.consumer:
            out.append(Watcher(self.kube, core.list_namespaced_pod, (self.ns,), self.ctx.selector,
                               self.on_pods_listed, self.on_pod, "pod"))
        return out

    def poll_round(self) -> None:
        """The seed's method: GET every object not yet in its final state."""
        core = self.kube.core

        def get(fn: Any, *args: Any) -> Obj | None:
            try:
                return self.kube.call("get", fn, *args, retry=False)
            except ApiException as exc:
                if exc.status == 404:
                    return None
                raise

        def check(name: str) -> None:
            tl = self.tl
            deleting = tl.has(name, "delete_requested") or tl.has(name, "gone")  # gone: deleted by another
            if tl.has(name, "api_accepted") and (not tl.has(name, "bound") or (deleting and not tl.has(name, "gone"))):
                obj = get(core.read_namespaced_persistent_volume_claim, name, self.ns)
                self.on_claim("DELETED" if obj is None else "MODIFIED",
                              obj or {"metadata": {"name": name, "uid": self.uid.get(name)}})
            pv = self.pv_of.get(name)
            if pv and (not tl.has(name, "pv_created") or (deleting and not tl.has(name, "pv_gone"))):
                obj = get(core.read_persistent_volume, pv)
                if obj is not None:
                    self.on_pv("MODIFIED", obj)
                elif tl.has(name, "pv_created"):
                    tl.mark(name, "pv_gone")
            pod = self.consumer[name]
            if self.p.consumer and tl.has(name, "api_accepted") and (not tl.has(name, "consumer_running") or (
                    pod in self.consumers_deleting and pod not in self.consumers_gone)):
                obj = get(core.read_namespaced_pod, pod, self.ns)
                self.on_pod("MODIFIED" if obj is not None else "DELETED", obj or {"metadata": {"name": pod}})

        with ThreadPoolExecutor(self.p.concurrency, thread_name_prefix="podtax-cp-poll") as ex:
            list(ex.map(check, [n for n in self.names if self.tl.objects[n].error is None]))

    # ------------------------------------------------------------ acting
    def create(self, name: str) -> None:
        tl = self.tl
        tl.mark(name, "request_sent")
        try:
            obj = self.kube.call("create", self.kube.core.create_namespaced_persistent_volume_claim, self.ns,
                                 claim_manifest(self.ctx, name, self.p),
                                 again=tl.resender(name, "request_sent", "create"))
        except CALL_ERRORS as exc:
            if (own := stored_before(self.kube, exc, self.kube.core.read_namespaced_persistent_volume_claim, name,
                                     self.ns, self.ctx.attempt)) is None:
                collided = isinstance(exc, ApiException) and exc.status == 409
                self._error(name, "create", exc, self._collision(name) if collided else "")
                return
            obj = own
        tl.mark(name, "api_accepted")
        tl.server(name, "created", _meta(obj).get("creationTimestamp"))
        self._created(name, str(_meta(obj).get("uid")))
        if self.p.consumer:
            try:
                self.kube.call("create", self.kube.core.create_namespaced_pod, self.ns,
                               consumer_manifest(self.ctx, self.consumer[name], name),
                               again=tl.resender(name, None, "create consumer"))
            except CALL_ERRORS as exc:
                self._error(name, "create consumer", exc)

    def _collision(self, name: str) -> str:
        """What a 409 on creating `name` means and how to fix it: the claim is a leftover (of which campaign)."""
        try:
            obj = self.kube.call("get", self.kube.core.read_namespaced_persistent_volume_claim, name, self.ns,
                                 retry=False)
        except (ApiException, OSError):
            obj = {}
        labels = _meta(obj).get("labels") or {}
        campaign = labels.get(LABEL_CAMPAIGN)
        where = f"claim {self.ns}/{name} exists already"
        if labels.get(LABEL_KIND) == KIND and campaign:
            return (f"create: 409 Conflict: {where}, left by an earlier run of campaign {campaign}: remove "
                    f"its leftovers with `podtax volumes cleanup --campaign {campaign}`, then run again")
        return (f"create: 409 Conflict: {where} and is not podtax's (no {LABEL_KIND}={KIND} label): delete it "
                f"(kubectl delete pvc -n {self.ns} {name}) or run in another namespace")

    def delete(self, name: str) -> None:
        self._delete(name, self.kube.core.delete_namespaced_persistent_volume_claim, accepted="delete_accepted")

    def delete_consumers(self) -> None:
        """Delete the consumer pods and wait for them to be gone before the claims' deletes (kconsumers)."""
        created = [pod for pod, claim in self.consumer_of.items() if self.tl.has(claim, "api_accepted")]
        self.consumers_deleting.update(created)
        kconsumers.delete(self.ctx, self.kube, self.ns, created, self.p.concurrency, self.consumers_gone,
                          lambda pod, exc: self._error(self.consumer_of[pod], "delete", exc))

    # ------------------------------------------------------------ the run
    def not_ready(self) -> dict[str, str]:
        """Claims created but not Bound (or their consumer pod not Running yet) -> what they lack."""
        out = {}
        for r in list(self.tl.objects.values()):
            if r.error is None and "api_accepted" in r.t:
                if "bound" not in r.t:
                    out[r.name] = "not Bound"
                elif self.p.consumer and "consumer_running" not in r.t:
                    out[r.name] = "consumer pod not Running"
        return out

    def said(self, names: list[str]) -> dict[str, str]:
        """What the claims of `names` not Bound say holds them: each one's newest event (the provisioner's
        ProvisioningFailed), from one events list (kevents)."""
        pending = [n for n in names if not self.tl.has(n, "bound")]
        with self.uid_lock:
            uids = {n: self.uid[n] for n in pending if n in self.uid}
        return self.events.said(pending, "PersistentVolumeClaim", uids) if pending else {}

    def not_gone(self) -> dict[str, str]:
        """Claims whose deletion was asked for and is not finished -> what remains (the claim, or its PV; also the PV
        of a claim deleted by another, which goes as the run's do)."""
        out = {}
        for r in list(self.tl.objects.values()):
            if "delete_requested" in r.t and r.error is None and "gone" not in r.t:
                out[r.name] = "claim not deleted"
            elif "gone" in r.t and "pv_created" in r.t and "pv_gone" not in r.t and r.name not in self.made_before:
                # its PV goes only once the claim is gone: a claim whose DELETE got no answer is not waited for
                # (an audit: a stall window, 90 s at timeout 900, then given up again); the end-of-run cleanup tries
                out[r.name] = "PV not deleted"
        return out

    def execute(self) -> None:
        ctx, p = self.ctx, self.p
        with self.tl.setting_up():
            mode = kclasses.check(self.kube, self.p)
            self.wffc = mode == "WaitForFirstConsumer"
            # where the parser starts provisioned and bound (podtax.phases.provision_start); none: a consumer run whose
            # class could not be read, which may be either (its provisioned and bound are left out)
            start = "node" if self.wffc else "create" if mode or not self.p.consumer else None
            self.tl.volume_binding = {"volume_binding_mode": mode, "provision_start": start}
            self.kube.ensure_namespace(self.ns)
        watchers: list[Watcher] = []
        poller: threading.Thread | None = None
        polling = threading.Event()
        try:
            if p.observe == "watch":
                for w in self.watchers():
                    w.start(timeout=max(1.0, min(30.0, ctx.remaining())))
                    watchers.append(w)
                ctx.resync = lambda quiet_s: resync(watchers, quiet_s, max(1.0, min(30.0, ctx.remaining())))
            else:
                def loop() -> None:
                    while not polling.wait(p.poll_interval_s):
                        poll_safely(self.poll_round)
                poller = threading.Thread(target=loop, name="podtax-cp-poller", daemon=True)
                poller.start()
            pool(ctx, self.create, self.names, p.concurrency)
            wait_for(ctx, self.tl, "bind", self.not_ready, p.count, self.said)
            if p.consumer:
                self.delete_consumers()
            pool(ctx, self.delete, self.names, p.concurrency)
            wait_for(ctx, self.tl, "delete", self.not_gone, p.count)
        finally:
            polling.set()
            for w in watchers:
                w.stop()
            if poller is not None:
                poller.join(timeout=10)


def run(kube: Kube, ctx: Context, params: VolumeChurn, timeline: Timeline,
        measured: Callable[[], None] = lambda: None) -> None:
    """Execute one run into `timeline`, then call `measured` (the work is done; what follows is cleanup); on any
    failure delete what this run created, then re-raise."""
    churn = VolumeChurnK8s(kube, ctx, params, timeline)
    try:
        churn.execute()
    except BaseException as exc:
        cleanup.tell(exc, cleanup.after_failure(kube, ctx, timeline))
        raise
    measured()
    # a PV made beforehand (churn.made_before) is its owner's: not left behind, as the cleanup leaves it by design
    timeline.left_behind = sum(1 for n, r in timeline.objects.items() if "api_accepted" in r.t and (
        "gone" not in r.t or ("pv_created" in r.t and "pv_gone" not in r.t and n not in churn.made_before)))
    # a create that failed may still have made its claim (a 500 after the API server stored it, then a 409 on
    # the retry): the run's label is searched for leftovers then too (an audit found such a claim left Bound)
    if timeline.left_behind or any(r.error for r in timeline.objects.values()):
        volumes = {churn.pv_of[n] for n, r in timeline.objects.items()
                   if n in churn.pv_of and n not in churn.made_before
                   and ("delete_requested" in r.t or "gone" in r.t) and "pv_gone" not in r.t}
        cleanup.end_of_run(kube, ctx, timeline, timeline.left_behind, volumes)
