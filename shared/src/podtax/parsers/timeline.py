"""Control-plane timelines (`volume-churn`, `pod-startup`): JSON lines, one object per line.

The format, the phases and the metric names are the contract in docs/control-plane.md: a
``header`` line first, one ``object`` line per volume or pod with its end points (seconds on the
client's monotonic clock relative to the run's t0), and a closing ``summary`` line.

Per phase P with at least one object: ``P_p50_ms``, ``P_p95_ms``, ``P_p99_ms``, ``P_max_ms``, ``P_min_ms``
(per-object latency; percentiles interpolate linearly between order statistics, numpy's default), ``P_avg_ms``
(their mean) and ``P_makespan_s`` (latest end minus earliest start over the objects that have the phase). An object the
executor gave up on while waiting (an error and the end point ``given_up``: controlplane/common.py ``wait_for``)
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
short), a run in which no object completed. The records are read and validated in
parsers/timeline_records.py; the metrics and flags are derived here.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from typing import Any

from podtax import phases as ph
from podtax.nomad_in_use import IN_USE, held
from podtax.parsers.base import Echoed, MetricList, Parsed, ParseFailure
from podtax.parsers.timeline_records import GIVEN_UP, HELD_WORDS, Timeline, TimelineObject, read
from podtax.parsers.timeline_records import seconds as _seconds

TOOL = "timeline"
FORMAT = 1
PRIMARY: dict[str, str] = {"volume-churn": "provisioned_makespan_s", "pod-startup": "ready_p50_ms"}
# min is the 0th percentile: a bound is it (LOWER_BOUND) unless a completed time lies below the least bound
PERCENTILES: tuple[tuple[str, float], ...] = (("p50", 50.0), ("p95", 95.0), ("p99", 99.0), ("max", 100.0),
                                              ("min", 0.0))
LOWER_BOUND = "LOWER_BOUND"


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


def _refuse_aborted(timeline: Timeline) -> None:
    """A timeline a failed run kept of what it measured before it ended (header `aborted`, no summary line, so older
    parsers refuse it as truncated; a summary `aborted` of 17c28c78 alike) is refused with the run's reason and
    detail: its objects lack the phases after the abort, and it is no run's result."""
    aborted = timeline.header.get("aborted", (timeline.summary or {}).get("aborted"))
    if aborted is None:
        return
    if not isinstance(aborted, dict) or not isinstance(aborted.get("reason"), str) \
            or not isinstance(aborted.get("detail"), str):
        raise ParseFailure("unknown-format", "aborted must map reason and detail to strings")
    raise ParseFailure(aborted["reason"], f"{aborted['detail']} (the run failed: this timeline holds what it measured "
                                          "before it ended, not a result)")


def metrics_of(timeline: Timeline) -> tuple[MetricList, list[str]]:
    """Per-run metrics and flags of a validated timeline."""
    if not timeline.objects:
        raise ParseFailure("truncated", "the timeline has a header but no object: the run was cut short")
    _refuse_aborted(timeline)
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
    flags = []
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


def left_behind_flag(left: int, in_use: list[str]) -> str:
    """The run flag counting the objects the run did not delete (the analyzer reads the count); `in_use`: those
    whose delete Nomad refused `volume in use`, which a cleanup cannot remove while an allocation claims them."""
    held_by = (f"; of them {', '.join(in_use[:3])}{', ...' if len(in_use) > 3 else ''}: {IN_USE}{held(IN_USE)}"
               if in_use else "")
    return f"LEFT_BEHIND: {left} objects were not deleted; run `podtax volumes cleanup`{held_by}"


def lower_bound_flag(metrics: list[str], stuck: Mapping[str, list[tuple[str, float]]]) -> str:
    """The run flag naming the metrics that are lower bounds (the analyzer reads the names up to the `;`)."""
    names = sorted({name for pairs in stuck.values() for name, _ in pairs})
    phase, (first, seconds) = next((p, pairs[0]) for p, pairs in stuck.items())
    return (f"{LOWER_BOUND}: {', '.join(metrics)}; these figures count {len(names)} object(s) given up while "
            f"waiting at the time they were given up (first: {first}, {phase} {seconds:.1f} s), so each is a lower "
            f"bound: the true value is larger")


