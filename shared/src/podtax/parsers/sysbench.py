"""sysbench 1.0.x and 1.1.x `cpu` and `memory` reports (1.1 names the run's duration `time elapsed`).

A log normally holds one run. Session logs that hold several runs (each starts with its
`sysbench 1.0.20 (...)` banner) are split at the banners and the run matching the test is
parsed; several matching runs are refused as ambiguous. The legacy 0.4.x format is recognized
and REJECTED with `unsupported-version` naming the version: its reports lack events/s and its
figures are not comparable with 1.0 runs, so a campaign must not mix them. A memory run with
`--memory-oper=none` moves no memory: it has operations per second and no MiB figures. A run of
0 events is refused (`fatal`), as is a cpu rate no CPU reaches (`implausible`). Releases up to
1.0.7 and 1.1 development builds print no `CPU speed:` section: events/s is then derived (DERIVED).
Reports of other tests are refused by name (fileio, oltp; threads and mutex name no test), a
usage error (`sysbench memory` without `run`) as `bad-argument`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from podtax.parsers.base import (
    Echoed,
    MetricList,
    Parsed,
    ParseFailure,
    compare_echoed,
    errors_flag,
    int_or_float,
    percentile_label,
    refuse_inconsistent_rates,
    requested_int,
    size_bytes,
    to_number,
)

TOOL = "sysbench"
_BEHIND = re.compile(r"^[^\n]*?\S[ \t]+sysbench [0-9]+\.[0-9]+[^\n]*\((?:using|[^)]*LuaJIT)", re.M)
_BANNER = re.compile(r"sysbench (\d+\.\d+[0-9A-Za-z.+~-]*)(?:\s*\(([^()]*)\)|:)?")
# sysbench prints the rates with printf widths (`%8.2f`): below 10000 they are padded, `100 ( 3984.36 per second)`
_TOTAL_OPS = re.compile(r"^(\d+) \(\s*([\d.]+) per second\)$")
_TRANSFER = re.compile(r"^([\d.]+) MiB transferred \(\s*([\d.]+) MiB/sec\)$")
_LEGACY = ("Operations performed:", "Test execution summary:", "per-request statistics:",
           "Maximum prime number checked", "approx.  95 percentile", "Doing CPU performance benchmark")
_BAD_ARG = ("Invalid value for", "invalid option", "Unknown option", "option requires", "Unrecognized",
            "Missing required argument")
# `Throughput:` is no marker: 1.1 prints that block in every report (`read, MiB/s:` is fileio's line in it;
# memory prints `MiB/sec`)
_FILEIO_MARKERS = ("File operations:", "Extra file open flags", "Creating files for the test",
                   "Removing test files", "Doing random", "Doing sequential", "MiB/s:")
_USAGE = "requires a command argument"  # `The 'memory' test requires a command argument. See '...'`
_USAGE_WORDS = (_USAGE, *_BAD_ARG)
_BAD_ARG_FIRST = frozenset(p[0] for p in _BAD_ARG)  # a cheap test before startswith(_BAD_ARG)
_LATENCY_KEYS = frozenset(("min", "avg", "max", "sum"))
_KIND_TEST = {"sysbench-cpu": "cpu", "sysbench-memory": "memory"}
# lines a report prints once: a second one is another report whose banner was lost (or a 0.4 summary)
_ONCE = frozenset(("total time", "total number of events", "events per second", "time elapsed"))


class _Section:
    __slots__ = ("version", "build", "kind", "fields", "latency", "fatal", "bad_arg", "started", "reports",
                 "repeated")

    def __init__(self, version: str | None, build: str | None) -> None:
        self.version = version
        self.build = build
        self.kind = "other"
        self.fields: dict[str, str] = {}
        self.latency: dict[str, str] = {}
        self.fatal: list[str] = []
        self.bad_arg: list[str] = []
        self.started = False
        self.reports = 0  # `Latency (ms):` blocks: more than one is two runs, a banner lost between them
        self.repeated = ""  # the first of the `_ONCE` lines printed twice (two runs, as `reports`)


def _fill(text: str, kind: str | None = None) -> _Section:
    """Read one run (one banner) line by line; `kind` is `_kind(text)` when already known."""
    current = _Section(None, None)
    fields, latency = current.fields, current.latency
    in_latency = False
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("sysbench ") and current.version is None:
            m = _BANNER.match(line)
            if m:
                current.version, current.build = m.group(1), m.group(2)
                continue
        key, sep, rest = line.partition(":")
        if sep:
            rest = rest.strip()
            if in_latency and key in _LATENCY_KEYS or key.endswith("th percentile"):
                latency[key] = rest
                continue
            if key == "FATAL":
                current.fatal.append(line)
            elif key == "Latency (ms)":
                in_latency = True
                current.reports += 1
                continue
            elif key == "Threads fairness":
                in_latency = False
            elif line[0] in _BAD_ARG_FIRST and line.startswith(_BAD_ARG):
                current.bad_arg.append(line)
            elif key in _ONCE and key in fields and not current.repeated:
                current.repeated = key
            fields[key] = rest
        elif line == "Threads started!":
            current.started = True
        elif "MiB transferred" in line:
            fields["transferred"] = line
        elif line.startswith(_BAD_ARG) or _USAGE in line:
            current.bad_arg.append(line)
    current.kind = _kind(text) if kind is None else kind
    return current


def _kind(text: str) -> str:
    """`rfind(marker) >= 0` is `marker in text`, 2-3x faster on these markers (see base.holds)."""
    find = text.rfind
    if find("Prime numbers limit:") >= 0 or find("CPU speed:") >= 0:
        return "cpu"
    if find("Running memory speed test") >= 0 or find("MiB transferred (") >= 0:
        return "memory"
    for marker in _FILEIO_MARKERS:
        if find(marker) >= 0:
            return "fileio"
    if find("SQL statistics:") >= 0:
        return "oltp"
    return "other"


def _named(kind: str) -> str:
    """A run's kind in a sentence: threads and mutex reports name no test, so they are `other`."""
    return "a run of another test (threads, mutex or a script: its report names no test)" if kind == "other" \
        else f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} run"


