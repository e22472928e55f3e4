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
  count, and every pod still gets its Event, later. Only a full queue drops (counted in ``dropped``),
  or a bucket that never refills (``qps`` 0). Warning events are never rate-limited. Every decision
  is also published as a PlacementMade message (GET /api/placements).
- A write the API did not answer, or answered 429 or 5xx, is sent again twice (0.5 s, then 1 s later), as
  client-go retries an event's write; then it is logged and dropped.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import OrderedDict
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

    def take(self) -> bool:
        now = self.clock()
        self.tokens = min(float(self.burst), self.tokens + (now - self.at) * self.qps)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    def wait(self, sleep: Callable[[float], None] = time.sleep) -> bool:
        """Take a token, sleeping until one has refilled; False (nothing taken) when the bucket never refills."""
        while not self.take():
            if self.qps <= 0.0:
                return False
            sleep(max((1.0 - self.tokens) / self.qps, 0.001))  # at least 1 ms: a rounding shortfall still ends
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
        self.series: OrderedDict[tuple[str, str, str, str], tuple[str, int]] = OrderedDict()
        self.written = self.aggregated = self.dropped = 0
        self._thread: threading.Thread | None = None

    def record(self, ev: PodEvent) -> None:
        try:
            self.queue.put_nowait(ev)
        except queue.Full:
            self.dropped += 1

    def write(self, ev: PodEvent) -> None:
        """Write one event now (the writer thread calls this; tests may call it directly)."""
        key = (ev.namespace, ev.uid, ev.reason, ev.message)
        seen = self.series.get(key)
        if seen is not None:
            name, count = seen[0], seen[1] + 1
            self.series[key] = (name, count)
            self.series.move_to_end(key)
            self._sent(self.bump, ev.namespace, name, count)
            self.aggregated += 1
            return
        if ev.type_ == "Normal" and not self.bucket.wait(self.sleep):
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

    def _run(self) -> None:
        while True:
            ev = self.queue.get()
            if ev is None:
                return
            try:
                self.write(ev)
            except Exception as exc:  # noqa: BLE001 - events are best effort
                log.warning("event %s for %s/%s: %s", ev.reason, ev.namespace, ev.pod, api_problem(exc))
                if self.on_error is not None:
                    self.on_error(exc)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="event-writer", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Write what is queued, then stop."""
        if self._thread is None:
            return
        self.queue.put(None)
        self._thread.join(timeout=timeout)
        self._thread = None