def held_points(timeline: Timeline) -> set[tuple[str, str]]:
    """(object, end point) of each phase a retried call may have held (the summary's `retried` says the runner's
    HELD: not re-timed, timed from the first attempt): the phases started by that call (`create`: request_sent,
    `delete`: delete_requested), or for a call that starts no phase (`create consumer`) the optional phases it
    leads to (consumer_running, timed from the claim's create). Each such time may hold the refused attempts and
    the wait: an upper bound, as an end point a re-list saw after a dropped watch (late_points)."""
    retried = (timeline.summary or {}).get("retried") or {}
    if not isinstance(retried, dict):
        return set()
    starts = {"create": "request_sent", "delete": "delete_requested"}
    times = {o.name: o.t for o in timeline.objects}
    out: set[tuple[str, str]] = set()
    for name, why in retried.items():
        if HELD_WORDS not in str(why):
            continue
        start = starts.get(str(why).split(":")[0])
        t = times.get(str(name), {})
        out |= {(str(name), p.end) for p in timeline.phases
                if (ph.started_by_create(p, t) if start == "request_sent" else p.start == start if start
                    else p.optional)}
    return out


def upper_points(timeline: Timeline) -> set[tuple[str, str]]:
    """(object, end point) of each time that is an upper bound: seen late after a dropped watch, or held by a retry
    (the analyzer's phases rows mark them upper_bound)."""
    return late_points(timeline) | held_points(timeline)


def retried_flag(timeline: Timeline, latencies: Mapping[str, list[tuple[str, float]]]) -> str | None:
    """The run flag RETRIED when calls that start a phase were refused (429, 5xx) and sent again (the summary's
    `retried`): the executor times each such object from the attempt that succeeded (`first_<point>` keeps the
    first; the makespans count from it), so its latency holds neither the refused attempts nor the wait the server
    asked for; said, not hidden. A call not re-timed (held_points) holds the wait: the figures that may rest on one
    are named before the `;` as WATCH_GAP's are (upper bounds; `no figure` when none). An object whose every
    attempt was refused failed (ERRORS names it, not this); one given up while waiting after its call got through
    is named, its time until then counted from the retry (LOWER_BOUND's lower bound still)."""
    retried = (timeline.summary or {}).get("retried") or {}
    by_name = {o.name: o for o in timeline.objects}
    retried = {n: why for n, why in retried.items() if n in by_name and (by_name[n].error is None
                                                                          or GIVEN_UP in by_name[n].t)} \
        if isinstance(retried, dict) else {}
    if not retried:
        return None
    name, why = next(iter(retried.items()))
    t = by_name[name].t
    waited = next((t[p] - t[f"first_{p}"] for p in ("request_sent", "delete_requested") if f"first_{p}" in t), None)
    after = f", sent again {waited:.2f} s after the first attempt" if waited is not None else ""
    held = sum(HELD_WORDS in str(w) for w in retried.values())
    given_up = sum(by_name[n].error is not None for n in retried)
    later = f", {given_up} of them given up later (timed from the retry until then: lower bounds)" if given_up else ""
    metrics = upper_bound_metrics(timeline, latencies, held_points(timeline))
    return (f"RETRIED: {', '.join(metrics) or 'no figure'}; {len(retried)} object(s)' calls were refused and sent "
            f"again (first: {name}: {why}{after}); {len(retried) - held} timed from the attempt that succeeded (the "
            f"refused attempts and the wait are not in their latency), {held} from the first attempt (their phases "
            f"hold the wait: upper bounds){later}")


