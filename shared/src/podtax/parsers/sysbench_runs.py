"""Reading a sysbench log into its runs (for podtax.parsers.sysbench, which turns the chosen run into figures).

A log is split at each `sysbench <version>` banner; each run is read line by line into a
:class:`Section` (its banner, `key: value` lines, latency block, FATAL and refused-argument lines),
and :func:`select_run` picks the run to parse: the one matching the test, or the only cpu or memory
run. Legacy 0.4.x logs, logs without a banner, several matching runs and logs holding no report are
refused with a ParseFailure that says why.
"""

from __future__ import annotations

import re

from podtax.parsers.base import ParseFailure, errors_flag

TOOL = "sysbench"
_BEHIND = re.compile(r"^[^\n]*?\S[ \t]+sysbench [0-9]+\.[0-9]+[^\n]*\((?:using|[^)]*LuaJIT)", re.M)
_BANNER = re.compile(r"sysbench (\d+\.\d+[0-9A-Za-z.+~-]*)(?:\s*\(([^()]*)\)|:)?")
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
# lines a report prints once: a second one is another report whose banner was lost (or a 0.4 summary)
_ONCE = frozenset(("total time", "total number of events", "events per second", "time elapsed"))
_ONCE_KEY, _LATENCY, _FATAL, _FAIRNESS = range(4)
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


def _fill(text: str, kind: str | None = None) -> Section:
    """Read one run (one banner) line by line; `kind` is `_kind(text)` when already known. A `key: value`
    line's key is looked up once in _SPECIAL (the few keys that do more than fill `fields`)."""
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


def named(kind: str) -> str:
    """A run's kind in a sentence: threads and mutex reports name no test, so they are `other`."""
    return "a run of another test (threads, mutex or a script: its report names no test)" if kind == "other" \
        else f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} run"


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
