"""A trivial built-in "default-scheduler": binds pods whose schedulerName is empty or
default-scheduler to the first feasible node (in cluster-file order). Feasible means: Ready, not
cordoned, nodeSelector and required node affinity match, NoSchedule/NoExecute taints tolerated.
It does not account for resources. Pods of any other schedulerName are left alone.

Volumes, as kube-scheduler's VolumeBinding plugin: a pod whose claim is missing, being deleted, or unbound
with an Immediate storage class is unschedulable until the claim is bound; for an unbound
WaitForFirstConsumer claim the scheduler picks the node, writes it on the claim
(volume.kubernetes.io/selected-node: the provisioner's cue) and binds the pod once the claim is Bound, to
that node. (An audit: pods were scheduled before their claims were bound, so a pod with a volume was
"scheduled" faster than one without.)

Pods are handled one at a time from a WorkQueue, as kube-scheduler's loop takes the next pod whatever became of the
last. A pod is bound through the API server's binding (Server.bind, where fault failCreates 'bindings/...' refuses
it), as kube-scheduler's DefaultBinder binds; a refused binding is its handleSchedulingFailure: a FailedScheduling
event, PodScheduled False/SchedulerError, and the pod tried again after a backoff, not on its own update meanwhile; a
pod deleted meanwhile has its retry cancelled (one created again under its name starts afresh). A binding stored all
the same (a fault's `stored` answer) gets the event but no PodScheduled False, which kube-scheduler writes on the bound
pod too (its kubelet then says True).

The backoff is kube-scheduler 1.30's (kubesim says it is v1.30.0): 1 s doubled per failed scheduling attempt of the
pod, at most 10 s (podInitialBackoffDuration, podMaxBackoffDuration; calculateBackoffDuration of pInfo.Attempts),
Unschedulable attempts counted with binding failures, from the attempt's end (AddUnschedulableIfNotPresent refreshes
pInfo.Timestamp); an unschedulable pod moved by a node or claim change while it backs off waits out the rest (the
backoff queue), so a pod created beside its Immediate claim is bound a second after its first attempt, not as the
claim binds. A retry that finds the pod unschedulable for the same reason (the retry tick, kubesim's stand-in for the
cluster events kube-scheduler waits for) writes nothing and is no attempt. (From 1.34, kubernetes#128748, errors such
as a refused binding count apart: consecutive errors, reset by an Unschedulable attempt.)"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeAlias

from podtax_kubesim import resources as R
from podtax_kubesim.api import Api, set_condition
from podtax_kubesim.selectors import node_requirement
from podtax_kubesim.storageadmission import default_class
from podtax_kubesim.store import Event
from podtax_kubesim.util import ApiError, Obj, deepcopy
from podtax_kubesim.workqueue import WorkQueue

NAME = "default-scheduler"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
Key: TypeAlias = tuple[str, str]
MAX_BACKOFF = 10.0  # times retry_seconds: kube-scheduler's podMaxBackoffDuration over its podInitialBackoffDuration


def tolerates(taint: Obj, tolerations: list[Obj]) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        if tol.get("operator") == "Exists":
            if not tol.get("key") or tol["key"] == taint.get("key"):
                return True
        elif tol.get("key") == taint.get("key") and tol.get("value", "") == taint.get("value", ""):
            return True
    return False


def _affinity_ok(pod: Obj, node: Obj) -> bool:
    terms = (((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
    if not terms:
        return True
    labels = node["metadata"].get("labels") or {}
    fields = {"metadata.name": node["metadata"]["name"]}
    for term in terms:
        if all(node_requirement(e, labels) for e in term.get("matchExpressions") or []) and \
                all(node_requirement(e, fields) for e in term.get("matchFields") or []):
            return True
    return False


def why_not(pod: Obj, node: Obj) -> str:
    """'' when the pod fits the node, else a short reason as kube-scheduler words it."""
    conds = {c["type"]: c["status"] for c in node.get("status", {}).get("conditions", [])}
    tolerations = pod["spec"].get("tolerations") or []
    if conds.get("Ready") != "True":
        return "node(s) were not ready"
    if node["spec"].get("unschedulable") and not tolerates(
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}, tolerations):
        return "node(s) were unschedulable"
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (pod["spec"].get("nodeSelector") or {}).items()):
        return "node(s) didn't match Pod's node affinity/selector"
    if not _affinity_ok(pod, node):
        return "node(s) didn't match Pod's node affinity/selector"
    for taint in node["spec"].get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(taint, tolerations):
            return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}"
    return ""


class DefaultScheduler:
    def __init__(self, api: Api, retry_seconds: float = 1.0,
                 bind: Callable[[str, str, Obj], Obj] | None = None) -> None:
        self.api, self.store = api, api.store
        self.bind = bind or api.bind  # the emulator's: Server.bind, the API server's answer with its faults
        self.queue: WorkQueue[Key] = WorkQueue(self._handle)
        self.unschedulable: dict[Key, str] = {}
        self.waiting: set[Key] = set()  # pods whose WaitForFirstConsumer claims are being provisioned
        self.attempts: dict[Key, int] = {}  # pods not bound yet -> their failed scheduling attempts (pInfo.Attempts)
        self.failed_at: dict[Key, float] = {}  # of those, when the last one failed (loop time): the backoff's start
        self.delays: dict[Key, list[float]] = {}  # pods whose binding failed -> each backoff (seconds) taken, in order
        self.backing_off: dict[Key, asyncio.TimerHandle] = {}  # pods waiting out a backoff -> its retry
        self.retry_seconds = retry_seconds
        self.store.listen(R.PODS, self._on_pod)
        self.store.listen(R.NODES, self._on_node)
        self.store.listen(R.PVCS, self._on_claim)

    def start(self) -> None:
        asyncio.get_running_loop().call_later(self.retry_seconds, self._retry)

    @staticmethod
    def wants(pod: Obj) -> bool:
        spec = pod["spec"]
        return (not spec.get("nodeName") and spec.get("schedulerName", NAME) in ("", NAME)
                and not pod["metadata"].get("deletionTimestamp") and not spec.get("schedulingGates"))

    def _on_pod(self, ev: Event) -> None:
        key = (ev.obj["metadata"]["namespace"], ev.obj["metadata"]["name"])
        if ev.type != "DELETED" and self.wants(ev.obj):
            if key not in self.unschedulable and key not in self.backing_off:
                self.queue.add(key)
        else:
            self.unschedulable.pop(key, None)
            self._forget(key)

    def _forget(self, key: Key) -> None:
        """The pod bound or gone: its attempts forgotten, a retry due cancelled (a pod created again under its name
        would be tried early)."""
        self.attempts.pop(key, None)
        self.failed_at.pop(key, None)
        self.delays.pop(key, None)
        timer = self.backing_off.pop(key, None)
        if timer is not None:
            timer.cancel()

    def _bound(self, pod: Obj) -> list[Obj]:
        names = [(v.get("persistentVolumeClaim") or {}).get("claimName") for v in pod["spec"].get("volumes") or []]
        claims = [self.store.get(R.PVCS, pod["metadata"]["namespace"], n) for n in names if n]
        return [c for c in claims if c is not None]

    def _on_claim(self, ev: Event) -> None:
        if ev.type != "DELETED" and ev.obj["spec"].get("volumeName") and not (ev.old or {}).get("spec", {}).get(
                "volumeName"):  # bound now: pods waiting on a claim may go
            placed = set(self.waiting)  # their binding waits on the claims (VolumeBinding's PreBind): no backoff
            for key in placed:
                self.queue.add(key)
            self._all_again(placed)

    def _on_node(self, ev: Event) -> None:
        self._all_again()

    def _retry(self) -> None:
        self._all_again()
        asyncio.get_running_loop().call_later(self.retry_seconds, self._retry)

    def _all_again(self, queued: set[Key] | frozenset[Key] = frozenset()) -> None:
        for key in list(self.unschedulable):
            if key not in queued:
                self._again(key)

    def backoff(self, key: Key) -> float:
        """The pod's backoff (seconds) after its failed attempts: calculateBackoffDuration."""
        tries = self.attempts.get(key, 0)
        return self.retry_seconds * min(2 ** (tries - 1), MAX_BACKOFF) if tries else 0.0

    def _again(self, key: Key) -> None:
        """An unschedulable pod tried again, once its backoff from its last failed attempt is over (kube-scheduler
        moves one still backing off to its backoff queue)."""
        if key in self.backing_off:
            return
        loop = asyncio.get_running_loop()
        if (at := self.failed_at.get(key)) is not None and (left := at + self.backoff(key) - loop.time()) > 0:
            self.backing_off[key] = loop.call_later(left, self._backed_off, key)
        else:
            self.queue.add(key)

    def _failed(self, key: Key) -> float:
        """A scheduling attempt of the pod failed now: counted; its backoff (seconds) from now."""
        self.attempts[key] = self.attempts.get(key, 0) + 1
        self.failed_at[key] = asyncio.get_running_loop().time()
        return self.backoff(key)

    def _handle(self, key: Key) -> None:
        pod = self.store.get(R.PODS, *key)
        if pod is not None and self.wants(pod):
            self.schedule(pod)

    def _backed_off(self, key: Key) -> None:
        del self.backing_off[key]  # a pod deleted meanwhile had this cancelled
        self.queue.add(key)

    def _bind_failed(self, pod: Obj, err: ApiError) -> None:
        """kube-scheduler's handleSchedulingFailure for a binding refused: said, and the pod queued again after its
        backoff (unless the binding was done all the same: a fault's `stored` answer)."""
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
        message = f'running Bind plugin "DefaultBinder": {err.message}'
        self.api.record_event(pod, "FailedScheduling", message, "Warning", component=NAME, action="Scheduling",
                              repeat=True)
        now = self.store.get(R.PODS, *key)
        if now is None or now["spec"].get("nodeName"):
            self._forget(key)
            return
        delay = self._failed(key)
        self.delays.setdefault(key, []).append(delay)
        # before the update, whose event must not queue it at once
        self.backing_off[key] = asyncio.get_running_loop().call_later(delay, self._backed_off, key)
        new = deepcopy(now)
        set_condition(new["status"], "PodScheduled", "False", "SchedulerError", message)
        if new["status"] != now["status"]:  # as kube-scheduler's updatePod: no patch when the pod says so already
            self.store.update(R.PODS, new)

    def _claims(self, pod: Obj) -> tuple[str, list[Obj]]:
        """('', unbound WaitForFirstConsumer claims) when the pod's claims let it be scheduled, else why not."""
        waiting: list[Obj] = []
        for vol in pod["spec"].get("volumes") or []:
            name = (vol.get("persistentVolumeClaim") or {}).get("claimName")
            if not name:
                continue
            claim = self.store.get(R.PVCS, pod["metadata"]["namespace"], name)
            if claim is None:
                return f'persistentvolumeclaim "{name}" not found', []
            if claim["metadata"].get("deletionTimestamp"):
                return f'persistentvolumeclaim "{name}" is being deleted', []
            if claim["spec"].get("volumeName"):
                continue
            sc_name = claim["spec"].get("storageClassName") or default_class(self.store.items(R.STORAGECLASSES))
            sc = self.store.get(R.STORAGECLASSES, "", sc_name) if sc_name else None
            if sc is None or sc.get("volumeBindingMode") != "WaitForFirstConsumer":
                return "pod has unbound immediate PersistentVolumeClaims", []
            waiting.append(claim)
        return "", waiting

    def schedule(self, pod: Obj) -> None:
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
        reasons: dict[str, int] = {}
        nodes = list(self.store.items(R.NODES))
        total = len(nodes)
        why, unbound = self._claims(pod)
        if why:
            reasons[why] = total
            nodes = []
        selected = [c["metadata"].get("annotations", {}).get(SELECTED_NODE) for c in unbound]
        picked = next((n for n in selected if n), None) or next(
            ((c["metadata"].get("annotations") or {}).get(SELECTED_NODE) for c in self._bound(pod)), None)
        nodes.sort(key=lambda n: n["metadata"]["name"] != picked)  # the node its claims were provisioned for
        for node in nodes:
            reason = why_not(pod, node)
            if not reason:
                self.unschedulable.pop(key, None)
                if unbound:  # the provisioner's cue; the pod is bound once its claims are
                    self.waiting.add(key)
                    for claim in unbound:
                        if not (claim["metadata"].get("annotations") or {}).get(SELECTED_NODE):
                            new = deepcopy(claim)
                            new["metadata"].setdefault("annotations", {})[SELECTED_NODE] = node["metadata"]["name"]
                            self.store.update(R.PVCS, new)
                    return
                self.waiting.discard(key)
                try:
                    self.bind(key[0], key[1], {"metadata": {"name": key[1], "uid": pod["metadata"]["uid"]},
                                               "target": {"kind": "Node", "name": node["metadata"]["name"]}})
                except ApiError as err:
                    self._bind_failed(pod, err)
                    return
                self._forget(key)
                self.api.record_event(pod, "Scheduled", f"Successfully assigned {key[0]}/{key[1]} to "
                                      f"{node['metadata']['name']}", component=NAME, action="Binding")
                return
            reasons[reason] = reasons.get(reason, 0) + 1
        message = f"0/{total} nodes are available: " + ", ".join(
            f"{n} {r}" for r, n in sorted(reasons.items())) + "."
        if self.unschedulable.get(key) == message:  # no new answer: written before, and no attempt counted
            return
        self.unschedulable[key] = message
        self._failed(key)
        new = deepcopy(pod)
        set_condition(new["status"], "PodScheduled", "False", "Unschedulable", message)
        self.store.update(R.PODS, new)
        self.api.record_event(pod, "FailedScheduling", message, "Warning", component=NAME, action="Scheduling")