def _gaps(summary: Mapping[str, Any]) -> list[tuple[str, float, float | None, dict[str, list[str]]]]:
    """The summary's `watch_gaps` as (watch, start, end or None: never open again, {object: late end points})."""
    gaps = summary.get("watch_gaps") or []
    if not isinstance(gaps, list) or not all(isinstance(g, dict) and isinstance(g.get("late", {}), dict)
                                             for g in gaps):
        raise ParseFailure("unknown-format", "summary: watch_gaps must be a list of {watch, start, end, late}")
    return [(str(g.get("watch")), _seconds(g.get("start"), "summary: watch_gaps.start"),
             None if g.get("end") is None else _seconds(g["end"], "summary: watch_gaps.end"),
             {str(k): [str(e) for e in v] for k, v in (g.get("late") or {}).items() if isinstance(v, list)})
            for g in gaps]


def _late(gaps: list[tuple[str, float, float | None, dict[str, list[str]]]]) -> set[tuple[str, str]]:
    return {(name, point) for _, _, _, objs in gaps for name, points in objs.items() for point in points}


def late_points(timeline: Timeline) -> set[tuple[str, str]]:
    """(object, end point) of each end point a re-list saw after a dropped watch (the summary's `watch_gaps`):
    timed when seen, late by up to the gap, so each phase ending there is an upper bound (the analyzer's phases
    rows mark it)."""
    return _late(_gaps(timeline.summary or {}))


def upper_bound_metrics(timeline: Timeline, latencies: Mapping[str, list[tuple[str, float]]],
                        points: set[tuple[str, str]]) -> list[str]:
    """The percentiles that may rest on an upper-bound time (an (object, end point) of `points`: a value at or
    above an order statistic they use could drop below it) and the makespans whose latest end is one."""
    by_name = {o.name: o for o in timeline.objects}
    metrics: list[str] = []
    for p in timeline.phases:
        pairs = latencies.get(p.name) or []
        high = [s for name, s in pairs if (name, p.end) in points]
        if not high:
            continue
        values = sorted(s for _, s in pairs)
        top = bisect.bisect_right(values, max(high)) - 1
        n = len(values)
        metrics += [f"{p.name}_{label}_ms" for label, q in PERCENTILES if top >= math.floor((n - 1) * q / 100)]
        metrics.append(f"{p.name}_avg_ms")  # the mean sums every time: one upper bound makes it one
        ends = [(by_name[name].t[p.end], name) for name, _ in pairs]
        if (max(ends)[1], p.end) in points:
            metrics.append(f"{p.name}_makespan_s")
    return metrics


def watch_gap_flag(timeline: Timeline, latencies: Mapping[str, list[tuple[str, float]]]) -> str | None:
    """The run flag WATCH_GAP when a watch dropped and its re-list saw end points that happened while it was down
    (the runner's Watcher): each such phase time ends when the re-list saw it, so it is an upper bound (the true
    one is smaller, by up to the gap). It names the percentiles that may rest on one (a late value at or above
    an order statistic they use could drop below it) and the makespans whose latest end is late."""
    gaps = _gaps(timeline.summary or {})
    late = _late(gaps)
    if not late:
        return None
    metrics = upper_bound_metrics(timeline, latencies, late)
    watch, start, end, _ = max(gaps, key=lambda g: len(g[3]))  # the gap that made the most late
    down = "was not open again by the end" if end is None else f"was down {end - start:.1f} s"
    points = sorted({point for _, point in late})
    names = sorted({name for name, _ in late})
    return (f"WATCH_GAP: {', '.join(metrics) or 'no figure'}; the {watch} watch {down} (from {start:.1f} s), and "
            f"{len(names)} object(s)' {', '.join(points)} were seen only by the re-list after "
            f"{'it' if len(gaps) == 1 else f'it or one of {len(gaps) - 1} other gap(s)'} (first: {names[0]}): they "
            f"happened in the gap and are timed when seen, so these figures are upper bounds: the true value is "
            f"smaller, by up to the gap")


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
