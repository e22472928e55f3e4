"""Events written off the scheduling path and aggregated, in the manner of client-go's event broadcaster.

- ``record`` never blocks: events go to a bounded queue that one writer thread drains; when the
  queue is full the event is dropped and counted (client-go's broadcaster drops the same way).
- Isomorphic events (same pod uid, reason and message) are one Event with a count: a repeat
  patches ``count`` and ``lastTimestamp`` of the first instead of creating a new object (the
  EventCorrelator's aggregation, the ``series`` of events.k8s.io/v1). Repeated FailedScheduling
  of one pod is therefore one Event, as with kube-scheduler.
- Normal events share a token bucket (``qps``, ``burst``): a burst of Scheduled events beyond it
  waits for its token in the writer thread (as client-go's rate limiter makes a request wait), so a
  burst of binds costs at most ``qps`` extra requests per second instead of doubling the request
  count, and every pod still gets its Event, later. Only a full queue or backlog drops (counted in
  ``dropped``), or a bucket that never refills (``qps`` 0). Warning events are never rate-limited and
  never wait behind the Normal ones (a FailedScheduling after a burst of binds is written at once).
  Every decision is also published as a PlacementMade message (GET /api/placements).
- A write the API did not answer, or answered 429 or 5xx, is sent again twice (0.5 s, then 1 s later), as
  client-go retries an event's write; then it is logged and dropped.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from podtax_scheduler.kube import api_problem

log = logging.getLogger("podtax.scheduler.events")
SERIES_KEYS = 4096  # isomorphic events remembered (least recently seen forgotten first)
ATTEMPTS, RETRY_S = 3, 0.5  # a write the API did not take: sent again after 0.5 s, then 1 s
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PodEvent:
    namespace: str
    pod: str
    uid: str
    reason: str
    message: str
    type_: str = "Normal"
    action: str = "Binding"


class TokenBucket:
    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.qps, self.burst, self.clock = qps, burst, clock
        self.tokens = float(burst)
        self.at = clock()

    def _refill(self) -> None:
        now = self.clock()
        self.tokens = min(float(self.burst), self.tokens + (now - self.at) * self.qps)
        self.at = now

    def take(self) -> bool:
        self._refill()
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    def due(self) -> float:
        """Seconds until a token is there (0 when one is; at least 1 ms otherwise, so a rounding shortfall still
        ends; infinite when the bucket never refills)."""
        self._refill()
        if self.tokens >= 1.0:
            return 0.0
        return max((1.0 - self.tokens) / self.qps, 0.001) if self.qps > 0.0 else float("inf")

    def wait(self, sleep: Callable[[float], None] = time.sleep) -> bool:
        """Take a token, sleeping until one has refilled; False (nothing taken) when the bucket never refills."""
        while not self.take():
            if self.qps <= 0.0:
                return False
            sleep(self.due())
        return True


class EventRecorder:
    """``create(event) -> name`` writes a new Event; ``bump(namespace, name, count)`` patches a repeat."""

    def __init__(self, create: Callable[[PodEvent], str], bump: Callable[[str, str, int], None], *,
                 qps: float = 50.0, burst: int = 100, capacity: int = 10_000,
                 on_error: Callable[[Exception], None] | None = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        self.create, self.bump, self.on_error, self.sleep = create, bump, on_error, sleep
        self.bucket = TokenBucket(qps, burst, clock)
        self.queue: queue.Queue[PodEvent | None] = queue.Queue(maxsize=capacity)
        self.capacity = capacity
        self.waiting: deque[PodEvent] = deque()  # new Normal events waiting for a token (the writer thread's)
        self.series: OrderedDict[tuple[str, str, str, str], tuple[str, int]] = OrderedDict()
        self.written = self.aggregated = self.dropped = 0
        self._thread: threading.Thread | None = None

    def record(self, ev: PodEvent) -> None:
        try:
            self.queue.put_nowait(ev)
        except queue.Full:
            self.dropped += 1

    def write(self, ev: PodEvent, budget: bool = True) -> None:
        """Write one event (a new Normal one after waiting for its token unless ``budget`` is False: the writer
        thread has taken it already); the writer thread calls this, tests may call it directly."""
        key = (ev.namespace, ev.uid, ev.reason, ev.message)
        seen = self.series.get(key)
        if seen is not None:
            name, count = seen[0], seen[1] + 1
            self.series[key] = (name, count)
            self.series.move_to_end(key)
            self._sent(self.bump, ev.namespace, name, count)
            self.aggregated += 1
            return
        if budget and ev.type_ == "Normal" and not self.bucket.wait(self.sleep):
            self.dropped += 1
            return
        self.series[key] = (self._sent(self.create, ev), 1)
        if len(self.series) > SERIES_KEYS:
            self.series.popitem(last=False)
        self.written += 1

    def _sent(self, call: Callable[..., T], *args: object) -> T:
        """`call(*args)`, sent again (ATTEMPTS in all, RETRY_S apart, doubling) while the API did not answer or
        answered 429 or 5xx, as client-go's broadcaster retries a write (a 4xx other than 429 is final)."""
        for attempt in range(ATTEMPTS):
            try:
                return call(*args)
            except Exception as exc:
                status = getattr(exc, "status", None)
                if attempt + 1 == ATTEMPTS or not (status is None or status == 429 or status >= 500):
                    raise
                time.sleep(RETRY_S * 2 ** attempt)
        raise AssertionError("unreachable")

    def take_in(self, ev: PodEvent) -> None:
        """The writer thread's step for one event taken off the queue: a new Normal event is written when a token
        is there and none waits before it, else it waits its turn (``waiting``); anything else (a Warning, a repeat
        that only raises a count) is written at once. Then the waiting ones whose tokens have come are written."""
        new_normal = ev.type_ == "Normal" and (ev.namespace, ev.uid, ev.reason, ev.message) not in self.series
        if not new_normal or (not self.waiting and self.bucket.take()):
            self._write_logged(ev, budget=False)
        elif self.bucket.qps <= 0.0 or len(self.waiting) >= self.capacity:
            self.dropped += 1
        else:
            self.waiting.append(ev)
        self.release()

    def release(self) -> None:
        """Write the waiting Normal events for which a token has come, oldest first."""
        while self.waiting and self.bucket.take():
            self._write_logged(self.waiting.popleft(), budget=False)

    def _write_logged(self, ev: PodEvent, budget: bool) -> None:
        try:
            self.write(ev, budget)
        except Exception as exc:  # noqa: BLE001 - events are best effort
            log.warning("event %s for %s/%s: %s", ev.reason, ev.namespace, ev.pod, api_problem(exc))
            if self.on_error is not None:
                self.on_error(exc)

    def _run(self) -> None:
        while True:
            try:
                ev = self.queue.get(timeout=self.bucket.due() if self.waiting else None)
            except queue.Empty:
                self.release()
                continue
            if ev is None:  # stop: the waiting ones are written too, each after its token
                while self.waiting:
                    self._write_logged(self.waiting.popleft(), budget=True)
                return
            self.take_in(ev)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="event-writer", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Write what is queued, then stop; what is still unwritten after `timeout` s is counted as dropped and
        said in one line (the writer thread, a daemon, may still write some of it until the process ends)."""
        if self._thread is None:
            return
        self.queue.put(None)
        self._thread.join(timeout=timeout)
        if self._thread.is_alive() and (left := len(self.waiting) + max(self.queue.qsize() - 1, 0)):
            self.dropped += left
            log.warning("%d event(s) not written within %g s of stopping (waiting for the events' rate limit "
                        "or the API): dropped", left, timeout)
        self._thread = None
