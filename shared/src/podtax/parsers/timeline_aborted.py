"""A control-plane timeline a failed run kept of what it measured (its header marked `aborted`, no summary line:
docs/control-plane.md, "A run that fails after measuring keeps what it measured"), read for parsers/timeline.py.

Refused with the run's reason and detail, as before, unless the mark says the run ended because its deletes were
refused (`aborted.deletes_refused`: the runner's execute.keep writes it when the call whose refusal ended the run was
an object's delete: RBAC's 403, Nomad's, more than max(10, 10 %) deletes refused) and every object's create and bind
completed: each object reached every end point of the phases before its delete, none failed otherwise (its error, if
any, is its delete's) and none was given up. Such a run becomes a result flagged DELETE_REFUSED: its create and bind
phases as any run's, its delete phases left out (not zero, not a lower bound: Timeline.without), and with them the
figures of the whole run (objects_ok, errors, requests, wall time), which hold its refused deletes. A half-created run
(an object not bound, failed or given up before its delete) is refused as any aborted one: a wrong number is worse
than none. Timelines without the mark parse as before (a timeline without `aborted` is returned as it is)."""

from __future__ import annotations

import dataclasses
from typing import Any

from podtax.parsers.base import ParseFailure
from podtax.parsers.timeline_records import GIVEN_UP, Timeline, TimelineObject

DELETE_REFUSED = "DELETE_REFUSED"
MARK = "deletes_refused"  # in the header's `aborted`, set by the runner (execute.keep)
DELETE_START = "delete_requested"  # the end point every delete phase starts at (podtax.phases)
DELETE_ERROR = "delete: "  # how an object's error starts when its delete failed (the runner's ObjectChurn, nvolumes)
# the end points a delete records (podtax.phases' delete phases end at gone / pv_gone; a resent delete keeps its first)
DELETE_POINTS = frozenset({DELETE_START, f"first_{DELETE_START}", "gone", "pv_gone"})
# the summary's figures of the whole run, which count its refused deletes: left out with the delete phases
WHOLE_RUN = ("errors", "requests", "apiserver", "wall_s")


def _mark(timeline: Timeline) -> dict[str, Any] | None:
    aborted = timeline.header.get("aborted", (timeline.summary or {}).get("aborted"))
    if aborted is None:
        return None
    if not isinstance(aborted, dict) or not isinstance(aborted.get("reason"), str) \
            or not isinstance(aborted.get("detail"), str):
        raise ParseFailure("unknown-format", "aborted must map reason and detail to strings")
    return aborted


def _done(timeline: Timeline) -> str:
    """What every object did before its delete, in the template's words (pod-startup's pods bind to no volume)."""
    return "created and Ready" if timeline.template == "pod-startup" else "created and bound"


def _refused(aborted: dict[str, Any], why: str = "") -> ParseFailure:
    return ParseFailure(aborted["reason"], f"{aborted['detail']} (the run failed: this timeline holds what it measured "
                                           f"before it ended, not a result{why})")


def _delete_error(error: str | None) -> bool:
    """An object's error is its delete's (the runner's `delete: <status> ...`), not one of an earlier call."""
    return error is not None and error.startswith(DELETE_ERROR)


def _incomplete(timeline: Timeline, delete_phases: frozenset[str]) -> str | None:
    """Why the run's creates and binds are not all complete (the first object that lacks one), else None. An object
    with an error other than its delete's failed before its delete, whether or not its delete was then sent (the
    runner deletes every object its API accepted: a claim whose consumer's create a webhook refused, one bound to a PV
    made beforehand, one deleted by another client): refused, as one given up is (review r6: its error was dropped
    with the delete's, the run counted clean, a 2 ms static bind counted a provisioning)."""
    needed = [p for p in timeline.phases if p.name not in delete_phases and not p.optional]
    for obj in timeline.objects:
        if GIVEN_UP in obj.t:
            return f"{obj.name} was given up ({obj.error})"
        if obj.error is not None and not _delete_error(obj.error):
            return f"{obj.name} failed before its delete ({obj.error})"
        lacking = [p.end for p in needed if p.end not in obj.t]
        if lacking:
            return f"{obj.name} lacks {', '.join(lacking)}"
    return None


def kept(timeline: Timeline) -> Timeline:
    """`timeline` as it is when it is no failed run's; a run whose deletes were refused and whose every object was
    created and bound without its delete phases and delete end points (Timeline.without; an object's delete error
    dropped: _incomplete refused any other) and with the summary its header's `aborted` holds, less the whole run's
    figures; any other aborted run refused (ParseFailure) with its reason and detail."""
    aborted = _mark(timeline)
    if aborted is None:
        return timeline
    if aborted.get(MARK) is not True:
        raise _refused(aborted)
    delete_phases = frozenset(p.name for p in timeline.phases if p.start == DELETE_START)
    if why := _incomplete(timeline, delete_phases):
        raise _refused(aborted, f": its deletes were refused, but not every object was {_done(timeline)} before "
                                f"them ({why})")
    summary = aborted.get("summary")
    summary = {k: v for k, v in summary.items() if k not in WHOLE_RUN} if isinstance(summary, dict) else {}
    retried = summary.get("retried")
    if isinstance(retried, dict):  # a delete sent again: its phase is left out (a list: one reason a call)
        calls = {n: [x for x in (w if isinstance(w, list) else [w]) if not str(x).startswith("delete")]
                 for n, w in retried.items()}
        summary["retried"] = {n: w for n, w in calls.items() if w}
    if isinstance(summary.get("watch_gaps"), list):  # a delete's end point seen late: its phase is left out
        summary["watch_gaps"] = [{**g, "late": {n: [e for e in ends if e not in DELETE_POINTS]
                                                for n, ends in g["late"].items() if isinstance(ends, list)}}
                                 if isinstance(g, dict) and isinstance(g.get("late"), dict) else g
                                 for g in summary["watch_gaps"]]
    objects = tuple(TimelineObject(o.name, {k: v for k, v in o.t.items() if k not in DELETE_POINTS},
                                   None if _delete_error(o.error) else o.error) for o in timeline.objects)
    return dataclasses.replace(timeline, objects=objects, summary={"kind": "summary", **summary},
                               without=delete_phases)


def refused_deletes(timeline: Timeline) -> str | None:
    """The run flag DELETE_REFUSED of a timeline whose deletes were refused (kept() took it), else None."""
    aborted = timeline.header.get("aborted")
    if not (isinstance(aborted, dict) and aborted.get(MARK) is True):
        return None
    return (f"{DELETE_REFUSED}: {', '.join(sorted(timeline.without))}; the run failed, {aborted['reason']}: "
            f"{aborted['detail'][:600]}; its {len(timeline.objects)} objects were all {_done(timeline)}, so its "
            f"figures until then stand; its delete phases and the whole run's figures (objects_ok, errors, requests, "
            f"wall time) are left out: they would time refused deletes")
