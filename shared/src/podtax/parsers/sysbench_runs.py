"""Reading a sysbench log into its runs (for podtax.parsers.sysbench, which turns the chosen run into figures).

A log is split at each `sysbench <version>` banner; each run is read line by line into a
:class:`Section` (its banner, `key: value` lines, latency block, FATAL and refused-argument lines), or
in one regex match when it is in the layout sysbench 1.0 prints for cpu and memory (the same Section),
and :func:`select_run` picks the run to parse: the one matching the test, or the only cpu or memory
run. Legacy 0.4.x logs, logs without a banner, several matching runs and logs holding no report are
refused with a ParseFailure that says why.
"""

from __future__ import annotations

import re

from podtax.parsers.base import ParseFailure, errors_flag, guarded, holds_any

TOOL = "sysbench"
# `CPU 0 sysbench 1.0.11 (using system LuaJIT 2.1.0-beta3)`: the banner behind other text (see banner_behind)
_BEHIND = re.compile(r"\S[ \t]+sysbench [0-9]+\.[0-9]+")
_BANNER = re.compile(r"sysbench (\d+\.\d+[0-9A-Za-z.+~-]*)(?:\s*\(([^()]*)\)|:)?")
_LEGACY = ("Operations performed:", "Test execution summary:", "per-request statistics:",
           "Maximum prime number checked", "approx.  95 percentile", "Doing CPU performance benchmark")
_BAD_ARG = ("Invalid value for", "invalid option", "Unknown option", "option requires", "Unrecognized",
            "Missing required argument")
# `Throughput:` is no marker: 1.1 prints that block in every report (`read, MiB/s:` is fileio's line in it;
# memory prints `MiB/sec`)
_FILEIO_MARKERS = ("File operations:", "Extra file open flags", "Creating files for the test",
                   "Removing test files", "Doing random", "Doing sequential", "MiB/s:")
_PERFORMED = re.compile(r"^Operations performed: -?[0-9]+ \([ 0-9.]+ ops/sec\)$", re.M)  # memory, 1.0.0 to 1.0.4
# FATAL lines sysbench 1.0 prints for a refused option value (sysbench.c, sb_rand.c, sb_logger.c, tests/*/sb_*.c),
# before its banner (--threads, --percentile) or after it (each test's own options, an unknown test name)
_ARG_FATAL = re.compile(r"FATAL: (?:Invalid value (?:for|of) |Invalid (?:IO operations|fsync) mode: |unknown I/O mode: "
                        r"|Invalid random numbers distribution: |Missing required argument: |Cannot find benchmark "
                        r"|Too many checkpoints in --report-checkpoints|--histogram cannot be used with )")
_USAGE = "requires a command argument"  # `The 'memory' test requires a command argument. See '...'`
_USAGE_WORDS = (_USAGE, *_BAD_ARG)
_BAD_ARG_FIRST = frozenset(p[0] for p in _BAD_ARG)  # a cheap test before startswith(_BAD_ARG)
_LATENCY_KEYS = frozenset(("min", "avg", "max", "sum"))
# lines a report prints once: a second one is another report whose banner was lost (or a 0.4 summary)
_ONCE = frozenset(("total time", "total number of events", "events per second", "time elapsed"))
_ONCE_KEY, _LATENCY, _FATAL, _FAIRNESS = range(4)
# `--verbosity` below 3 hides sysbench's NOTICE lines, its banner and report among them (src/sysbench.c: print_header,
# sb_report_cumulative): such a run prints nothing and exits 0
QUIET = "no report: was sysbench run with --verbosity below 3? run it with the default verbosity (3)"
_QUIET_OPTION = re.compile(r"--verbosity[= ]+[0-2]\b")
_VERSION_LINE = re.compile(r"sysbench \d+\.\d+\S*")  # `sysbench --version`'s line (a run's banner says `(using ...)`)
_COMMAND_LINE = re.compile(r"(?:\S*[$#>] +)?sysbench +(?:--|[a-z]).*")  # the command, as a shell or script echoed it
_SPECIAL = {"FATAL": _FATAL, "Latency (ms)": _LATENCY, "Threads fairness": _FAIRNESS, **dict.fromkeys(_ONCE, _ONCE_KEY)}