def _split(text: str) -> list[tuple[str, str | None]]:
    """Split at each `sysbench <version>` banner: [(run text, version)]; lines before the first
    banner (WARNING: ...) belong to the first run."""
    starts: list[tuple[int, str | None]] = []
    head = _BANNER.match(text)
    if head:
        starts.append((0, head.group(1)))
    at = text.find("\nsysbench ")
    while at >= 0:
        m = _BANNER.match(text, at + 1)
        if m:
            starts.append((at + 1, m.group(1)))
        at = text.find("\nsysbench ", at + 1)
    if not starts:
        return [(text, None)]
    starts[0] = (0, starts[0][1])
    ends = [pos for pos, _ in starts[1:]] + [len(text)]
    return [(text[pos:end], version) for (pos, version), end in zip(starts, ends, strict=True)]


def _legacy_failure(version: str | None) -> ParseFailure:
    named = f"sysbench {version}" if version else "sysbench 0.4.x"
    return ParseFailure("unsupported-version",
                        f"{named} output (a legacy pre-1.0 format) is not supported: its figures are not "
                        "comparable with sysbench 1.0; rerun with sysbench 1.0 or later")


def _usage_only(run: str) -> bool:
    if run.find("Threads started!") >= 0:
        return False
    find = run[:400].rfind  # sysbench refuses its arguments right after its banner
    return any(find(word) >= 0 for word in _USAGE_WORDS)


def _refusal(run: str) -> str:
    """The line of a usage run that says what sysbench refused."""
    return next((line.strip() for line in run.split("\n") if any(word in line for word in _USAGE_WORDS)),
                "a command sysbench refused")


