"""Prometheus metrics, in a registry of their own (two schedulers in one process do not collide)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.attempts = Counter("podtax_scheduler_schedule_attempts", "Scheduling attempts by result "
                                "(scheduled, unschedulable, error).", ["result"], registry=r)
        self.bindings = Counter("podtax_scheduler_bindings", "Pods bound to a node.", registry=r)
        self.conflicts = Counter("podtax_scheduler_binding_conflicts", "Binds refused with 409: someone "
                                 "else bound the pod.", registry=r)
        self.errors = Counter("podtax_scheduler_errors", "Errors by kind.", ["kind"], registry=r)
        self.algorithm_latency = Histogram("podtax_scheduler_algorithm_duration_seconds",
                                           "Filter and score time of one attempt.", buckets=_BUCKETS, registry=r)
        self.scheduling_latency = Histogram("podtax_scheduler_scheduling_duration_seconds",
                                            "From first seeing a pending pod to a successful bind.",
                                            buckets=_BUCKETS, registry=r)
        self.pending = Gauge("podtax_scheduler_pending_pods", "Pods in the scheduling queue.", ["queue"],
                             registry=r)
        self.leader = Gauge("podtax_scheduler_is_leader", "1 when this replica holds the lease.", registry=r)
        self.scores = Gauge("podtax_scheduler_score_updates", "Score KV updates received.", registry=r)
        self.port: int | None = None
        self._server: object | None = None

    def serve(self, port: int, addr: str = "0.0.0.0") -> int:
        """Expose /metrics; port 0 picks a free port. Returns the port."""
        server, _thread = start_http_server(port, addr=addr, registry=self.registry)
        self._server = server
        self.port = server.server_address[1]
        return self.port

    def close(self) -> None:
        server = self._server
        if server is not None:
            server.shutdown()  # type: ignore[attr-defined]
            server.server_close()  # type: ignore[attr-defined]
            self._server = None
