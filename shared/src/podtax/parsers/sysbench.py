"""sysbench 1.0.x and 1.1.x `cpu` and `memory` reports (1.1 names the run's duration `time elapsed`).

A log normally holds one run. Session logs that hold several runs (each starts with its
`sysbench 1.0.20 (...)` banner) are split at the banners and the run matching the test is
parsed; several matching runs are refused as ambiguous. The legacy 0.4.x format is recognized
and REJECTED with `unsupported-version` naming the version: its reports lack events/s and its
figures are not comparable with 1.0 runs, so a campaign must not mix them. A memory run with
`--memory-oper=none` moves no memory: it has operations per second and no MiB figures. Releases 1.0.0 to 1.0.4
print `Operations performed: N (X ops/sec)` for 1.0.5's `Total operations: N (X per second)`, of a 32-bit counter:
read alike, unless it disagrees with `total number of events` (wrapped: refused). A run of
0 events is refused (`fatal`), as is a cpu rate no CPU reaches (`implausible`) and a memory run that moved
`0.00 MiB` or ran under MIN_MEMORY_TIME_S, 0.01 s (its MiB/s times thread start-up, `implausible`). A memory
report does not echo `--memory-access-mode`: a rnd run (a third of seq's MiB/s here) reads as any other. Releases up to
1.0.7 and 1.1 development builds print no `CPU speed:` section: events/s is then derived (DERIVED).
Reports of other tests are refused by name (fileio, oltp; threads and mutex name no test), a
usage error (`sysbench memory` without `run`) as `bad-argument`, as is a refused option value or test name
printed after the banner (`FATAL: Invalid value for memory-oper: foo`, `FATAL: Cannot find benchmark 'foo'`).
A run with `--verbosity` below 3 prints nothing (its banner and report are NOTICE lines): a log of only command
lines and `sysbench --version`'s line, or one without banner whose command has `--verbosity=0`..`2`, is `empty`,
asking whether --verbosity was below 3.
A run that did more events than the requested `events`, or ran longer than the requested `time` allows, is
flagged PARAM_MISMATCH: the log is another run's. So is a run held to a rate (`--rate=N`, `Target transaction
rate: N/sec`): its rates are the cap.
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
    int_or_float,
    parse_int,
    percentile_label,
    refuse_inconsistent_rates,
    requested_int,
    size_bytes,
    to_number,
)
from podtax.parsers.sysbench_runs import TOOL, Section, named, refuse_quiet, refused_option, select_run, split_runs

# sysbench prints the rates with printf widths (`%8.2f`): below 10000 they are padded, `100 ( 3984.36 per second)`
_TOTAL_OPS = re.compile(r"^(\d+) \(\s*([\d.]+) per second\)$")
_TRANSFER = re.compile(r"^([\d.]+) MiB transferred \(\s*([\d.]+) MiB/sec\)$")
# 1.0.0 to 1.0.4 print `Operations performed: %d (%8.2f ops/sec)` instead, of an unsigned int counter (it wraps)
_PERFORMED = re.compile(r"^(-?\d+) \(\s*([\d.]+) ops/sec\)$")
_KIND_TEST = {"sysbench-cpu": "cpu", "sysbench-memory": "memory"}


def _num(section: Section, key: str, what: str, strip: str = "") -> float:
    raw = section.fields.get(key)
    if raw is None:
        reason = "truncated" if section.started or section.kind != "other" else "unknown-format"
        raise ParseFailure(reason, f"sysbench {section.kind} report has no `{key}` line ({what}): the run "
                                   "did not finish or its output was cut")
    return to_number(raw.rstrip(strip) if strip else raw)


def parse(text: str, test: str | None = None, requested: Mapping[str, Any] | None = None,
          recorded_version: str | None = None) -> Parsed:
    wanted = _KIND_TEST.get(test or "")
    section, flags = select_run(split_runs(text), text, wanted)
    if section.fatal and refused_option(section.fatal[0]):  # printed after the banner: a test's own option
        raise ParseFailure("bad-argument", f"sysbench rejected its arguments: {section.fatal[0]}")
    if section.fatal:
        raise ParseFailure("fatal", f"sysbench stopped with: {section.fatal[0]}{_warned_after(text, section.fatal[0])}")
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
            refuse_quiet(text)
            raise ParseFailure("truncated", f"the sysbench log stops before the {wanted} test started")
        raise ParseFailure("wrong-tool", f"expected a sysbench {wanted} report, found {named(section.kind)}")
    if section.kind not in ("cpu", "memory"):
        if not section.started and section.kind == "other":
            refuse_quiet(text)
            raise ParseFailure("truncated", "the sysbench log stops before any test started")
        step = "" if section.started else " (its prepare or cleanup step: no test ran)"
        disk = "; podtax measures disk I/O with fio (the fio template)" if section.kind == "fileio" else ""
        raise ParseFailure("unknown-format", f"this is {named(section.kind)}{step}: sysbench reports of other "
                                             f"tests than cpu and memory are not supported{disk}")
    echoed: Echoed = {"test": section.kind}
    f = section.fields
    if "Number of threads" in f:
        echoed["threads"] = _threads(f["Number of threads"])
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
        ops = _TOTAL_OPS.match(f.get("Total operations", "")) or _performed(f)
        moved = _TRANSFER.match(f.get("transferred", ""))
        # --memory-oper=none prints no `MiB transferred` line; 1.0.0 to 1.0.4 echo no `operation:` (the line, between
        # `Operations performed:` and the figures after it, is then missing for that alone)
        moves = f.get("operation") != "none" if "Total operations" in f else "transferred" in f
        if not ops or (moves and not moved):
            line = f.get("Total operations") if not ops else f.get("transferred")
            if line is None:
                lost = "Total operations" if not ops else "MiB transferred"
                raise ParseFailure("truncated", f"sysbench memory report has no `{lost}` line: the run did not "
                                                "finish or its output was cut")
            raise ParseFailure("unknown-format", f"sysbench memory throughput line is not in the 1.0 format: "
                                                 f"`{line[:120]}`")
        if moved and to_number(moved.group(1)) == 0 and to_number(ops.group(1)) > 0:
            raise ParseFailure("implausible", f"sysbench memory moved `{moved.group(1)} MiB` ({ops.group(1)} "
                                              f"operation(s) of {f.get('block size', '?')} blocks, a total size of "
                                              f"{f.get('total size', '?')}): its {moved.group(2)} MiB/sec times "
                                              "sysbench's thread start-up, not memory (none is that slow); raise "
                                              "the total size")
        if moved:
            metrics.add("mib_per_second", to_number(moved.group(2)), "MiB/s", True)
            metrics.add("mib_transferred", to_number(moved.group(1)), "MiB", True)
        metrics.add("operations_per_second", to_number(ops.group(2)), "operations/s", True)
        metrics.add("operations", to_number(ops.group(1)), "operations", True)
    # 1.0 prints `total time:` under `General statistics:`, 1.1 `time elapsed:` under `Throughput:`
    elapsed = "total time" if "total time" in f or "time elapsed" not in f else "time elapsed"
    total_time = _num(section, elapsed, "seconds", "s")
    metrics.add("total_time", total_time, "s", False)
    events = _num(section, "total number of events", "event count")
    metrics.add("events", events, "events", True)
    if events == 0:  # `Total operations: 0 (0.00 per second)`: a rate of 0 would read as the slowest machine
        raise ParseFailure("fatal", f"sysbench {section.kind} did no work: 0 events in {f.get(elapsed, '?')} "
                                    f"({_no_work_hint(echoed)}); no figure to report")
    if section.kind == "memory":
        _refuse_too_short(total_time, echoed)
    refuse_inconsistent_rates(TOOL, metrics, "total_time", _RATES)
    _latency(section, metrics)
    flags += compare_echoed(_as_echoed(requested), echoed, ("max_prime", "block_size", "operation"))
    flags += _short(requested, events, section) + _rate_capped(f.get("Target transaction rate", ""))
    flags += _beyond_limits(requested, events, total_time, to_number(section.latency["max"]))
    return Parsed(TOOL, section.version, section.build, metrics.as_tuple(), echoed, tuple(flags))


_RATES = (("events_per_second", "events"), ("operations_per_second", "operations"),
          ("mib_per_second", "mib_transferred"))
# The most events/s one thread could do at a prime limit of 10,000 (the work of an event grows as
# limit^1.5): about 35x the fastest real runs seen, 5,800 a thread (normalized so) on 2020s x86 and ARM.
_FASTEST_PER_THREAD = 5_800.0
_MAX_EVENTS_PER_THREAD = 200_000.0
_MAX_PRIME_LIMIT = 2**32 - 1


# Linux runs at most 4,194,304 tasks at once (PID_MAX_LIMIT): no sysbench run had more threads
_MAX_THREADS = 4_194_304


def _warned_after(text: str, fatal: str) -> str:
    """sysbench's `WARNING:` line right after its FATAL one, as `; sysbench: ...` (fileio run without its files:
    `WARNING: Did you forget to run the prepare step?`), else ''; for `--forced-shutdown`, what it did."""
    if "forcing shutdown" in fatal:  # a report follows, of events cut short (`Number of unfinished transactions`)
        return ("; --forced-shutdown ended the run at its time limit with events unfinished (sysbench exits 2): "
                "rerun without --forced-shutdown")
    at = text.find(fatal)
    end = text.find("\n", at) if at >= 0 else -1
    line = text[end + 1:].split("\n", 1)[0].strip() if end >= 0 else ""
    return f"; sysbench: {line.removeprefix('WARNING:').strip()}" if line.startswith("WARNING:") else ""


def _threads(text: str) -> int:
    """`Number of threads: 8` -> 8. sysbench prints a whole number: `1e308` or `2.5` (taken as 10^308 and 2, they
    made the cpu rate's plausibility bound per thread vanish) is a damaged or edited log, refused."""
    threads = parse_int(text.strip())
    if threads is None or threads > _MAX_THREADS:
        raise ParseFailure("unknown-format", f"the sysbench report's `Number of threads: {text.strip()[:40]}` is no "
                                             f"thread count sysbench prints (a whole number, at most Linux's "
                                             f"{_MAX_THREADS:,} tasks): the log is damaged or edited")
    return threads


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
    if limit > _MAX_PRIME_LIMIT:  # (limit / 10,000) ** 1.5 would overflow a float from ~1e208
        raise ParseFailure("unknown-format", f"the sysbench cpu report's prime limit, {limit:.4g}, is beyond what "
                                             "sysbench takes (--cpu-max-prime is a 32-bit integer): the log is damaged")
    per_thread = rate / threads * (limit / 10_000) ** 1.5
    if per_thread > _MAX_EVENTS_PER_THREAD:
        raise ParseFailure("implausible", f"sysbench cpu reports {rate:,.2f} events/s on {threads} thread(s) "
                                          f"with a prime limit of {limit}, {per_thread / _FASTEST_PER_THREAD:,.0f}x "
                                          "what the fastest CPUs do: this sysbench build timed its own loop, not "
                                          "the prime search (a known fault of some macOS builds); use another build")


# sysbench 1.0.20 memory, 1 KiB blocks, on a 2-core VM: 0.0004 s read 850 MiB/s, 0.0015 s 4,235, 0.013 s 7,081,
# 0.13 s 7,545, 0.53 s 7,642 (medians of 3): thread start-up (~0.5-1 ms, more under load) is part of the time the
# MiB/s divides by; from 0.01 s a run reads >= ~90% of a long run's rate (0.1 s: within 2%, what the advice asks).
# Large blocks and threads move much in little time (10 GiB of 1 MiB blocks on 2 threads in 0.0686 s read faster
# than a 0.2 s run): such runs are not refused.
MIN_MEMORY_TIME_S = 0.01


def _refuse_too_short(total_time: float, echoed: Echoed) -> None:
    """A memory run too short to time: its rate is mostly thread start-up (the 0.00 MiB case, larger)."""
    if total_time < MIN_MEMORY_TIME_S:
        raise ParseFailure("implausible", f"sysbench memory ran {total_time:g} s (a total size of "
                                          f"{echoed.get('total_size', '?')}): under {MIN_MEMORY_TIME_S:g} s its rate "
                                          "times sysbench's thread start-up as much as memory (a 0.0015 s run read "
                                          "55% of a long run's speed); raise the total size (--memory-total-size) "
                                          "until the run lasts 0.1 s or more")


def _no_cpu_speed(version: str | None) -> bool:
    """Releases 1.0.0 to 1.0.7 and 1.1 development builds: their cpu report has no `CPU speed:` section."""
    parts = (version or "").split("-")[0].split(".")
    if len(parts) < 3 or not all(p.isdecimal() for p in parts[:3]):
        return (version or "").startswith("1.1")
    major, minor, patch = (int(p) for p in parts[:3])
    return (major, minor) == (1, 1) or ((major, minor) == (1, 0) and patch <= 7)


def _performed(f: Mapping[str, str]) -> re.Match[str] | None:
    """1.0.0 to 1.0.4's `Operations performed: 21672955 (7222554.38 ops/sec)`, matched as _TOTAL_OPS matches 1.0.5's
    `Total operations:` line. Its count is an unsigned int printed with %d: past 2^31 operations it reads negative,
    past 2^32 it wrapped (the rate with it), so a count other than the report's `total number of events` is refused."""
    m = _PERFORMED.match(f.get("Operations performed", ""))
    if m is None or "Total operations" in f:
        return None
    events = f.get("total number of events")
    if events is None:  # the log cut before it: refused as truncated where the events are read (_num)
        return m
    if parse_int(m.group(1)) != parse_int(events):
        raise ParseFailure("unknown-format", f"this sysbench (1.0.0 to 1.0.4) memory report counts `Operations "
                                             f"performed: {m.group(1)}` against {events} events: its 32-bit operation "
                                             "counter wrapped, so its ops/sec is wrong; rerun with sysbench 1.0.5 or "
                                             "later, or a smaller --memory-total-size")
    return m


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


def _latency(section: Section, metrics: MetricList) -> None:
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


STOP_SLACK_S = 0.5  # starting and joining the threads, beyond the last event (see _beyond_limits)


def _rate_capped(target: str) -> list[str]:
    """`--rate=N` (`Target transaction rate: 100/sec`): sysbench paced its events to N a second, so its rates are
    that cap (97 events/s where the CPU did 38,000), not the machine's; podtax's templates never set a rate."""
    if not target:
        return []
    return [f"PARAM_MISMATCH: rate: sysbench was held to {target} (--rate, `Target transaction rate`): its rates "
            "are that cap, not what the machine can do"]


def _beyond_limits(requested: Mapping[str, Any] | None, events: float, elapsed: float,
                   latency_max_ms: float) -> list[str]:
    """PARAM_MISMATCH when the log did more than its requested limits allow: sysbench stops at `--events`
    exactly, and each thread checks `--time` before starting an event, so a run overshoots its time by at
    most its longest event (latency max) plus STOP_SLACK_S. More means the log is another run's."""
    flags = []
    wanted = requested_int(requested, "events")
    if wanted and events > wanted:
        flags.append(f"PARAM_MISMATCH: events: sysbench ran {int_or_float(events)} events, more than the {wanted} "
                     "requested")
    limit = requested_int(requested, "time")
    if limit and elapsed > limit + latency_max_ms / 1000 + STOP_SLACK_S:
        flags.append(f"PARAM_MISMATCH: time: sysbench ran {elapsed:g} s, longer than the {limit} s requested")
    return flags


def _short(requested: Mapping[str, Any] | None, events: float, section: Section) -> list[str]:
    wanted = requested_int(requested, "events")
    if not wanted or events >= wanted:
        return []
    limit = requested_int(requested, "time")
    why = f"before its {limit} s time limit" if limit else "before it stopped"
    return [f"SHORT: sysbench ran {int_or_float(events)} of the {wanted} requested events {why}"]
