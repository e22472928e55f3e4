"""pod-startup on Kubernetes: create `count` pods (optionally each with a fresh claim) pinned to the
run's node, time created -> scheduled -> initialized -> ready_to_start_containers -> started -> containers_ready ->
ready when the watch shows each (PodScheduled, Initialized, PodReadyToStartContainers, ContainersReady and Ready are
the conditions kube-burner's podLatency reads; its
times are the conditions' 1-second lastTransitionTime, PodScheduled's and Ready's kept here as server fields only),
then delete them and time deleted -> gone."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from kubernetes.client.rest import ApiException
from podtax.templates import PodStartup, VolumeChurn

from podtax_runner.controlplane import cleanup, common, kevents
from podtax_runner.controlplane.apierrors import CALL_ERRORS
from podtax_runner.controlplane.churn import ObjectChurn
from podtax_runner.controlplane.common import Context, poll_safely, pool
from podtax_runner.controlplane.kubeapi import Kube, Obj, stored_before
from podtax_runner.controlplane.kvolumes import claim_manifest
from podtax_runner.controlplane.kwatch import Watcher, resync
from podtax_runner.controlplane.timeline import Timeline
from podtax_runner.controlplane.waits import wait_for


def pod_manifest(ctx: Context, name: str, p: PodStartup, claim: str | None) -> Obj:
    spec: Obj = {"nodeSelector": {"kubernetes.io/hostname": ctx.run.node},
                 "tolerations": [{"operator": "Exists", "effect": "NoSchedule"}],
                 "terminationGracePeriodSeconds": 1, "automountServiceAccountToken": False,
                 "restartPolicy": "Always", "containers": [{"name": "pod", "image": p.image}]}
    if claim:
        spec["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return {"apiVersion": "v1", "kind": "Pod", "spec": spec,
            "metadata": {"name": name, "labels": ctx.labels(),
                         "annotations": {"podtax.io/sim-duration-seconds": "inf", **ctx.annotations()}}}


# the pod's end points in the order a kubelet reaches them, and what a pod given up lacked
_NOT_REACHED = (("scheduled", "not scheduled"), ("initialized", "not Initialized"), ("started", "not started"),
                ("containers_ready", "containers not Ready"), ("ready", "not Ready"))


def _condition(status: Obj, kind: str) -> Obj | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind and c.get("status") == "True"),
                None)


SAID_CHARS = 110  # of what a stuck pod said: its error, with it, stays within timeline.ERROR_CHARS
_STARTING = ("ContainerCreating", "PodInitializing")  # a container's waiting reasons that hold nothing up


def held_by(obj: Obj) -> str | None:
    """What a pod not yet Ready says holds it, in its own words: PodScheduled False's reason and message
    (`Unschedulable: 0/3 nodes are available: ...`), a container's waiting reason other than starting
    (`ImagePullBackOff: Back-off pulling image ...`, `CrashLoopBackOff: ...`, with its restarts) or its terminated
    state (not an init container's exit code 0, Completed: done, as a mesh's injected `istio-init` is before the
    containers' images pull), else a pod Failed or Succeeded; None when it says nothing."""
    status = obj.get("status") or {}

    def words(*parts: object) -> str:
        return ": ".join(str(p) for p in parts if p not in (None, ""))

    said: str | None = None
    for c in status.get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason"):
            said = words(c["reason"], c.get("message"))
    inits = status.get("initContainerStatuses") or []
    statuses = [*inits, *(status.get("containerStatuses") or [])]
    for i, s in enumerate(statuses if said is None else []):
        state, restarts = s.get("state") or {}, s.get("restartCount") or 0
        waiting, ended = state.get("waiting") or {}, state.get("terminated") or {}
        if i < len(inits) and ended.get("exitCode") == 0:  # an init container done (Completed) holds nothing up
            continue
        if waiting.get("reason") and waiting["reason"] not in _STARTING:
            said = words(f"container {s.get('name')}", waiting["reason"], waiting.get("message"))
        elif ended:
            said = words(f"container {s.get('name')}", f"terminated, exit code {ended.get('exitCode')}",
                         ended.get("reason"), ended.get("message"))
        if said:
            said += f" ({restarts} restarts)" if restarts else ""
            break
    if said is None and status.get("phase") in ("Failed", "Succeeded"):
        said = words(f"pod {status['phase']}", status.get("reason"), status.get("message"))
    return f"the pod said: {said[:SAID_CHARS]}" if said else None


class PodStartupRun(ObjectChurn):
    def __init__(self, kube: Kube, ctx: Context, params: PodStartup, timeline: Timeline) -> None:
        self.kube, self.ctx, self.p, self.tl = kube, ctx, params, timeline
        self.ns = ctx.namespace
        self.names = [ctx.name("ps", i + 1) for i in range(params.count)]
        self.pods = set(self.names)
        self.failures: Counter[str] = Counter()
        self.said: dict[str, str | None] = {}  # pod -> what it last said holds it (held_by), while not Ready
        self.uid: dict[str, str] = {}  # pod -> the uid its create answered (events of other uids are ignored)
        self.early: dict[str, list[tuple[str, Obj, float]]] = {}  # pod -> what was seen of it before that answer
        self.events = kevents.Events(kube, self.ns)
        self.lock = threading.Lock()
        self.watcher: Watcher | None = None
        for n in self.names:
            timeline.add(n)

    def on_pod(self, etype: str, obj: Obj) -> None:
        """Record what the watch (or a list, or a poll) shows of a pod of the run: only of the pod whose uid its
        create answered; what is seen of a name before that answer waits for it (a pod left under the name by an
        earlier run, listed when the watch starts, is not this run's: its conditions were once recorded as this
        pod's end points, before its request_sent)."""
        meta = obj.get("metadata") or {}
        name, uid = meta.get("name"), meta.get("uid")
        if name not in self.pods:
            return
        if uid is not None:
            with self.lock:
                mine = self.uid.get(name)
                if mine is None:
                    self.early.setdefault(name, []).append((etype, obj, self.tl.now()))
                    return
            if uid != mine:
                return
        self._record(name, etype, obj)

    def _mine(self, name: str, uid: str) -> None:
        """The create of `name` answered `uid`: what was seen of that pod before is recorded, when it was seen."""
        with self.lock:
            self.uid[name] = uid
            seen = self.early.pop(name, [])
        for etype, obj, at in seen:
            if (obj.get("metadata") or {}).get("uid") == uid:
                self._record(name, etype, obj, at)

    def _record(self, name: str, etype: str, obj: Obj, at: float | None = None) -> None:
        tl = self.tl
        if etype == "DELETED":
            if tl.mark(name, "gone", at) and not tl.has(name, "delete_requested"):
                self.gone_early(name)
            return
        status = obj.get("status") or {}
        if not tl.has(name, "ready"):
            self.said[name] = held_by(obj)
        if (cond := _condition(status, "PodScheduled")) and tl.mark(name, "scheduled", at):
            tl.server(name, "scheduled", cond.get("lastTransitionTime"))
            tl.server(name, "node", (obj.get("spec") or {}).get("nodeName"))
        # Initialized and ContainersReady: no server time kept (a pod's line stays within dispatch.OBJECT_BYTES)
        if _condition(status, "Initialized"):
            tl.mark(name, "initialized", at)
        if _condition(status, "PodReadyToStartContainers"):  # the sandbox is up; no server time either
            tl.mark(name, "ready_to_start_containers", at)
        statuses = status.get("containerStatuses") or []
        started = status.get("phase") == "Running" or bool(statuses and all(s.get("started") for s in statuses))
        if started and tl.mark(name, "started", at):
            running = [((s.get("state") or {}).get("running") or {}).get("startedAt") for s in statuses]
            tl.server(name, "started", max((r for r in running if r), default=status.get("startTime")))
        if _condition(status, "ContainersReady"):
            tl.mark(name, "containers_ready", at)
        if (cond := _condition(status, "Ready")) and tl.mark(name, "ready", at):
            tl.server(name, "ready", cond.get("lastTransitionTime"))

    def on_listed(self, items: list[Obj]) -> None:
        present = set()
        for o in items:
            self.on_pod("MODIFIED", o)
            present.add((o.get("metadata") or {}).get("name"))
        listed_at = self.watcher.listed_at if self.watcher is not None else None
        for name in self.pods - present:
            t = self.tl.objects[name].t
            # absent from a list asked for after its create returned: gone (a list asked for before may not show it)
            if "delete_requested" in t or (listed_at is not None and t.get("api_accepted", listed_at) < listed_at):
                self.on_pod("DELETED", {"metadata": {"name": name}})

    def poll_round(self) -> None:
        def check(name: str) -> None:
            tl = self.tl
            if not tl.has(name, "api_accepted") or tl.has(name, "gone"):
                return
            if tl.has(name, "ready") and not tl.has(name, "delete_requested"):
                return
            try:
                obj = self.kube.call("get", self.kube.core.read_namespaced_pod, name, self.ns, retry=False)
                self.on_pod("MODIFIED", obj)
            except ApiException as exc:
                if exc.status != 404:
                    raise
                self.on_pod("DELETED", {"metadata": {"name": name}})

        with ThreadPoolExecutor(self.p.concurrency, thread_name_prefix="podtax-cp-poll") as ex:
            list(ex.map(check, self.names))

    def create(self, name: str) -> None:
        claim = None
        try:
            core = self.kube.core
            if self.p.with_volume:
                claim = name.replace("podtax-ps-", "podtax-psv-", 1)
                vc = VolumeChurn(storage_class=self.p.storage_class, size=self.p.size)
                try:
                    self.kube.call("create", core.create_namespaced_persistent_volume_claim, self.ns,
                                   claim_manifest(self.ctx, claim, vc))
                except ApiException as exc:  # a 409 on a retry for the run's own claim: an earlier attempt made it
                    if stored_before(self.kube, exc, core.read_namespaced_persistent_volume_claim, claim, self.ns,
                                     self.ctx.attempt) is None:
                        raise
            self.tl.mark(name, "request_sent")
            try:
                obj = self.kube.call("create", core.create_namespaced_pod, self.ns,
                                     pod_manifest(self.ctx, name, self.p, claim),
                                     again=self.tl.resender(name, "request_sent", "create"))
            except ApiException as exc:  # likewise: timed from the first attempt (resender held it)
                if (obj := stored_before(self.kube, exc, core.read_namespaced_pod, name, self.ns,
                                         self.ctx.attempt)) is None:
                    if exc.status != 409:
                        raise
                    self._error(name, "create", exc, self._collision(name))  # counted once, in its words
                    return
            self.tl.mark(name, "api_accepted")
            self.tl.server(name, "created", (obj.get("metadata") or {}).get("creationTimestamp"))
            if uid := (obj.get("metadata") or {}).get("uid"):
                self._mine(name, str(uid))
        except CALL_ERRORS as exc:
            self._error(name, "create", exc)

    def _collision(self, name: str) -> str:
        """What a 409 on creating pod `name` means and how to fix it: a leftover (of which campaign), or not ours."""
        try:
            obj = self.kube.call("get", self.kube.core.read_namespaced_pod, name, self.ns, retry=False)
        except (ApiException, OSError):
            obj = {}
        labels = (obj.get("metadata") or {}).get("labels") or {}
        where, campaign = f"pod {self.ns}/{name} exists already", labels.get(common.LABEL_CAMPAIGN)
        if labels.get(common.LABEL_KIND) == common.KIND and campaign:
            return (f"create: 409 Conflict: {where}, left by an earlier run of campaign {campaign}: remove its "
                    f"leftovers with `podtax volumes cleanup --campaign {campaign}`, then run again")
        return (f"create: 409 Conflict: {where} and is not podtax's (no {common.LABEL_KIND}={common.KIND} label): "
                f"delete it (kubectl delete pod -n {self.ns} {name}) or run in another namespace")

    def held(self, names: list[str]) -> dict[str, str]:
        """What holds each pod of `names`: what its status says (held_by); for those whose status says nothing (a
        pod ContainerCreating: a volume that does not mount, a sandbox its network plugin does not set up, an image
        still pulling), its newest event (FailedMount, FailedCreatePodSandBox, Pulling), from one events list
        (kevents); those with neither left out."""
        out = {n: w for n in names if (w := self.said.get(n))}
        if rest := [n for n in names if n not in out]:
            with self.lock:
                uids = {n: self.uid[n] for n in rest if n in self.uid}
            out.update(self.events.said(rest, "Pod", uids))
        return {n: out[n] for n in names if n in out}

    def delete(self, name: str) -> None:
        self._delete(name, self.kube.core.delete_namespaced_pod)

    def pending(self, phase: str, since: str, what: str) -> dict[str, str]:
        """Objects past `since` without an error that have not reached `phase` -> `what` they lack."""
        return {r.name: what for r in list(self.tl.objects.values())
                if r.error is None and since in r.t and phase not in r.t}

    def not_ready(self) -> dict[str, str]:
        """Pods created but not Ready -> the first phase they did not reach."""
        return {r.name: next(what for phase, what in _NOT_REACHED if phase not in r.t)
                for r in list(self.tl.objects.values()) if r.error is None and "api_accepted" in r.t
                and "ready" not in r.t}

    def execute(self) -> None:
        ctx, p = self.ctx, self.p
        with self.tl.setting_up():
            self.kube.ensure_namespace(self.ns)
        watcher: Watcher | None = None
        poller: threading.Thread | None = None
        polling = threading.Event()
        try:
            if p.observe == "watch":
                watcher = self.watcher = Watcher(self.kube, self.kube.core.list_namespaced_pod, (self.ns,),
                                                 ctx.selector, self.on_listed, self.on_pod, "pod")
                watcher.start(timeout=max(1.0, min(30.0, ctx.remaining())))
                ctx.resync = lambda quiet_s: resync([watcher], quiet_s, max(1.0, min(30.0, ctx.remaining())))
            else:
                def loop() -> None:
                    while not polling.wait(p.poll_interval_s):
                        poll_safely(self.poll_round)
                poller = threading.Thread(target=loop, name="podtax-cp-poller", daemon=True)
                poller.start()
            pool(ctx, self.create, self.names, p.concurrency)
            wait_for(ctx, self.tl, "start", self.not_ready, p.count, self.held)
            pool(ctx, self.delete, self.names, p.concurrency)
            wait_for(ctx, self.tl, "delete", lambda: self.pending("gone", "delete_requested", "not deleted"), p.count)
        finally:
            polling.set()
            if watcher is not None:
                watcher.stop()
            if poller is not None:
                poller.join(timeout=10)


def run(kube: Kube, ctx: Context, params: PodStartup, timeline: Timeline,
        measured: Callable[[], None] = lambda: None) -> None:
    """Execute one run into `timeline`, then call `measured` (the work is done; what follows is cleanup); on any
    failure delete what this run created, then re-raise."""
    try:
        PodStartupRun(kube, ctx, params, timeline).execute()
    except BaseException as exc:
        cleanup.tell(exc, cleanup.after_failure(kube, ctx, timeline))
        raise
    measured()
    # what stays if the cleanup fails: pods not gone, and each pod's claim (the run deletes only the pods)
    left = sum(("api_accepted" in r.t and "gone" not in r.t) + (params.with_volume and "request_sent" in r.t)
               for r in timeline.objects.values())
    if params.with_volume or left:
        cleanup.end_of_run(kube, ctx, timeline, left)
