"""The scheduler: informers feed the state and the queue; one thread decides; a pool binds and explains.

Only the leader pops pods. A decision assumes the pod on its node at once (the ledger), so the
next decision already sees the resources taken; the bind, the PodScheduled condition and the
PlacementMade message happen in the binder pool, the Events in the event recorder (recorder.py).
The Scheduled Event and PlacementMade say what the benchmark evidence did (scoring.describe): the
group ranked by, evidence ignored as flagged or older than the TTL; a pod whose podtax.io/params
match no stored results also gets a Warning Event (reason BenchmarkParamsUnmatched), a pod whose test has
no stored results, or is no podtax test, one with reason BenchmarkUnmeasured.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from podtax import subjects
from podtax.config import SchedulerSettings
from podtax.events import Candidate, PlacementMade, PlacementMadeV1

from podtax_scheduler.affinity_score import InterPodAffinityScore
from podtax_scheduler.algorithm import Decision, decide
from podtax_scheduler.informer import Informer, unsynced
from podtax_scheduler.kube import Kube, PodGone, api_problem, condition_message, retry_after
from podtax_scheduler.metrics import Metrics
from podtax_scheduler.model import PodInfo
from podtax_scheduler.profile import Profile
from podtax_scheduler.queue import SchedulingQueue
from podtax_scheduler.recorder import EventRecorder, PodEvent
from podtax_scheduler.scorestore import ScoreStore
from podtax_scheduler.scoring import BenchmarkScore, LeastAllocated, ScorePlugin, describe
from podtax_scheduler.spread_score import PodTopologySpreadScore
from podtax_scheduler.state import ClusterState
from podtax_scheduler.taint_score import TaintTolerationScore

log = logging.getLogger("podtax.scheduler")
Obj = dict[str, Any]
SOURCE = "podtax/scheduler"


class Elector(Protocol):
    def is_leader(self) -> bool: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...


def placement_event(pm: PlacementMade, source: str = SOURCE) -> PlacementMadeV1:
    return PlacementMadeV1(subject=subjects.join(subjects.PLACEMENT_MADE, pm.namespace, pm.pod), source=source,
                           data=pm)


class Scheduler:
    def __init__(self, settings: SchedulerSettings, kube: Kube, watch_kube: Kube, profile: Profile,
                 store: ScoreStore, elector: Elector, metrics: Metrics | None = None,
                 publish: Callable[[PlacementMadeV1], None] | None = None, binders: int = 16,
                 seed: int | None = None) -> None:
        self.settings = settings
        self.kube = kube
        self.profile = profile
        self.store = store
        self.elector = elector
        self.metrics = metrics or Metrics()
        self.publish = publish
        self.state = ClusterState()
        self.queue = SchedulingQueue()
        self.namespaces = {n.strip() for n in settings.scheduler_namespaces.split(",") if n.strip()} or None
        bench = profile.score.BenchmarkScore
        self.plugins: list[ScorePlugin] = [
            BenchmarkScore(store, settings.scheduler_score_ttl_s, shrink_runs=bench.shrink_runs,
                           missing_score=bench.missing_score, statistic=bench.statistic,
                           sensitivity=bench.sensitivity, unmeasured=bench.unmeasured,
                           ignore_flags=bench.ignore_flags, no_interval_noise=bench.no_interval_noise),
            LeastAllocated(),
            InterPodAffinityScore(profile.score.InterPodAffinity.hard_pod_affinity_weight),
            PodTopologySpreadScore(),
            TaintTolerationScore(),
        ]
        self.weights = profile.weights()
        self.rng = random.Random(seed)
        self.recorder = EventRecorder(self._create_event, kube.bump_event,
                                      on_error=lambda _exc: self.metrics.errors.labels("event").inc())
        self.pool = ThreadPoolExecutor(max_workers=binders, thread_name_prefix="binder")
        self.node_informer = Informer(watch_kube, "nodes", self._nodes_synced, self._node_event)
        self.pod_informer = Informer(watch_kube, "pods", self._pods_synced, self._pod_event)
        self.ns_informer = Informer(watch_kube, "namespaces", self._namespaces_synced, self._namespace_event)
        self._stop = threading.Event()
        self._life = threading.Lock()  # start's last check of _stop and what it starts, against stop()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ which pods are ours

    def wants(self, pod: PodInfo) -> bool:
        return (pod.scheduler_name == self.settings.scheduler_name and not pod.node_name and not pod.terminal
                and not pod.deleting and not pod.gated
                and (self.namespaces is None or pod.namespace in self.namespaces))

    # ------------------------------------------------------------ informer handlers

    def _nodes_synced(self, items: list[Obj]) -> None:
        names = {(o.get("metadata") or {}).get("name") for o in items}
        for gone in [n for n in self.state.nodes if n not in names]:
            self.state.delete_node(gone)
        for obj in items:
            self.state.upsert_node(obj)
        self.queue.move_all_to_active()

    def _node_event(self, etype: str, obj: Obj) -> None:
        if etype == "DELETED":
            self.state.delete_node((obj.get("metadata") or {}).get("name", ""))
        elif self.state.upsert_node(obj):
            self.queue.move_all_to_active()

    def _namespaces_synced(self, items: list[Obj]) -> None:
        if changed := self.state.namespaces.sync(items):
            self.queue.move_namespace_waiters_to_active(changed)

    def _namespace_event(self, etype: str, obj: Obj) -> None:
        """A namespace added or relabelled may change what a namespaceSelector selects: the unschedulable pods whose
        fit reads namespace labels get another try (queue.move_namespace_waiters_to_active). kube-scheduler does not
        requeue on namespace events (InterPodAffinity registers only Pod and Node events); we do, so that a pod
        waiting for a namespace's labels is placed when they change, not at the next pod or node event or the
        5-minute flush. One gone frees nothing: its pods are gone before it."""
        if changed := self.state.namespaces.upsert(obj, deleted=etype == "DELETED"):
            self.queue.move_namespace_waiters_to_active(changed)

    def _pods_synced(self, items: list[Obj]) -> None:
        uids = {(o.get("metadata") or {}).get("uid") for o in items}
        for gone in [u for u in self.state.pods if u not in uids]:
            self.state.delete_pod(gone)
            self.queue.remove(gone)
        for obj in items:
            self._pod_event("ADDED", obj)
        self.queue.move_all_to_active()

    def _pod_event(self, etype: str, obj: Obj) -> None:
        if etype == "DELETED":
            uid = (obj.get("metadata") or {}).get("uid", "")
            counted = uid in self.state.pod_node
            self.state.delete_pod(uid)
            self.queue.remove(uid)
            if counted:
                self.queue.move_all_to_active()
            return
        pod, old = self.state.upsert_pod(obj)
        if pod.node_name and not pod.terminal and (old is None or old.node_name != pod.node_name
                                                   or old.labels != pod.labels):
            self.queue.move_pod_waiters_to_active()  # what a pod's affinity or topology spread may wait for
        if self.wants(pod):
            if pod.uid not in self.state.assumed:
                self.queue.add(pod, changed=old is None or not pod.same_to_schedule(old))
        else:
            self.queue.remove(pod.uid)
            if pod.terminal and old is not None and not old.terminal and pod.node_name:
                self.queue.move_all_to_active()  # resources were freed

    # ------------------------------------------------------------ the scheduling loop

    def schedule_one(self, timeout: float = 0.5) -> Decision | None:
        item = self.queue.pop(timeout)
        if item is None:
            return None
        pod, attempt, first_seen = item
        t0 = time.perf_counter()
        with self.state.lock:
            current = self.state.pods.get(pod.uid)
            if current is None or not self.wants(current) or pod.uid in self.state.assumed:
                self.queue.done(pod.uid)
                return None
            try:
                decision = decide(current, self.state, self.plugins, self.weights, self.rng)
            except Exception as exc:  # noqa: BLE001 - a bug or a hostile score: say so, retry, never forget the pod
                log.exception("scheduling %s failed; retrying it", pod.key)
                self.queue.error(pod.uid)
                self.metrics.errors.labels("algorithm").inc()
                message = f"the scheduler failed: {type(exc).__name__}: {exc}; retrying"
                self.recorder.record(PodEvent(pod.namespace, pod.name, pod.uid, "FailedScheduling", message,
                                              type_="Warning", action="Scheduling"))
                self.pool.submit(self._not_scheduled, current, "SchedulerError", message)
                return None
            if decision.node is not None:
                self.state.assume(current, decision.node)
        self.metrics.algorithm_latency.observe(time.perf_counter() - t0)
        if decision.node is None:
            self.queue.unschedulable(pod.uid)
            self.metrics.attempts.labels("unschedulable").inc()
            self.pool.submit(self._report_failure, current, decision)
        else:
            self.pool.submit(self._bind, current, decision, first_seen)
        return decision

    def _loop(self) -> None:
        last_housekeeping = 0.0
        while not self._stop.is_set():
            now = time.monotonic()
            if now - last_housekeeping > 1.0:
                last_housekeeping = now
                for name, n in self.queue.counts().items():
                    self.metrics.pending.labels(name).set(n)
                self.metrics.leader.set(1 if self.elector.is_leader() else 0)
                self.metrics.scores.set(self.store.updates)
            if not self.elector.is_leader():
                self._stop.wait(0.1)
                continue
            try:
                self.schedule_one()
            except Exception:  # noqa: BLE001 - one bad pod must not stop the scheduler
                log.exception("scheduling attempt failed")
                self.metrics.errors.labels("algorithm").inc()

    # ------------------------------------------------------------ binding and explaining

    def _bind(self, pod: PodInfo, decision: Decision, first_seen: float) -> None:
        """Runs in the binders' pool, whose futures nobody reads. The ledger never expires, so an unexpected exception
        before the pod is bound or forgotten would hold its node's room for good and never retry the pod: it is
        logged, the pod forgotten and retried. One after the bind (the reports) is logged; the informer's view of the
        bound pod clears the ledger."""
        try:
            bound = self._bind_call(pod, decision)
        except Exception:  # noqa: BLE001 - a bug: say so, free the room, retry the pod
            log.exception("binding %s failed unexpectedly; forgetting its decision and retrying it", pod.key)
            self.state.forget(pod.uid)
            self.queue.error(pod.uid)
            self.metrics.errors.labels("binding").inc()
            return
        if not bound:
            return
        try:
            self._bound(pod, decision, first_seen)
        except Exception:  # noqa: BLE001 - the pod is bound; only its reports are missing
            log.exception("reporting the bind of %s failed", pod.key)
            self.metrics.errors.labels("event").inc()

    def _bind_call(self, pod: PodInfo, decision: Decision) -> bool:
        """Bind the pod to its decision's node; True when bound, else it was forgotten and its queue entry settled."""
        node = decision.node
        assert node is not None
        if not self.elector.is_leader():
            self.state.forget(pod.uid)
            self.queue.error(pod.uid)
            return False
        try:
            bound = self.kube.bind(pod.namespace, pod.name, pod.uid, node)
        except PodGone as exc:  # deleted meanwhile: its deletion drops it from the queue
            log.info("%s was deleted before its bind (%s); dropping it", pod.key, exc)
            self.state.forget(pod.uid)
            self.queue.done(pod.uid)
            return False
        except Exception as exc:  # noqa: BLE001 - any API failure: back off and retry
            problem, wait_s = api_problem(exc), retry_after(exc)
            log.warning("binding %s to %s failed: %s; retrying%s", pod.key, node, problem,
                        "" if wait_s is None else f" in {wait_s:g} s (its Retry-After)")
            self.state.forget(pod.uid)
            self.queue.error(pod.uid, wait_s)
            self.metrics.attempts.labels("error").inc()
            self.metrics.errors.labels("binding").inc()
            if getattr(exc, "status", None) != 404:  # 404: the pod is gone, its deletion drops it from the queue
                message = f"binding to {node} failed: {problem}; retrying"
                self.recorder.record(PodEvent(pod.namespace, pod.name, pod.uid, "FailedScheduling", message,
                                              type_="Warning", action="Binding"))
                self._not_scheduled(pod, "SchedulerError", message)
            return False
        if not bound:
            log.info("%s was bound by someone else (409); dropping it", pod.key)
            self.state.forget(pod.uid)
            self.queue.done(pod.uid)
            self.metrics.conflicts.inc()
        return bound

    def _bound(self, pod: PodInfo, decision: Decision, first_seen: float) -> None:
        node = decision.node
        self.queue.done(pod.uid)
        self.metrics.attempts.labels("scheduled").inc()
        self.metrics.bindings.inc()
        self.metrics.scheduling_latency.observe(max(0.0, time.monotonic() - first_seen))
        log.debug("bound %s to %s", pod.key, node)
        self.recorder.record(PodEvent(pod.namespace, pod.name, pod.uid, "Scheduled", self.explained(decision)))
        self._warn_unmatched(pod, decision)
        self._placement(pod, decision)

    @staticmethod
    def explained(decision: Decision) -> str:
        """The decision's message followed by what the benchmark evidence did."""
        why = describe(decision.details.get("benchmark") or {})
        return f"{decision.message}; {why}" if why else decision.message

    def _create_event(self, ev: PodEvent) -> str:
        return self.kube.event(ev.namespace, ev.pod, ev.uid, ev.reason, ev.message, type_=ev.type_,
                               action=ev.action)

    def _warn_unmatched(self, pod: PodInfo, decision: Decision) -> None:
        bench = decision.details.get("benchmark") or {}
        if bench.get("warning"):
            reason = bench.get("warning_reason", "BenchmarkParamsUnmatched")
            self.recorder.record(PodEvent(pod.namespace, pod.name, pod.uid, reason, bench["warning"],
                                          type_="Warning", action="Scheduling"))

    def _report_failure(self, pod: PodInfo, decision: Decision) -> None:
        log.info("cannot schedule %s: %s", pod.key, decision.message)
        self.recorder.record(PodEvent(pod.namespace, pod.name, pod.uid, "FailedScheduling", decision.message,
                                      type_="Warning", action="Scheduling"))
        self._not_scheduled(pod, "Unschedulable", decision.message)
        self._placement(pod, decision)

    def _not_scheduled(self, pod: PodInfo, reason: str, message: str) -> None:
        """The pod's PodScheduled condition False with this reason and message, unless it says that already (as
        kube-scheduler's updatePod, no write for no change: a pod retried for the same reason costs no patch)."""
        if pod.scheduled == ("False", reason, condition_message(message)):
            return
        try:
            self.kube.mark_not_scheduled(pod.namespace, pod.name, reason, message)
        except Exception as exc:  # noqa: BLE001 - the pod is retried anyway
            if getattr(exc, "status", None) == 404:  # deleted meanwhile: nothing to explain, its deletion drops it
                log.debug("PodScheduled of %s: the pod is gone", pod.key)
                return
            log.warning("FailedScheduling report for %s: %s", pod.key, api_problem(exc))
            self.metrics.errors.labels("event").inc()

    def _placement(self, pod: PodInfo, decision: Decision) -> None:
        if self.publish is None:
            return
        message = self.explained(decision)
        pm = PlacementMade(
            namespace=pod.namespace, pod=pod.name, pod_uid=pod.uid, node=decision.node, test=pod.benchmark,
            candidates=[Candidate(node=n, score=min(100.0, max(0.0, s))) for n, s in decision.candidates],
            message=message)
        try:
            self.publish(placement_event(pm))
        except Exception as exc:  # noqa: BLE001
            log.warning("PlacementMade for %s: %s", pod.key, exc)
            self.metrics.errors.labels("publish").inc()

    # ------------------------------------------------------------ life cycle

    def start(self, sync_timeout_s: float = 60.0) -> None:
        self.node_informer.start()
        self.pod_informer.start()
        self.ns_informer.start()
        deadline = time.monotonic() + sync_timeout_s
        for inf in (self.node_informer, self.pod_informer, self.ns_informer):
            while not inf.synced.wait(min(0.1, max(0.0, deadline - time.monotonic()))):
                if self._stop.is_set():  # stop() meanwhile (a SIGTERM while the API server does not answer)
                    return
                if time.monotonic() >= deadline:
                    raise TimeoutError(unsynced(inf.kind, sync_timeout_s, inf.failure))
        with self._life:  # a stop() between the check and the starts left the recorder and elector running (rF)
            if self._stop.is_set():
                return
            self.recorder.start()
            self.elector.start()
            self._thread = threading.Thread(target=self._loop, name="scheduling-loop", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        with self._life:
            self._stop.set()
        self.queue.close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.pool.shutdown(wait=True, cancel_futures=False)
        self.recorder.stop()
        self.elector.stop()
        self.node_informer.stop()
        self.pod_informer.stop()
        self.ns_informer.stop()