def _select(runs: list[tuple[str, str | None]], text: str, wanted: str | None) -> tuple[_Section, list[str]]:
    old = sorted(v for _, v in runs if v and v.startswith("0."))
    if old:
        raise _legacy_failure(old[0])
    ignored: list[str] = []
    if len(runs) > 1:  # a usage error (`sysbench memory` without `run`) is not a run beside the others
        usage = [run for run in runs if _usage_only(run[0])]
        ran = [run for run in runs if run not in usage]
        # ... unless nothing else ran either (`sysbench memory`, then `sysbench memory help`): it is the answer
        if ran and (not usage or any(run.find("Threads started!") >= 0 for run, _ in ran)):
            ignored = [errors_flag(TOOL, _refusal(usage[0][0]))] if usage else []
            runs = ran
        else:
            runs = usage or runs
    if len(runs) == 1:
        section = _fill(runs[0][0])
        if section.version is None and section.bad_arg:  # refused before its banner: `--percentile=99.9`
            raise ParseFailure("bad-argument", f"sysbench rejected its arguments: {section.bad_arg[0]}")
        if section.version is None:
            if section.kind not in ("cpu", "memory") and any(m in text for m in _LEGACY):
                raise _legacy_failure(None)
            behind = _BEHIND.search(text)
            if behind:  # `CPU 0 sysbench 1.0.11 (using system LuaJIT ...)`: a harness's prefix on every line
                raise ParseFailure("unknown-format", f"the `sysbench <version>` banner is behind other text on its "
                                                     f"line (`{behind.group(0)[:60]}`): strip what precedes sysbench's "
                                                     "own lines")
            raise ParseFailure("unknown-format", "no `sysbench <version>` banner found: this is not a "
                                                 "sysbench 1.x report (or it lost its first lines)")
        return section, ignored
    kinds = [_kind(run) for run, _ in runs]
    picked = [i for i, k in enumerate(kinds) if (k == wanted if wanted else k in ("cpu", "memory"))]
    fatal = [i for i, (run, _) in enumerate(runs) if run.rfind("FATAL:") >= 0]  # "FATAL:" in run, faster
    if not picked and all(run.find("Threads started!") < 0 for run, _ in runs):
        raise ParseFailure("unknown-format", f"this log holds {len(runs)} sysbench banners but no report (no "
                                             "`Threads started!` line): a wrapper's summary or help text? Parse "
                                             "sysbench's own output")
    if wanted and not picked:
        raise ParseFailure("wrong-tool", f"expected a sysbench {wanted} report, found {len(runs)} runs "
                                         f"({', '.join(kinds)})")
    if not picked and not fatal:
        raise ParseFailure("unknown-format", f"this log holds {len(runs)} sysbench runs ({', '.join(kinds)}), none of "
                                             "cpu or memory: sysbench reports of other tests are not supported")
    if len(picked) != 1:
        what = f"{wanted} runs" if wanted else "cpu or memory runs"
        # naming the test picks one only among runs of different tests
        advice = "" if len({kinds[i] for i in picked}) == 1 else ", or pass the test (sysbench-cpu or " \
            "sysbench-memory) to pick one"
        extra = ""
        if fatal:
            first = runs[fatal[0]][0]
            at = first.find("FATAL:")
            extra = f"; {len(fatal)} of them printed FATAL lines, first: {first[at:first.find(chr(10), at)].strip()}"
        raise ParseFailure("unknown-format",
                           f"this log holds {len(runs)} sysbench runs ({', '.join(kinds)}) with "
                           f"{len(picked)} {what}; split it, one run per log{advice}{extra}")
    chosen = picked[0]
    others = [k for i, k in enumerate(kinds) if i != chosen]
    note = f"MULTI_RUN: the log holds {len(runs)} sysbench runs; parsed the {kinds[chosen]} run, " \
           f"ignored {', '.join(others)}"
    fatal_elsewhere = [i for i in fatal if i != chosen]
    if fatal_elsewhere:
        note += f" ({len(fatal_elsewhere)} of which printed FATAL lines)"
    return _fill(runs[chosen][0], kinds[chosen]), [note, *ignored]


def _num(section: _Section, key: str, what: str, strip: str = "") -> float:
    raw = section.fields.get(key)
    if raw is None:
        reason = "truncated" if section.started or section.kind != "other" else "unknown-format"
        raise ParseFailure(reason, f"sysbench {section.kind} report has no `{key}` line ({what}): the run "
                                   "did not finish or its output was cut")
    return to_number(raw.rstrip(strip) if strip else raw)


