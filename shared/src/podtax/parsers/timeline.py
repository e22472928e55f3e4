"""Control-plane timelines (`volume-churn`, `pod-startup`): JSON lines, one object per line.

The format, the phases and the metric names are the contract in docs/control-plane.md: a
``header`` line first, one ``object`` line per volume or pod with its end points (seconds on the
client's monotonic clock relative to the run's t0), and a closing ``summary`` line.

Per phase P with at least one object: ``P_p50_ms``, ``P_p95_ms``, ``P_p99_ms``, ``P_max_ms``, ``P_min_ms``
(per-object latency; percentiles interpolate linearly between order statistics, numpy's default), ``P_avg_ms``
(their mean) and ``P_makespan_s`` (latest end minus earliest start over the objects that have the phase). An object the
executor gave up on while waiting (an error and the end point ``given_up``: controlplane/waits.py ``wait_for``)
took at least ``given_up - start`` in each phase that had started and not ended by then: it counts in that
phase's percentiles and mean at that time, a lower bound, so a stuck tenth of the claims moves p95/p99/max/avg up
instead of leaving the survivors' figures. Every percentile whose value rests on such a time (it, or an
interpolation with it, or an order statistic it could overtake; min when no completed time lies below it) and the
mean of a phase holding one are named in the run flag ``LOWER_BOUND`` (the true value is larger). End points seen
only by a re-list after a dropped watch (the summary's ``watch_gaps``) are timed late, by up to the gap: the figures
that rest on one (min and the mean whenever the phase holds one) are named in the run flag ``WATCH_GAP`` (upper
bounds). An object that
failed otherwise (a 409 on create) has no time in the phase and stays out. Then
``objects_ok`` (objects without an error that reached every non-optional end point), ``errors``
(the larger of the summary's count and the objects carrying an error), ``requests_per_object``
(the client's own requests of the run's work, the summary's ``requests``, not its set-up checks, ``setup_requests``
/ objects in the log), ``server_requests_per_object`` (the API server's
request counter delta / objects, when it was scraped) and ``wall_s``. Everything is lower-is-better
except ``objects_ok``.

Refused with a reason: a line that is not JSON or not an object, NaN or infinite numbers, a missing
or repeated header or summary, an object named twice (a repeated line), an unknown template or backend,
a negative duration (an end before its start), a log without objects or without its summary (cut
short), a run in which no object completed, a failed run's kept timeline (header `aborted`) unless its deletes were
refused after every create and bind (DELETE_REFUSED: parsers/timeline_aborted.py). The records are read and
validated in parsers/timeline_records.py; the metrics are derived here, the flags that name bounds in
parsers/timeline_flags.py.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from typing import Any

from podtax import phases as ph
from podtax.nomad_in_use import IN_USE
from podtax.parsers.base import Echoed, MetricList, Parsed, ParseFailure
from podtax.parsers.timeline_aborted import kept, refused_deletes
from podtax.parsers.timeline_flags import (
    PERCENTILES,
    left_behind_flag,
    lower_bound_flag,
    retried_flag,
    watch_gap_flag,
)
from podtax.parsers.timeline_records import GIVEN_UP, Timeline, TimelineObject, read
from podtax.parsers.timeline_records import seconds as _seconds

TOOL = "timeline"
FORMAT = 1
PRIMARY: dict[str, str] = {"volume-churn": "provisioned_makespan_s", "pod-startup": "ready_p50_ms"}


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) of values, linear between order statistics (numpy's default)."""
    s = sorted(values)
    pos = (len(s) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def phase_latencies(timeline: Timeline) -> dict[str, list[tuple[str, float]]]:
    """Phase -> [(object name, seconds)] in log order, for every object that has both end points and no
    error (a failed object's times end in its failure, not in the phase's end point)."""
    out: dict[str, list[tuple[str, float]]] = {p.name: [] for p in timeline.phases}
    for obj in timeline.objects:
        if obj.error is not None:
            continue
        for name, seconds in ph.object_phases(timeline.phases, obj.t).items():
            out[name].append((obj.name, seconds))
    return {k: v for k, v in out.items() if v}


def given_up_latencies(timeline: Timeline) -> dict[str, list[tuple[str, float]]]:
    """Phase -> [(object name, seconds)] in log order for the objects given up while waiting in it: an error, the
    end point `given_up`, the phase's start recorded by then and its end not. The seconds (given_up - start) are
    a lower bound: the phase took longer. metrics_of counts them in the phases some object completed."""
    out: dict[str, list[tuple[str, float]]] = {}
    for obj in timeline.objects:
        t = obj.t
        if obj.error is None or GIVEN_UP not in t:
            continue
        for p in timeline.phases:
            if p.start in t and t[p.start] <= t[GIVEN_UP] and not (p.end in t and t[p.end] <= t[GIVEN_UP]):
                out.setdefault(p.name, []).append((obj.name, t[GIVEN_UP] - t[p.start]))
    return out


def rests_on_bound(values: Sequence[float], q: float, least_bound: float) -> bool:
    """Whether the q-th percentile of sorted `values` may be larger in truth because some of them are lower
    bounds, the least being `least_bound`: a bound at or below an order statistic the percentile uses can
    overtake it (the percentile is then itself a lower bound); bounds above it cannot move it."""
    return rank_rests_on_bound(len(values), bisect.bisect_left(values, least_bound), q)


def rests_on_upper_bound(values: Sequence[float], q: float, greatest_bound: float) -> bool:
    """The mirror of rests_on_bound for upper bounds (WATCH_GAP: the true value is smaller): a bound at or above an
    order statistic the q-th percentile of sorted `values` uses can drop below it; bounds under it cannot move it."""
    return rank_rests_on_bound(len(values), len(values) - bisect.bisect_right(values, greatest_bound), 100.0 - q)


def rank_rests_on_bound(n: int, below: int, q: float) -> bool:
    """rests_on_bound told by how many of the n values lie below the least bound: it overtakes the highest order
    statistic the q-th percentile uses (the upper one of an interpolation) when at most that many lie below it.
    The analyzer uses it too: the pooled phase rows, and a cell's median over runs whose values are bounds."""
    return below <= math.ceil((n - 1) * q / 100.0)


def makespan(phase: ph.Phase, objects: Sequence[TimelineObject]) -> float | None:
    """Latest end minus earliest start over the objects that have both end points of the phase. A start sent again
    (RETRIED: re-timed from the attempt that succeeded) counts from its first attempt, `first_<start>`: the run's
    work began then, and the time N objects took holds the throttled seconds."""
    having = [o.t for o in objects if phase.start in o.t and phase.end in o.t]
    if not having:
        return None
    first = f"first_{phase.start}"
    return max(t[phase.end] for t in having) - min(t.get(first, t[phase.start]) for t in having)


def _ok(obj: TimelineObject, phases: tuple[ph.Phase, ...]) -> bool:
    # a derived start left out (a run that does not say where provisioning starts) does not make the object incomplete
    return obj.error is None and all((p.start in obj.t or p.start == ph.PROVISION_START) and p.end in obj.t
                                     for p in phases if not p.optional)


def _count(summary: Mapping[str, Any], key: str) -> int | None:
    value = summary.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _request_total(counts: Any, where: str) -> float:
    if not isinstance(counts, dict):
        raise ParseFailure("unknown-format", f"summary: {where} must map names to counts")
    return sum(_seconds(v, f"summary: {where}.{k}") for k, v in counts.items())


def _server_requests(apiserver: Any) -> float | None:
    if not isinstance(apiserver, dict) or not isinstance(apiserver.get("before"), dict) \
            or not isinstance(apiserver.get("after"), dict):
        return None
    return _request_total(apiserver["after"], "apiserver.after") - _request_total(apiserver["before"],
                                                                                  "apiserver.before")


def metrics_of(timeline: Timeline) -> tuple[MetricList, list[str]]:
    """Per-run metrics and flags of a validated timeline."""
    if not timeline.objects:
        raise ParseFailure("truncated", "the timeline has a header but no object: the run was cut short")
    timeline = kept(timeline)  # a failed run's: refused, unless its deletes were refused after every create and bind
    if timeline.summary is None:
        raise ParseFailure("truncated", f"the timeline of {len(timeline.objects)} objects has no summary line: "
                                        "the run was cut short")
    objects, phases, summary = timeline.objects, timeline.phases, timeline.summary
    ok = sum(_ok(o, phases) for o in objects)
    failed = [o for o in objects if o.error is not None]
    if ok == 0:
        first = f" (first error: {failed[0].name}: {failed[0].error})" if failed else ""
        raise ParseFailure("fatal", f"none of the {len(objects)} objects completed{first}")
    metrics = MetricList()
    latencies, stuck = phase_latencies(timeline), given_up_latencies(timeline)
    lower: list[str] = []
    for p in phases:
        if not latencies.get(p.name):  # a phase no object completed (consumer_running without consumers)
            continue
        bounds = [s for _, s in stuck.get(p.name, [])]
        values = sorted([s for _, s in latencies[p.name]] + bounds)  # sorted once: percentile's sort is linear
        for label, q in PERCENTILES:
            metrics.add(f"{p.name}_{label}_ms", percentile(values, q) * 1000.0, "ms", False)
            if bounds and rests_on_bound(values, q, min(bounds)):
                lower.append(f"{p.name}_{label}_ms")
        metrics.add(f"{p.name}_avg_ms", math.fsum(values) / len(values) * 1000.0, "ms", False)
        if bounds:  # the mean sums every value: one bound makes it a bound
            lower.append(f"{p.name}_avg_ms")
        span = None if failed else makespan(p, objects)  # the time N objects took: not N minus the failed
        if span is not None:
            metrics.add(f"{p.name}_makespan_s", span, "s", False)
    refused = refused_deletes(timeline)
    if not refused:  # a run whose deletes were refused: these would count them (timeline_aborted.WHOLE_RUN)
        metrics.add("objects_ok", ok, "count", True)
        metrics.add("errors", max(_count(summary, "errors") or 0, len(failed)), "count", False)
    requests = summary.get("requests")
    if requests is not None:
        metrics.add("requests_per_object", _request_total(requests, "requests") / len(objects), "requests", False)
    server = _server_requests(summary.get("apiserver"))
    if server is not None:
        metrics.add("server_requests_per_object", server / len(objects), "requests", False)
    wall = summary.get("wall_s")
    if wall is not None and not failed:
        metrics.add("wall_s", _seconds(wall, "summary: wall_s"), "s", False)
    flags = [refused] if refused else []
    if failed:
        # a backend that loses a third of its volumes would pass for the faster one (audit): its makespans time
        # fewer objects, so they are left out (the cell then lacks this run); per-object latencies stay
        flags.append(f"ERRORS: {len(failed)} of {len(objects)} objects failed (first: {failed[0].name}: "
                     f"{failed[0].error}); the run's makespans and wall time are left out (they would time "
                     f"{len(objects) - len(failed)} objects, not {len(objects)})")
    if lower:  # its example from a phase it counts (not consumer_running of a run without consumers)
        flags.append(lower_bound_flag(lower, {p: pairs for p, pairs in stuck.items() if latencies.get(p)}))
    gap = watch_gap_flag(timeline, latencies)
    if gap:
        flags.append(gap)
    retried = retried_flag(timeline, latencies)
    if retried:
        flags.append(retried)
    params = timeline.header.get("params")
    if any(p.start == ph.PROVISION_START for p in phases) and isinstance(params, dict) and params.get("consumer"):
        # said per consumer run (a run without consumers is timed from the create): which start its figures used
        start = ph.provision_start(timeline.header, summary)
        if start == ph.FROM_NODE:
            flags.append(f"{ph.NODE_START_FLAG}: provisioned and bound are timed from when each claim was seen given "
                         "a node (volume.kubernetes.io/selected-node, its class WaitForFirstConsumer), not its create")
        elif start == ph.FROM_CREATE:
            flags.append(f"{ph.CREATE_START_FLAG}: provisioned and bound are timed from each claim's create (its "
                         "class binds at once), as in a run without consumers")
    left = _count(summary, "left_behind")
    if left:
        flags.append(left_behind_flag(left, [o.name for o in failed if IN_USE in (o.error or "")]))
    return metrics, flags


def parse(text: str, test: str | None = None, requested: Mapping[str, Any] | None = None,
          recorded_version: str | None = None) -> Parsed:
    """A control-plane run's timeline -> metrics. `recorded_version` is ignored: the backend's version
    is not a tool build, and the two sides of a comparison are different backends on purpose."""
    timeline = read(text)
    if test is not None and test != timeline.template:
        raise ParseFailure("wrong-tool", f"expected a {test} timeline, the log is a {timeline.template} timeline")
    metrics, flags = metrics_of(timeline)
    header = timeline.header
    echoed: Echoed = {"backend": timeline.backend, "count": len(timeline.objects)}
    for key in ("observe", "format"):
        if isinstance(header.get(key), str | int) and not isinstance(header.get(key), bool):
            echoed[key] = header[key]
    if isinstance(header.get("simulated"), bool):
        echoed["simulated"] = int(header["simulated"])
    if requested:
        wanted = requested.get("backend")
        if wanted is not None and str(wanted) != timeline.backend:
            flags.append(f"PARAM_MISMATCH: backend echoed as {timeline.backend}, requested {wanted}")
        count = requested.get("count")
        if isinstance(count, int) and not isinstance(count, bool) and len(timeline.objects) < count:
            flags.append(f"SHORT: {len(timeline.objects)} of the {count} requested objects are in the timeline")
    return Parsed(timeline.template, None, None, metrics.as_tuple(), echoed, tuple(flags))