class Section:
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


# A whole run in the layout sysbench 1.0 prints for cpu and memory (lines before the banner and after the report:
# WARNING lines, blank or upper-case titles, dashes), read in one regex match by _fill_common. _v(name) is a figure
# as _fill keeps it: the rest of its line after the key's colon, stripped (no space inside, none after it). The
# padding is of spaces only (`_S`, a literal: 3x faster to match than any whitespace); a tab goes to the line loop.
_S = " "


def _v(name: str) -> str:
    return rf"{_S}*+(?P<{name}>\S++)\n"


_TITLES = r"(?:WARNING: [^\n]*+\n|[A-Z -]*+\n)*+"
_COMMON = re.compile(
    rf"(?P<head>{_TITLES})(?P<banner>sysbench [^\n]*+)\n\nRunning the test with following options:\n"
    rf"Number of threads:{_v('threads')}"
    r"Initializing random number generator from (?:current time|seed \([0-9]++\))\n\n\n"
    rf"(?:Prime numbers limit:{_v('prime')}|Running memory speed test with the following options:\n"
    rf"{_S}*+block size:{_v('size')}{_S}*+total size:{_v('total')}{_S}*+operation:{_v('operation')}"
    rf"{_S}*+scope:{_v('scope')})"
    r"\nInitializing worker threads\.\.\.\n\nThreads started!\n\n++"
    rf"(?:CPU speed:\n{_S}*+events per second:{_v('speed')}"
    rf"|Total operations:{_S}*+(?P<ops>\S[^\n]*+(?<=\S))\n\n"
    r"(?:(?P<moved>[0-9.]++ MiB transferred \([^\n:)]*+\))\n\n)?+)"
    rf"\n*+General statistics:\n{_S}*+total time:{_v('seconds')}{_S}*+total number of events:{_v('events')}"
    rf"\nLatency \(ms\):\n{_S}*+min:{_v('min')}{_S}*+avg:{_v('avg')}{_S}*+max:{_v('max')}"
    rf"(?:{_S}*+(?P<percentile>[0-9]++(?:\.[0-9]++)?+th percentile):{_v('pvalue')})?+{_S}*+sum:{_v('sum')}"
    rf"\nThreads fairness:\n{_S}*+events \(avg/stddev\):{_v('fair_events')}"
    rf"{_S}*+execution time \(avg/stddev\):{_v('fair_time')}(?P<tail>{_TITLES})")


def _fill_common(text: str, kind: str | None) -> Section | None:
    """_fill for a run in the common layout (_COMMON, matched whole), None for any other run. Each line of
    the layout is one _fill reads the same way: what it stores is stored here, in the same order."""
    m = _COMMON.fullmatch(text)
    banner = _BANNER.match(m["banner"]) if m else None
    if m is None or banner is None:
        return None
    (head, _, threads, prime, size, total, operation, scope, speed, ops, moved, seconds, events, low, mean, high,
     percentile, at_percentile, total_latency, fair_events, fair_time, tail) = m.groups()
    current = Section(banner.group(1), banner.group(2))
    fields = current.fields
    if head:
        _warnings(head, fields)
    fields["Running the test with following options"] = ""
    fields["Number of threads"] = threads
    if prime is not None:
        fields["Prime numbers limit"] = prime
    else:
        fields.update({"Running memory speed test with the following options": "", "block size": size,
                       "total size": total, "operation": operation, "scope": scope})
    if speed is not None:
        fields["CPU speed"] = ""
        fields["events per second"] = speed
    else:
        fields["Total operations"] = ops
        if moved is not None:
            fields["transferred"] = moved
    fields.update({"General statistics": "", "total time": seconds, "total number of events": events,
                   "Threads fairness": "", "events (avg/stddev)": fair_events,
                   "execution time (avg/stddev)": fair_time})
    if tail:
        _warnings(tail, fields)
    if percentile is None:
        current.latency = {"min": low, "avg": mean, "max": high, "sum": total_latency}
    else:
        current.latency = {"min": low, "avg": mean, "max": high, percentile: at_percentile, "sum": total_latency}
    current.started, current.reports = True, 1
    current.kind = _kind(text) if kind is None else kind
    return current


