"""The API server's own request metrics, served at /metrics in Prometheus text format like a real
kube-apiserver (k8s.io/apiserver/pkg/endpoints/metrics): `apiserver_request_total` (counter) and
`apiserver_request_duration_seconds` (histogram) with the real labels (verb, dry_run, group, version,
resource, subresource, scope, component [, code]) and the real verb names: GET, LIST, WATCH, POST,
PUT, PATCH, APPLY, DELETE, DELETECOLLECTION, CONNECT. Differences from a real server: a WATCH is
counted when its stream opens (a real server counts it when it ends), its duration observed when it
ends; non-resource requests (/version, discovery, /healthz, /metrics itself) are not counted."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # what a real apiserver answers
LABELS = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component")
BUCKETS = (0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60)
NAMESPACE_SUBRESOURCES = ("status", "finalize")
CONNECT_SUBRESOURCES = ("exec", "attach", "portforward", "proxy")
APPLY_PATCH = "application/apply-patch+yaml"


@dataclass(frozen=True)
class RequestInfo:
    verb: str
    group: str
    version: str
    resource: str
    subresource: str
    scope: str
    dry_run: str = ""

    def labels(self) -> tuple[str, ...]:
        return (self.verb, self.dry_run, self.group, self.version, self.resource, self.subresource, self.scope,
                "apiserver")


def request_info(method: str, path: str, query: Mapping[str, str], content_type: str = "") -> RequestInfo | None:
    """What a real apiserver's RequestInfoFactory + CleanVerb/CleanScope make of a request; None for
    non-resource requests."""
    parts = [unquote(p) for p in path.strip("/").split("/") if p]
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return None
    if parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) < 4:
            return None
        group, version, rest = parts[1], parts[2], parts[3:]
    watch = query.get("watch", "").lower() not in ("", "0", "false")
    if rest[0] == "watch":
        watch, rest = True, rest[1:]
    if not rest:
        return None
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if method == "GET" or method == "HEAD":
        verb = "WATCH" if watch else ("GET" if name else "LIST")
    elif method == "DELETE":
        verb = "DELETE" if name else "DELETECOLLECTION"
    elif method == "PATCH" and content_type.startswith(APPLY_PATCH):
        verb = "APPLY"
    else:
        verb = method
    if sub in CONNECT_SUBRESOURCES:
        verb = "CONNECT"
    scope = "resource" if name or method == "POST" else ("namespace" if namespace else "cluster")
    dry_run = "All" if query.get("dryRun") else ""
    return RequestInfo(verb, group, version, resource, sub, scope, dry_run)


class ApiMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "apiserver_request", "Counter of apiserver requests broken out for each verb, dry run value, group, "
            "version, resource, scope, component, and HTTP response code. (podtax kubesim, SIMULATED)",
            [*LABELS, "code"], registry=self.registry)
        self.durations = Histogram(
            "apiserver_request_duration_seconds", "Response latency distribution in seconds for each verb, dry run "
            "value, group, version, resource, subresource, scope and component. (podtax kubesim, SIMULATED)",
            list(LABELS), buckets=BUCKETS, registry=self.registry)
        self.long_running = Gauge(
            "apiserver_longrunning_requests", "Gauge of all active long-running apiserver requests broken out by "
            "verb, group, version, resource, scope and component. (podtax kubesim, SIMULATED)",
            ["verb", "group", "version", "resource", "subresource", "scope", "component"], registry=self.registry)
        self._counters: dict[tuple[RequestInfo, int], Any] = {}
        self._histograms: dict[RequestInfo, Any] = {}

    def observe(self, info: RequestInfo | None, code: int, seconds: float, counted: bool = False) -> None:
        """A finished request; `counted`: a watch already counted when its stream opened."""
        if info is None:
            return
        if not counted:
            self._counter(info, code).inc()
        histogram = self._histograms.get(info)
        if histogram is None:
            histogram = self._histograms[info] = self.durations.labels(*info.labels())
        histogram.observe(seconds)

    def _counter(self, info: RequestInfo, code: int) -> Any:
        """The labelled child, cached: labels() costs more than the increment (thousands of requests/s)."""
        counter = self._counters.get((info, code))
        if counter is None:
            counter = self._counters[(info, code)] = self.requests.labels(*info.labels(), str(code))
        return counter

    def watch_opened(self, info: RequestInfo | None) -> None:
        """Count a watch as soon as its stream is open (its 200 is sent)."""
        if info is not None:
            self._counter(info, 200).inc()

    def watch_streaming(self, info: RequestInfo | None, delta: int) -> None:
        if info is not None:
            self.long_running.labels(info.verb, info.group, info.version, info.resource, info.subresource,
                                     info.scope, "apiserver").inc(delta)

    def text(self) -> bytes:
        return generate_latest(self.registry)
