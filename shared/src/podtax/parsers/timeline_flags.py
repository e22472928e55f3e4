"""The run flags of a control-plane timeline that say which figures are bounds or what a run left (parsers/timeline.py
derives the metrics and adds these flags): LOWER_BOUND (objects given up while waiting), WATCH_GAP (end points seen
late by a re-list after a dropped watch), RETRIED (calls refused and sent again) and LEFT_BEHIND; and the
(object, end point) pairs whose times are upper bounds, which the analyzer's phases rows mark."""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping
from typing import Any

from podtax import phases as ph
from podtax.nomad_in_use import IN_USE, held
from podtax.parsers.base import ParseFailure
from podtax.parsers.timeline_records import GIVEN_UP, HELD_WORDS, Timeline
from podtax.parsers.timeline_records import seconds as _seconds

# min is the 0th percentile: a bound is it (LOWER_BOUND) unless a completed time lies below the least bound
PERCENTILES: tuple[tuple[str, float], ...] = (("p50", 50.0), ("p95", 95.0), ("p99", 99.0), ("max", 100.0),
                                              ("min", 0.0))
LOWER_BOUND = "LOWER_BOUND"
STARTS = {"create": "request_sent", "delete": "delete_requested"}  # the phase start a retried call sets (`retried`)


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


def retried_calls(timeline: Timeline) -> dict[str, list[str]]:
    """The summary's `retried` as object -> the reasons its calls were sent again, in run order (the objects' order).
    A runner since review r14 writes an object's several calls (create, consumer's create, delete) as a list; an older
    one wrote one reason an object (a string) and listed the objects with a delete sent again first, so their order
    is taken from the objects here."""
    retried = (timeline.summary or {}).get("retried") or {}
    if not isinstance(retried, dict):
        return {}
    said = {str(n): [str(w) for w in why] if isinstance(why, list) else [str(why)] for n, why in retried.items()}
    order = {o.name: i for i, o in enumerate(timeline.objects)}
    return {n: said[n] for n in sorted(said, key=lambda n: order.get(n, len(order)))}


def held_points(timeline: Timeline) -> set[tuple[str, str]]:
    """(object, end point) of each phase a retried call may have held (the summary's `retried` says the runner's
    HELD: not re-timed, timed from the first attempt): the phases started by that call (`create`: request_sent,
    `delete`: delete_requested), or for a call that starts no phase (`create consumer`) the optional phases it
    leads to (consumer_running, timed from the claim's create). Each such time may hold the refused attempts and
    the wait: an upper bound, as an end point a re-list saw after a dropped watch (late_points). Every held call of
    an object counts (review r14: one reason an object named its consumer's only, its held delete said exact)."""
    times = {o.name: o.t for o in timeline.objects}
    out: set[tuple[str, str]] = set()
    for name, whys in retried_calls(timeline).items():
        for why in whys:
            if HELD_WORDS not in why:
                continue
            start = STARTS.get(why.split(":")[0])
            t = times.get(name, {})
            out |= {(name, p.end) for p in timeline.phases
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
    is named, its time until then counted from the retry (LOWER_BOUND's lower bound still). Each call sent again
    counts (`1 object(s)' 2 calls ...`), and `first:` names the first object in run order with all its reasons."""
    by_name = {o.name: o for o in timeline.objects}
    retried = {n: whys for n, whys in retried_calls(timeline).items()
               if n in by_name and (by_name[n].error is None or GIVEN_UP in by_name[n].t)}
    if not retried:
        return None
    name, whys = next(iter(retried.items()))
    calls = [w for ws in retried.values() for w in ws]
    held = sum(HELD_WORDS in w for w in calls)
    given_up = sum(by_name[n].error is not None for n in retried)
    later = f", {given_up} of them given up later (timed from the retry until then: lower bounds)" if given_up else ""
    metrics = upper_bound_metrics(timeline, latencies, held_points(timeline))
    each = "" if len(calls) == len(retried) else f" {len(calls)}"
    said = " and ".join(_waited(w, by_name[name].t) for w in whys)  # each re-timed call's wait after its reason
    return (f"RETRIED: {', '.join(metrics) or 'no figure'}; {len(retried)} object(s)'{each} calls were refused and "
            f"sent again (first: {name}: {said}); {len(calls) - held} timed from the attempt "
            f"that succeeded (the refused attempts and the wait are not in their latency), {held} from the first "
            f"attempt (their phases hold the wait: upper bounds){later}")


def _waited(why: str, t: Mapping[str, float]) -> str:
    """A retried call's reason, with how long after its first attempt it was sent again when it was re-timed (its
    phase start's first_<point> kept). Review r4: the first re-timed call's wait followed the object's last reason
    (`create: 429 ... and delete: 429 ..., sent again 1.01 s after the first attempt`: the create's wait). A held
    call has none: review r7, a create answered 429 (re-timed, first_<point> kept) then 500 (held) read
    `create: 500 ... (timed from the first attempt), sent again 1.00 s after the first attempt` (a runner since
    then puts its time back to the first attempt)."""
    point = STARTS.get(why.split(":")[0])
    if point is None or HELD_WORDS in why or f"first_{point}" not in t:
        return why
    return f"{why}, sent again {t[point] - t[f'first_{point}']:.2f} s after the first attempt"


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