def parse(text: str, test: str | None = None, requested: Mapping[str, Any] | None = None,
          recorded_version: str | None = None) -> Parsed:
    wanted = _KIND_TEST.get(test or "")
    section, flags = _select(_split(text), text, wanted)
    if section.fatal:
        raise ParseFailure("fatal", f"sysbench stopped with: {section.fatal[0]}")
    if section.bad_arg:
        raise ParseFailure("bad-argument", f"sysbench rejected its arguments: {section.bad_arg[0]}")
    if not section.started and text.find(" options:\n  --") >= 0:  # `sysbench memory help`: its option list
        raise ParseFailure("unknown-format", "this is sysbench's help text (`sysbench <test> help`, its option "
                                             "list), not a run: no test ran")
    if section.reports > 1 or section.repeated:  # the later report's figures would overwrite the earlier one's
        if text.find("Checkpoint report:") >= 0:  # --report-checkpoints: each covers the time since the last
            raise ParseFailure("unknown-format", "this sysbench run used --report-checkpoints: sysbench resets its "
                                                 "counters at each checkpoint, so no report covers the whole run; "
                                                 "rerun without --report-checkpoints")
        twice = f"{section.reports} reports" if section.reports > 1 else f"`{section.repeated}` twice"
        raise ParseFailure("unknown-format", f"this sysbench run holds {twice} (a `sysbench <version>` banner "
                                             "line is missing between runs?); split it")
    if wanted and section.kind != wanted:
        if section.kind == "other" and not section.started:
            raise ParseFailure("truncated", f"the sysbench log stops before the {wanted} test started")
        raise ParseFailure("wrong-tool", f"expected a sysbench {wanted} report, found {_named(section.kind)}")
    if section.kind not in ("cpu", "memory"):
        if not section.started and section.kind == "other":
            raise ParseFailure("truncated", "the sysbench log stops before any test started")
        step = "" if section.started else " (its prepare or cleanup step: no test ran)"
        raise ParseFailure("unknown-format", f"this is {_named(section.kind)}{step}: sysbench reports of other "
                                             "tests than cpu and memory are not supported")
    echoed: Echoed = {"test": section.kind}
    f = section.fields
    if "Number of threads" in f:
        echoed["threads"] = int(to_number(f["Number of threads"]))
    metrics = MetricList()
    if section.kind == "cpu":
        if "Prime numbers limit" in f:
            echoed["max_prime"] = int(to_number(f["Prime numbers limit"]))
        if "CPU speed" not in f and "events per second" not in f and "total number of events" in f \
                and "total time" in f and section.latency and _no_cpu_speed(section.version):
            # 1.0.0 to 1.0.7 and 1.1 development builds print no `CPU speed:` section: the rate sysbench computes
            rate = round(_num(section, "total number of events", "event count")
                         / _num(section, "total time", "s", "s"), 2)
            flags.append("DERIVED: events_per_second = total number of events / total time (this sysbench build "
                         "prints no `CPU speed:` section)")
        else:
            rate = _num(section, "events per second", "events/s")
        _refuse_implausible(rate, echoed)
        metrics.add("events_per_second", rate, "events/s", True)
    else:
        for key, name in (("block size", "block_size"), ("total size", "total_size"),
                          ("operation", "operation"), ("scope", "scope")):
            if key in f:
                echoed[name] = f[key]
        ops = _TOTAL_OPS.match(f.get("Total operations", ""))
        moved = _TRANSFER.match(f.get("transferred", ""))
        moves = f.get("operation") != "none"  # --memory-oper=none prints no `MiB transferred` line
        if not ops or (moves and not moved):
            line = f.get("Total operations") if not ops else f.get("transferred")
            if line is None:
                lost = "Total operations" if not ops else "MiB transferred"
                raise ParseFailure("truncated", f"sysbench memory report has no `{lost}` line: the run did not "
                                                "finish or its output was cut")
            raise ParseFailure("unknown-format", f"sysbench memory throughput line is not in the 1.0 format: "
                                                 f"`{line[:120]}`")
        if moved:
            metrics.add("mib_per_second", to_number(moved.group(2)), "MiB/s", True)
            metrics.add("mib_transferred", to_number(moved.group(1)), "MiB", True)
        metrics.add("operations_per_second", to_number(ops.group(2)), "operations/s", True)
        metrics.add("operations", to_number(ops.group(1)), "operations", True)
    # 1.0 prints `total time:` under `General statistics:`, 1.1 `time elapsed:` under `Throughput:`
    elapsed = "total time" if "total time" in f or "time elapsed" not in f else "time elapsed"
    metrics.add("total_time", _num(section, elapsed, "seconds", "s"), "s", False)
    events = _num(section, "total number of events", "event count")
    metrics.add("events", events, "events", True)
    if events == 0:  # `Total operations: 0 (0.00 per second)`: a rate of 0 would read as the slowest machine
        raise ParseFailure("fatal", f"sysbench {section.kind} did no work: 0 events in {f.get(elapsed, '?')} "
                                    f"({_no_work_hint(echoed)}); no figure to report")
    refuse_inconsistent_rates(TOOL, metrics, "total_time", _RATES)
    _latency(section, metrics)
    flags += compare_echoed(_as_echoed(requested), echoed, ("max_prime", "block_size", "operation"))
    flags += _short(requested, events, section)
    return Parsed(TOOL, section.version, section.build, metrics.as_tuple(), echoed, tuple(flags))