def _warnings(lines: str, fields: dict[str, str]) -> None:
    """The `WARNING: ...` lines of _TITLES as _fill reads them (its other lines are no-ops to _fill)."""
    for line in lines.split("\n"):
        if line.startswith("WARNING:"):
            fields["WARNING"] = line[8:].strip()


def _fill(text: str, kind: str | None = None) -> Section:
    """Read one run (one banner) line by line; `kind` is `_kind(text)` when already known. A `key: value`
    line's key is looked up once in _SPECIAL (the few keys that do more than fill `fields`). A run in the
    common layout is read in one regex match (_fill_common: the same Section)."""
    common = _fill_common(text, kind)
    if common is not None:
        return common
    return _fill_lines(text, kind)


def _fill_lines(text: str, kind: str | None = None) -> Section:
    """_fill, line by line."""
    current = Section(None, None)
    fields, latency = current.fields, current.latency
    in_latency = False
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        if current.version is None and line.startswith("sysbench "):
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
            special = _SPECIAL.get(key)
            if special is None:
                if line[0] in _BAD_ARG_FIRST and line.startswith(_BAD_ARG):
                    current.bad_arg.append(line)
            elif special == _ONCE_KEY:
                if key in fields and not current.repeated:
                    current.repeated = key
            elif special == _LATENCY:
                in_latency = True
                current.reports += 1
                continue
            elif special == _FATAL:
                current.fatal.append(line)
            else:  # `Threads fairness:`, after the latency block
                in_latency = False
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
    """Which test a run is of, by its markers: each looked for only when its rarest character is in the run (base.guard:
    one memchr rules it out), then by `rfind(marker) >= 0`, `marker in text`, 2-3x faster here (see base.holds)."""
    if holds_any(text, _CPU_MARKS):
        return "cpu"
    # (0.4 prints `Operations performed:` too, no `Latency (ms)`; the regex alone, over every run of a log of fileio
    # or threads runs, cost 3 µs a run: its literal is looked for first)
    if holds_any(text, _MEMORY_MARKS) or text.rfind("Latency (ms):") >= 0 and holds_any(text, _PERFORMED_MARK) \
            and _PERFORMED.search(text):
        return "memory"  # (1.0.0 to 1.0.4 print neither line with --memory-oper=none, only `Operations performed:`)
    if holds_any(text, _FILEIO_MARKS):
        return "fileio"
    if text.rfind("SQL statistics:") >= 0:
        return "oltp"
    return "other"


_CPU_MARKS = guarded("Prime numbers limit:", "CPU speed:")
_MEMORY_MARKS = guarded("Running memory speed test", "MiB transferred (")
_PERFORMED_MARK = guarded("Operations performed: ")
_FILEIO_MARKS = guarded(*_FILEIO_MARKERS)


def refused_option(fatal: str) -> bool:
    """Whether a `FATAL: ...` line is sysbench refusing an option's value or the test's name (`Invalid value for
    memory-oper: foo`, `Cannot find benchmark 'foo'`, `Missing required argument: --file-test-mode`), not a
    failure of the run: the user fixes the parameters."""
    return _ARG_FATAL.match(fatal) is not None


def named(kind: str) -> str:
    """A run's kind in a sentence: threads and mutex reports name no test, so they are `other`."""
    return "a run of another test (threads, mutex or a script: its report names no test)" if kind == "other" \
        else f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} run"


