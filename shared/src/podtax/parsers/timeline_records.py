"""The records of a control-plane timeline (parsers/timeline.py, the format in docs/control-plane.md), read and
validated: a ``header`` line, one ``object`` line per volume or pod with its end points in seconds, a ``summary``
line. Refused with a reason (ParseFailure, naming the line): a line that is not JSON or not a record, NaN or
infinite numbers, a missing or repeated header or summary, an object named twice, an unknown template or backend,
a negative duration (an end before its start). The metrics and flags of what is read: parsers/timeline.py."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from podtax import phases as ph
from podtax.parsers.base import ParseFailure

GIVEN_UP = "given_up"  # the end point the runner records when it gives up waiting on an object (wait_for)
HELD_WORDS = "timed from the first attempt"  # in the summary's `retried` for a call not re-timed (the runner's HELD)


@dataclass(frozen=True)
class TimelineObject:
    name: str
    t: dict[str, float]
    error: str | None


@dataclass(frozen=True)
class Timeline:
    template: str
    backend: str
    header: dict[str, Any]
    objects: tuple[TimelineObject, ...]
    summary: dict[str, Any] | None
    without: frozenset[str] = frozenset()  # phases left out (a run whose deletes were refused: timeline_aborted.py)

    @property
    def phases(self) -> tuple[ph.Phase, ...]:
        return tuple(p for p in ph.phases_of(self.template, self.backend) if p.name not in self.without)


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a finite number")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)  # one decoder: json.loads builds one per call


def _line(raw: str, number: int) -> dict[str, Any]:
    try:
        record = _DECODER.decode(raw)
    except (ValueError, RecursionError) as exc:  # RecursionError: `[[[[...` nested deeper than json reads
        raise ParseFailure("unknown-format", f"line {number} is not valid JSON ({str(exc)[:200]}); a timeline has "
                                             "one JSON object per line") from None
    if not isinstance(record, dict) or record.get("kind") not in ("header", "object", "summary"):
        raise ParseFailure("unknown-format", f"line {number} is not a timeline record (a JSON object whose "
                                             "`kind` is header, object or summary)")
    return record


def seconds(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParseFailure("unknown-format", f"{where} must be a number of seconds, found {repr(value)[:80]}")
    try:
        value = float(value)
    except OverflowError:  # an integer of hundreds of digits, beyond any float
        raise ParseFailure("unknown-format", f"{where} is not a finite number (an integer beyond any float: "
                                             f"{value.bit_length()} bits)") from None
    if not math.isfinite(value):  # 1e999 reads as infinity
        raise ParseFailure("unknown-format", f"{where} is not a finite number ({value!r})")
    return value


def _object(record: dict[str, Any], number: int, phases: tuple[ph.Phase, ...]) -> TimelineObject:
    name = record.get("name")
    if not isinstance(name, str) or not name:
        raise ParseFailure("unknown-format", f"line {number}: an object needs a `name`")
    t = record.get("t", {})
    if not isinstance(t, dict):
        raise ParseFailure("unknown-format", f"line {number} ({name}): `t` must map end points to seconds")
    times: dict[str, float] = {}
    for k, v in t.items():
        if type(v) is float and v - v == 0.0:  # the common case, checked without a call: finite float
            times[k] = v
        else:
            times[str(k)] = seconds(v, f"line {number} ({name}): t.{k}")
    error = record.get("error")
    return TimelineObject(name, times, None if error is None else str(error))


def _derive(obj: TimelineObject, number: int, phases: tuple[ph.Phase, ...], start: str | None) -> None:
    """Add the derived end points of `obj` (in place: podtax.phases.derive_points, once the summary says where
    provisioning starts) and refuse a negative phase."""
    times = obj.t
    ph.derive_points(phases, times, start)
    for p in phases:
        if p.start in times and p.end in times and times[p.end] < times[p.start]:
            raise ParseFailure("unknown-format", f"line {number} ({obj.name}): {p.name} is negative ({p.end} "
                                                 f"{times[p.end]:g} s before {p.start} {times[p.start]:g} s); "
                                                 "the executor's clock or its record is wrong")


def read(text: str) -> Timeline:
    """The records of a timeline, validated; ParseFailure says what is wrong and on which line."""
    header: dict[str, Any] | None = None
    objects: list[TimelineObject] = []
    summary: dict[str, Any] | None = None
    phases: tuple[ph.Phase, ...] = ()
    names: set[str] = set()
    numbers: list[int] = []
    for number, raw in enumerate(text.split("\n"), 1):
        if not raw.strip():
            continue
        record = _line(raw, number)
        kind = record["kind"]
        if header is None and kind != "header":
            raise ParseFailure("unknown-format", f"line {number}: the timeline has no header (the first record "
                                                 "must have kind header, naming template and backend)")
        if kind == "header":
            if header is not None:
                raise ParseFailure("unknown-format", f"line {number}: a second header; a log holds one run")
            header = record
            template, backend = record.get("template"), record.get("backend")
            if template not in ph.TEMPLATES:
                raise ParseFailure("unknown-format", f"line {number}: unknown template {template!r}; timelines "
                                                     f"exist for {', '.join(ph.TEMPLATES)}")
            try:
                phases = ph.phases_of(str(template), str(backend))
            except ValueError as exc:
                raise ParseFailure("unknown-format", f"line {number}: {exc}") from None
        elif kind == "object":
            if summary is not None:
                raise ParseFailure("unknown-format", f"line {number}: an object after the summary")
            obj = _object(record, number, phases)
            if obj.name in names:  # a repeated line would count one volume or pod twice in every percentile
                raise ParseFailure("unknown-format", f"line {number}: object {obj.name!r} appears a second time")
            names.add(obj.name)
            objects.append(obj)
            numbers.append(number)
        elif summary is not None:
            raise ParseFailure("unknown-format", f"line {number}: a second summary; a log holds one run")
        else:
            summary = record
    if header is None:
        raise ParseFailure("empty", "the timeline is empty")
    aborted = header.get("aborted")  # a failed run's kept timeline: what its summary would say is in its header
    said = aborted.get("summary") if summary is None and isinstance(aborted, dict) else None
    start = ph.provision_start(header, summary if summary is not None or not isinstance(said, dict) else said)
    for number, obj in zip(numbers, objects, strict=True):
        _derive(obj, number, phases, start)
    return Timeline(str(header["template"]), str(header["backend"]), header, tuple(objects), summary)