_RATES = (("events_per_second", "events"), ("operations_per_second", "operations"),
          ("mib_per_second", "mib_transferred"))
# The most events/s one thread could do at a prime limit of 10,000 (the work of an event grows as
# limit^1.5): about 35x the fastest real runs seen, 5,800 a thread (normalized so) on 2020s x86 and ARM.
_FASTEST_PER_THREAD = 5_800.0
_MAX_EVENTS_PER_THREAD = 200_000.0


def _refuse_implausible(rate: float, echoed: Echoed) -> None:
    """A cpu rate no CPU reaches at its prime limit: some builds (macOS with a system LuaJIT) report
    millions of events/s with 0.00 ms latencies, timing their own loop instead of the primes."""
    threads, limit = echoed.get("threads"), echoed.get("max_prime")
    if not isinstance(threads, int) or not isinstance(limit, int):  # sysbench 1.x prints both before the test
        lost = "Number of threads" if not isinstance(threads, int) else "Prime numbers limit"
        raise ParseFailure("truncated", f"the sysbench cpu report lost its `{lost}` line: its rate of {rate:,.2f} "
                                        "events/s cannot be checked against what a CPU can do")
    if threads < 1 or limit < 1000:
        return
    per_thread = rate / threads * (limit / 10_000) ** 1.5
    if per_thread > _MAX_EVENTS_PER_THREAD:
        raise ParseFailure("implausible", f"sysbench cpu reports {rate:,.2f} events/s on {threads} thread(s) "
                                          f"with a prime limit of {limit}, {per_thread / _FASTEST_PER_THREAD:,.0f}x "
                                          "what the fastest CPUs do: this sysbench build timed its own loop, not "
                                          "the prime search (a known fault of some macOS builds); use another build")


def _no_cpu_speed(version: str | None) -> bool:
    """Releases 1.0.0 to 1.0.7 and 1.1 development builds: their cpu report has no `CPU speed:` section."""
    parts = (version or "").split("-")[0].split(".")
    if len(parts) < 3 or not all(p.isdecimal() for p in parts[:3]):
        return (version or "").startswith("1.1")
    major, minor, patch = (int(p) for p in parts[:3])
    return (major, minor) == (1, 1) or ((major, minor) == (1, 0) and patch <= 7)


def _no_work_hint(echoed: Echoed) -> str:
    if echoed.get("test") == "memory":
        return (f"is the block size, {echoed.get('block_size', '?')}, larger than the total size, "
                f"{echoed.get('total_size', '?')}, shared by {echoed.get('threads', '?')} thread(s)?")
    return "was the run stopped at once, by a time or event limit of 0?"


def _as_echoed(requested: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The requested block size as sysbench echoes it: whole KiB, rounded down (8 bytes -> `0KiB`)."""
    size = size_bytes(str(requested["block_size"])) if requested and "block_size" in requested else None
    if requested is None or size is None:
        return requested
    return {**requested, "block_size": f"{int(size) // 1024}KiB"}


def _latency(section: _Section, metrics: MetricList) -> None:
    lat = section.latency
    # `sum` is the block's last line, after the optional percentile: without it the percentile may be lost
    if "min" not in lat or "avg" not in lat or "max" not in lat or "sum" not in lat:
        raise ParseFailure("truncated", "sysbench report has no complete `Latency (ms)` block "
                                        "(min, avg, max, [percentile], sum): the output was cut")
    add = metrics.add
    add("latency_min", to_number(lat["min"]), "ms", False)
    add("latency_avg", to_number(lat["avg"]), "ms", False)
    add("latency_max", to_number(lat["max"]), "ms", False)
    for key, raw in lat.items():
        if key.endswith("th percentile"):
            add(_percentile_name(key), to_number(raw), "ms", False)


@lru_cache(maxsize=256)
def _percentile_name(key: str) -> str:
    """`95th percentile` -> `latency_p95`, `99.9th percentile` -> `latency_p99_9`."""
    return "latency_" + percentile_label(key.split("th", 1)[0])


def _short(requested: Mapping[str, Any] | None, events: float, section: _Section) -> list[str]:
    wanted = requested_int(requested, "events")
    if not wanted or events >= wanted:
        return []
    limit = requested_int(requested, "time")
    why = f"before its {limit} s time limit" if limit else "before it stopped"
    return [f"SHORT: sysbench ran {int_or_float(events)} of the {wanted} requested events {why}"]