def refuse_quiet(text: str) -> None:
    """Refuse a log without a run's banner or report that looks like a run silenced by --verbosity below 3: the
    option on its command line, or nothing but command lines and `sysbench --version`'s line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if _QUIET_OPTION.search(text) or all(_VERSION_LINE.fullmatch(line) or _COMMAND_LINE.fullmatch(line)
                                         for line in lines):
        raise ParseFailure("empty", f"{QUIET} (the log holds no sysbench banner and no report)")


def split_runs(text: str) -> list[tuple[str, str | None]]:
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


def banner_behind(text: str) -> str | None:
    """The first line whose `sysbench <version>` banner is behind other text (`CPU 0 sysbench 1.0.11 (using system
    LuaJIT ...)`: some text, blanks, the banner, then `(using` or a `(` reaching `LuaJIT` before a `)`), from the
    line's start to the end of that `using` or `LuaJIT` (the last such `(` on the line); None when no line has one.
    The regex `^[^\\n]*?\\S[ \\t]+sysbench [0-9]+\\.[0-9]+[^\\n]*\\((?:using|[^)]*LuaJIT)` finds the same, but
    in cubic time on a line of many banners and `(` (10 KiB took 0.3 s): here each line is looked at once."""
    m = _BEHIND.search(text)
    while m is not None:
        stop = text.find("\n", m.end())
        stop = len(text) if stop < 0 else stop
        end = _note_end(text, m.end(), stop)
        if end >= 0:
            return text[text.rfind("\n", 0, m.start()) + 1:end]
        m = _BEHIND.search(text, stop)  # a later banner on this line has no other `(` after it
    return None


def _note_end(text: str, lo: int, hi: int) -> int:
    """The end of the last `(using` or `(...LuaJIT` (no `)` in between) in text[lo:hi], -1 when there is none: each
    stretch between two `)` is looked at once, from the last."""
    close = hi
    while close >= lo:
        cut = text.rfind(")", lo, close)
        start = lo if cut < 0 else cut + 1
        using = text.rfind("(using", start, close)
        luajit = text.rfind("LuaJIT", start, close)
        opened = text.rfind("(", start, luajit) if luajit >= 0 else -1
        if using >= 0 and using >= opened:
            return using + 6
        if opened >= 0:
            return luajit + 6
        if cut < 0:
            return -1
        close = cut
    return -1


def _usage_only(run: str) -> bool:
    if run.find("Threads started!") >= 0:
        return False
    find = run[:400].rfind  # sysbench refuses its arguments right after its banner
    return any(find(word) >= 0 for word in _USAGE_WORDS)


def _refusal(run: str) -> str:
    """The line of a usage run that says what sysbench refused."""
    return next((line.strip() for line in run.split("\n") if any(word in line for word in _USAGE_WORDS)),
                "a command sysbench refused")


def select_run(runs: list[tuple[str, str | None]], text: str, wanted: str | None) -> tuple[Section, list[str]]:
    old = sorted(v for _, v in runs if v and v.startswith("0."))
    if old:
        raise _legacy_failure(old[0])
    ignored: list[str] = []
    if len(runs) > 1:  # a usage error (`sysbench memory` without `run`) is not a run beside the others
        only = [_usage_only(run) for run, _ in runs]  # (one pass: `run not in usage` was quadratic in the runs)
        usage = [run for run, refused in zip(runs, only, strict=True) if refused]
        ran = [run for run, refused in zip(runs, only, strict=True) if not refused]
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
        if section.version is None and section.fatal:  # `FATAL: Invalid value for --threads: 0.`, no banner
            if refused_option(section.fatal[0]):
                raise ParseFailure("bad-argument", f"sysbench rejected its arguments: {section.fatal[0]}")
            raise ParseFailure("fatal", f"sysbench stopped with: {section.fatal[0]}")
        if section.version is None:
            if section.kind not in ("cpu", "memory") and any(m in text for m in _LEGACY):
                raise _legacy_failure(None)
            behind = banner_behind(text)
            if behind is not None:  # `CPU 0 sysbench 1.0.11 (using system LuaJIT ...)`: a harness prefix on each line
                raise ParseFailure("unknown-format", f"the `sysbench <version>` banner is behind other text on its "
                                                     f"line (`{behind[:60]}`): strip what precedes sysbench's "
                                                     "own lines")
            refuse_quiet(text)
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
