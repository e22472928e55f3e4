"""The scheduling queue: active (priority, then FIFO), backoff and unschedulable pods.

- a failed attempt because of an error goes to backoff: 1 s, doubling per attempt, at most 10 s, or what the
  API server's Retry-After said;
- an unschedulable pod waits until a node or pod changes (:meth:`move_all_to_active`), or 5 minutes pass, and
  still honours its backoff; one with required pod affinity or a DoNotSchedule topology spread constraint also when
  a pod lands on a node or a placed pod's labels change (:meth:`move_pod_waiters_to_active`), as kube-scheduler's
  InterPodAffinity and PodTopologySpread ask;
- when a namespace is added or relabelled, the unschedulable pods whose fit may read its labels
  (:meth:`move_namespace_waiters_to_active`): those with a required term whose namespaceSelector is non-empty, and
  those in that namespace (an existing pod's required anti-affinity term selects them by their namespace's labels).
  kube-scheduler does not retry on namespace events (its InterPodAffinity registers only Pod and Node events), so
  such a pod waits there for a pod or node event its queueing hints take, or the flush of pods unschedulable for 5
  minutes; here it is tried again at once;
- a pod is queued once (keyed by UID); an update replaces the stored pod; binding or deletion
  removes it.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass

from podtax_scheduler.model import PodInfo

INITIAL_BACKOFF_S = 1.0
MAX_BACKOFF_S = 10.0
UNSCHEDULABLE_TIMEOUT_S = 300.0


@dataclass(slots=True)
class _Entry:
    pod: PodInfo
    attempts: int = 0
    backoff_until: float = 0.0
    since: float = 0.0  # when it became unschedulable
    first_seen: float = 0.0
    where: str = "active"  # active | backoff | unschedulable | inflight
    moves_at_pop: int = 0  # the queue's move requests when this attempt began


class SchedulingQueue:
    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 initial_backoff_s: float = INITIAL_BACKOFF_S, max_backoff_s: float = MAX_BACKOFF_S,
                 unschedulable_timeout_s: float = UNSCHEDULABLE_TIMEOUT_S) -> None:
        self.clock = clock
        self.initial_backoff_s = initial_backoff_s
        self.max_backoff_s = max_backoff_s
        self.unschedulable_timeout_s = unschedulable_timeout_s
        self._cond = threading.Condition()
        self._entries: dict[str, _Entry] = {}
        self._active: list[tuple[int, int, str]] = []  # (-priority, seq, uid); stale items skipped
        self._backoff: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self._closed = False
        self._last_scan = 0.0
        self._pod_waiters: set[str] = set()  # unschedulable pods whose filters read other pods (may be stale)
        # move requests so far: a pod found unschedulable after one arrived during its attempt decided on a cluster
        # that has changed since, and is tried again after its backoff, not parked (kube-scheduler's moveRequestCycle)
        self._moves = 0

    # ------------------------------------------------------------ sizes

    def counts(self) -> dict[str, int]:
        with self._cond:
            out = {"active": 0, "backoff": 0, "unschedulable": 0, "inflight": 0}
            for e in self._entries.values():
                out[e.where] += 1
            return out

    def status(self, uid: str) -> tuple[str, int] | None:
        """Where the pod is (active, backoff, unschedulable or inflight) and its attempts so far; None: not queued."""
        with self._cond:
            e = self._entries.get(uid)
            return None if e is None else (e.where, e.attempts)

    def __len__(self) -> int:
        with self._cond:
            return len(self._entries)

    def __contains__(self, uid: str) -> bool:
        with self._cond:
            return uid in self._entries

    # ------------------------------------------------------------ producers

    def _push_active(self, e: _Entry) -> None:
        e.where = "active"
        heapq.heappush(self._active, (-e.pod.priority, next(self._seq), e.pod.uid))
        self._cond.notify()

    def _push_backoff(self, e: _Entry) -> None:
        e.where = "backoff"
        heapq.heappush(self._backoff, (e.backoff_until, next(self._seq), e.pod.uid))
        self._cond.notify()

    def add(self, pod: PodInfo, changed: bool = True) -> None:
        """A new or updated pending pod. An update of an unschedulable pod makes it active again when it `changed`
        what a decision reads (not when only its status did)."""
        with self._cond:
            e = self._entries.get(pod.uid)
            if e is None:
                e = self._entries[pod.uid] = _Entry(pod, first_seen=self.clock())
                self._push_active(e)
                return
            e.pod = pod
            if e.where == "unschedulable" and changed:
                self._requeue(e)

    def remove(self, uid: str) -> None:
        with self._cond:
            self._entries.pop(uid, None)
            self._pod_waiters.discard(uid)

    def _requeue(self, e: _Entry) -> None:
        if e.backoff_until > self.clock():
            self._push_backoff(e)
        else:
            self._push_active(e)

    def move_pod_waiters_to_active(self) -> int:
        """A pod was placed or relabelled: unschedulable pods with required pod affinity or a DoNotSchedule topology
        spread constraint get another try."""
        with self._cond:
            self._moves += 1
            moved = [e for uid in self._pod_waiters
                     if (e := self._entries.get(uid)) is not None and e.where == "unschedulable"]
            self._pod_waiters.clear()
            for e in moved:
                self._requeue(e)
            return len(moved)

    def move_all_to_active(self) -> int:
        """The cluster changed: every unschedulable pod gets another try (after its backoff)."""
        with self._cond:
            self._moves += 1
            moved = [e for e in self._entries.values() if e.where == "unschedulable"]
            for e in moved:
                self._requeue(e)
            return len(moved)

    def move_namespace_waiters_to_active(self, namespaces: Collection[str]) -> int:
        """`namespaces` were added or relabelled: the unschedulable pods whose fit may read their labels get another
        try (after their backoff): a pod with a required term with a non-empty namespaceSelector (it may select them
        now, or no longer), and a pod in one of them (an existing pod's anti-affinity term may select it, or no
        longer). Pods whose fit reads no namespace labels stay where they are."""
        with self._cond:
            self._moves += 1
            moved = [e for e in self._entries.values() if e.where == "unschedulable"
                     and (e.pod.namespace in namespaces or e.pod.filters_on_namespace_labels)]
            for e in moved:
                self._requeue(e)
            return len(moved)

    # ------------------------------------------------------------ results of an attempt

    def _backoff_for(self, attempts: int) -> float:
        return min(self.max_backoff_s, self.initial_backoff_s * 2 ** max(0, attempts - 1))

    def done(self, uid: str) -> None:
        """Bound (or given up): forget it."""
        self.remove(uid)

    def unschedulable(self, uid: str) -> None:
        with self._cond:
            e = self._entries.get(uid)
            if e is None:
                return
            e.backoff_until = self.clock() + self._backoff_for(e.attempts)
            if self._moves != e.moves_at_pop:  # a node or pod changed while it was tried: its wake-up came already
                self._push_backoff(e)
                return
            e.where = "unschedulable"
            e.since = self.clock()
            # a pod landing or relabelled may let it fit (anti-affinity too: a pod relabelled out of its selector)
            if e.pod.affinity_terms or e.pod.anti_affinity_terms or e.pod.spread_constraints:
                self._pod_waiters.add(uid)

    def error(self, uid: str, wait_s: float | None = None) -> None:
        """A failed attempt: retried after its backoff, or after `wait_s` when the API server said how long."""
        with self._cond:
            e = self._entries.get(uid)
            if e is None:
                return
            e.backoff_until = self.clock() + (self._backoff_for(e.attempts) if wait_s is None else wait_s)
            self._push_backoff(e)

    # ------------------------------------------------------------ consumer

    def _flush(self, now: float) -> None:
        while self._backoff and self._backoff[0][0] <= now:
            _, _, uid = heapq.heappop(self._backoff)
            e = self._entries.get(uid)
            if e is not None and e.where == "backoff" and e.backoff_until <= now:
                self._push_active(e)
        if now - self._last_scan < 1.0:
            return
        self._last_scan = now
        for e in self._entries.values():
            if e.where == "unschedulable" and now - e.since >= self.unschedulable_timeout_s:
                self._requeue(e)

    def pop(self, timeout: float = 1.0) -> tuple[PodInfo, int, float] | None:
        """Next pod to try as (pod, attempt number, first_seen), or None after `timeout`."""
        deadline = self.clock() + timeout
        with self._cond:
            while not self._closed:
                now = self.clock()
                self._flush(now)
                while self._active:
                    _, _, uid = heapq.heappop(self._active)
                    e = self._entries.get(uid)
                    if e is None or e.where != "active":
                        continue
                    e.where = "inflight"
                    e.attempts += 1
                    e.moves_at_pop = self._moves
                    return e.pod, e.attempts, e.first_seen
                wait = deadline - now
                if self._backoff:
                    wait = min(wait, max(0.0, self._backoff[0][0] - now))
                if wait <= 0 and now >= deadline:
                    return None
                self._cond.wait(max(0.01, min(wait, 0.5)))
            return None

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
