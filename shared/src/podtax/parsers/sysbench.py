"""sysbench 1.0.x `cpu` and `memory` reports.

A log normally holds one run. Session logs that hold several runs (each starts with its
`sysbench 1.0.20 (...)` banner) are split at the banners and the run matching the test is
parsed; several matching runs are refused as ambiguous. The legacy 0.4.x format is recognized
and REJECTED with `unsupported-version` naming the version: its reports lack events/s and its
figures are not comparable with 1.0 runs, so a campaign must not mix them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from podtax.parsers.base import (
    Echoed,
    MetricList,
    Parsed,
    ParseFailure,
    compare_echoed,
    int_or_float,
    requested_int,
    to_number,
)

TOOL = "sysbench"
_BANNER = re.compile(r"^sysbench (\d+\.\d+[0-9A-Za-z.+~-]*)(?:\s*\(([^()]*)\)|:)?")
_TOTAL_OPS = re.compile(r"^(\d+) \(([\d.]+) per second\)$")
_TRANSFER = re.compile(r"^([\d.]+) MiB transferred \(([\d.]+) MiB/sec\)$")
_LEGACY = ("Operations performed:", "Test execution summary:", "per-request statistics:",
           "Maximum prime number checked", "approx.  95 percentile", "Doing CPU performance benchmark")
_BAD_ARG = ("Invalid value for", "invalid option", "Unknown option", "option requires", "Unrecognized",
            "Missing required argument")
_FILEIO_KEYS = frozenset({"File operations", "Extra file open flags", "Throughput"})
_FILEIO_LINES = ("Creating files for the test", "Removing test files", "Doing random", "Doing sequential")
_KIND_TEST = {"sysbench-cpu": "cpu", "sysbench-memory": "memory"}


class _Section:
    __slots__ = ("version", "build", "kind", "fields", "latency", "fatal", "bad_arg", "started", "lines")

    def __init__(self, version: str | None, build: str | None) -> None:
        self.version = version
        self.build = build
        self.kind = "other"
        self.fields: dict[str, str] = {}
        self.latency: dict[str, str] = {}
        self.fatal: list[str] = []
        self.bad_arg: list[str] = []
        self.started = False
        self.lines = 0


def _split(text: str) -> tuple[list[_Section], bool]:
    """Split into runs at each banner; returns the runs and whether legacy 0.4 markers were seen."""
    sections: list[_Section] = []
    current = _Section(None, None)
    preamble = True
    in_latency = False
    legacy = False
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("sysbench "):
            m = _BANNER.match(line)
            if m:
                if preamble:
                    current.version, current.build = m.group(1), m.group(2)
                    preamble = False
                else:
                    sections.append(current)
                    current = _Section(m.group(1), m.group(2))
                in_latency = False
                continue
        current.lines += 1
        key, sep, rest = line.partition(":")
        if sep:
            rest = rest.strip()
            if in_latency and key in ("min", "avg", "max", "sum") or key.endswith("th percentile"):
                current.latency[key] = rest
                continue
            if key == "FATAL":
                current.fatal.append(line)
            elif key == "Prime numbers limit" or key == "CPU speed":
                current.kind = "cpu"
            elif key == "Running memory speed test with the following options":
                current.kind = "memory"
            elif key == "Latency (ms)":
                in_latency = True
                continue
            elif key == "Threads fairness":
                in_latency = False
            elif key in _FILEIO_KEYS:
                current.kind = "fileio"
            elif line.startswith(_BAD_ARG):
                current.bad_arg.append(line)
            elif line.startswith(_LEGACY):
                legacy = True
            current.fields[key] = rest
        elif line == "Threads started!":
            current.started = True
        elif "MiB transferred" in line:
            current.fields["transferred"] = line
            current.kind = "memory"
        elif line.startswith(_FILEIO_LINES):
            current.kind = "fileio"
        elif line.startswith(_BAD_ARG):
            current.bad_arg.append(line)
    if not preamble or current.lines:
        sections.append(current)
    return sections, legacy


def _legacy_failure(version: str | None) -> ParseFailure:
    named = f"sysbench {version}" if version else "sysbench 0.4.x"
    return ParseFailure("unsupported-version",
                        f"{named} output (the legacy 0.4.x format) is not supported: its figures are not "
                        "comparable with sysbench 1.0; rerun with sysbench 1.0 or later")


def _select(sections: list[_Section], legacy: bool, wanted: str | None) -> tuple[_Section, list[str]]:
    versions = {s.version for s in sections if s.version}
    old = sorted(v for v in versions if v.startswith("0."))
    if old or (legacy and not any(s.kind in ("cpu", "memory") for s in sections)):
        raise _legacy_failure(old[0] if old else None)
    if not any(s.version for s in sections):
        raise ParseFailure("unknown-format", "no `sysbench <version>` banner found: this is not a sysbench "
                                             "1.0 report (or it lost its first lines)")
    if len(sections) == 1:
        return sections[0], []
    kinds = [s.kind for s in sections]
    candidates = [s for s in sections if (s.kind == wanted if wanted else s.kind in ("cpu", "memory"))]
    fatal = [line for s in sections for line in s.fatal]
    if len(candidates) != 1:
        what = f"{wanted} runs" if wanted else "cpu or memory runs"
        extra = f"; it also has {len(fatal)} FATAL line(s), first: {fatal[0]}" if fatal else ""
        raise ParseFailure("unknown-format",
                           f"this log holds {len(sections)} sysbench runs ({', '.join(kinds)}) with "
                           f"{len(candidates)} {what}; split it, or pass the test (sysbench-cpu or "
                           f"sysbench-memory) to pick one{extra}")
    chosen = candidates[0]
    others = [s.kind for s in sections if s is not chosen]
    note = f"MULTI_RUN: the log holds {len(sections)} sysbench runs; parsed the {chosen.kind} run, " \
           f"ignored {', '.join(others)}"
    fatal_elsewhere = [line for s in sections if s is not chosen for line in s.fatal]
    if fatal_elsewhere:
        note += f" (which printed {len(fatal_elsewhere)} FATAL line(s))"
    return chosen, [note]


def _num(section: _Section, key: str, what: str, strip: str = "") -> float:
    raw = section.fields.get(key)
    if raw is None:
        reason = "truncated" if section.started or section.kind != "other" else "unknown-format"
        raise ParseFailure(reason, f"sysbench {section.kind} report has no `{key}` line ({what}): the run "
                                   "did not finish or its output was cut")
    return to_number(raw.rstrip(strip) if strip else raw)


def parse(text: str, test: str | None = None, requested: Mapping[str, Any] | None = None,
          recorded_version: str | None = None) -> Parsed:
    sections, legacy = _split(text)
    if not sections:
        if legacy:
            raise _legacy_failure(None)
        raise ParseFailure("unknown-format", "no sysbench report found in the log")
    wanted = _KIND_TEST.get(test or "")
    section, flags = _select(sections, legacy, wanted)
    if section.fatal:
        raise ParseFailure("fatal", f"sysbench stopped with: {section.fatal[0]}")
    if section.bad_arg:
        raise ParseFailure("bad-argument", f"sysbench rejected its arguments: {section.bad_arg[0]}")
    if wanted and section.kind != wanted:
        if section.kind == "other" and not section.started:
            raise ParseFailure("truncated", f"the sysbench log stops before the {wanted} test started")
        raise ParseFailure("wrong-tool", f"expected a sysbench {wanted} report, found a {section.kind} run")
    if section.kind not in ("cpu", "memory"):
        if not section.started:
            raise ParseFailure("truncated", "the sysbench log stops before any test started")
        raise ParseFailure("unknown-format", f"sysbench {section.kind} reports are not supported "
                                             "(only cpu and memory)")
    echoed: Echoed = {"test": section.kind}
    f = section.fields
    if "Number of threads" in f:
        echoed["threads"] = int(to_number(f["Number of threads"]))
    metrics = MetricList()
    if section.kind == "cpu":
        if "Prime numbers limit" in f:
            echoed["max_prime"] = int(to_number(f["Prime numbers limit"]))
        metrics.add("events_per_second", _num(section, "events per second", "events/s"), "events/s", True)
    else:
        for key, name in (("block size", "block_size"), ("total size", "total_size"),
                          ("operation", "operation"), ("scope", "scope")):
            if key in f:
                echoed[name] = f[key]
        ops = _TOTAL_OPS.match(f.get("Total operations", ""))
        moved = _TRANSFER.match(f.get("transferred", ""))
        if not ops or not moved:
            _num(section, "Total operations" if not ops else "MiB transferred", "memory throughput")
            raise ParseFailure("unknown-format", "sysbench memory throughput lines are not in the 1.0 format")
        metrics.add("mib_per_second", to_number(moved.group(2)), "MiB/s", True)
        metrics.add("mib_transferred", to_number(moved.group(1)), "MiB", True)
        metrics.add("operations_per_second", to_number(ops.group(2)), "operations/s", True)
        metrics.add("operations", to_number(ops.group(1)), "operations", True)
    metrics.add("total_time", _num(section, "total time", "seconds", "s"), "s", False)
    events = _num(section, "total number of events", "event count")
    metrics.add("events", events, "events", True)
    _latency(section, metrics)
    flags += compare_echoed(requested, echoed, ("max_prime", "block_size", "operation"))
    flags += _short(requested, events, section)
    return Parsed(TOOL, section.version, section.build, metrics.as_tuple(), echoed, tuple(flags))


def _latency(section: _Section, metrics: MetricList) -> None:
    lat = section.latency
    if not all(k in lat for k in ("min", "avg", "max")):
        raise ParseFailure("truncated", "sysbench report has no complete `Latency (ms)` block "
                                        "(min, avg, max): the output was cut")
    for key in ("min", "avg", "max"):
        metrics.add(f"latency_{key}", to_number(lat[key]), "ms", False)
    for key, raw in lat.items():
        if key.endswith("th percentile"):
            metrics.add(f"latency_p{key.split('th', 1)[0].replace('.', '_')}", to_number(raw), "ms", False)


def _short(requested: Mapping[str, Any] | None, events: float, section: _Section) -> list[str]:
    wanted = requested_int(requested, "events")
    if not wanted or events >= wanted:
        return []
    limit = requested_int(requested, "time")
    why = f"before its {limit} s time limit" if limit else "before it stopped"
    return [f"SHORT: sysbench ran {int_or_float(events)} of the {wanted} requested events {why}"]
