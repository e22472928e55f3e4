"""stress-ng `--metrics-brief` / `--metrics` tables (0.07 .. 0.21) and the `--yaml` report.

The table is found by its header (`stressor  bogo ops real time ...`) whatever the prefix
(`info:` up to 0.15.04, `metrc:` from 0.15.05), the stream (the caller joins stdout and stderr)
or its place relative to "successful run completed"; a `--log-brief` log (no prefix at all) is read
as if each line had one, a `--timestamp` log as if it had none, and a log whose lines carry a log
collector's prefix (journalctl, the kernel log) as if they had none. Rows are split on whitespace, so stressor
names wider than their column are fine, and so are `--sn` rows (figures in scientific notation, `3.217e-01`).
`--metrics` adds two columns (CPU used per instance,
RSS max) that are read when present. A run whose figure is 0 bogo ops is refused, other idle rows
give no figure of their row (their miscellaneous metrics, real measurements, are read) and are flagged NO_WORK,
a dispatched stressor with no row MISSING (stressng_checks.py), and instances
stress-ng skipped (`skipped: 1: cpu (1)`; 0.15.06 counts none: a skip message of a stressor whose row counts
bogo ops) SKIPPED; passed, failed and skipped counts that fall short
of the dispatched instances are flagged PARTIAL. A stressor skipped whole (not supported here, or out of resources:
`apparmor stressor will be skipped, ...`, `..., skipping stressor`; stressng_skips.py) gives no figure: its row of
zeros is left out, SKIPPED says what stress-ng said; a run
whose every stressor was skipped fails (`fatal`). A run whose counters stress-ng's own metrics-check found
corrupted (an instance killed mid-run: `data is compromised`) is refused (`fatal`). A verbose log's
`stress-ng 0.19.02` debug line gives the version.

Naming: the PRIMARY row's metrics are unprefixed (`bogo_ops_per_second_real`...). The primary row
is the `cpu` row for the stress-ng-cpu test (flagged PARAM_MISMATCH when others ran at once: beside_flag),
else the only row of a run of one stressor: one dispatched, none skipped, one row printed. A stressor skipped
whole makes the run one of several, so the same command names its
figures alike on every node, whether the stressor ran there or was skipped (`--cpu 1 --ramfs 1` as root and as a
user without CAP_SYS_ADMIN: `cpu_bogo_ops`... on both). Known limit: the --yaml report of a run with a skipped
stressor names them otherwise (unprefixed where it holds the one row): it tells no skip and no dispatch, so it
cannot know. Every other row is prefixed with
its stressor name (`af_alg_bogo_ops`...). "miscellaneous metrics" lines become metrics named after
their description (`write64stoq_mb_per_sec`, unit `MB/s`), prefixed the same way, and named alike from
a `--yaml` report's keys (stressng_names.misc_metric); a rate (`per sec`,
`per second`, `MB/sec`, `(MB per sec)`) is higher-is-better, anything else lower-is-better
(stressng_names.misc_unit). A rate or time printed as 0 because stress-ng timed nothing (`0.00 MB/sec read rate`
of an hdd run that did not read) is no figure and left out; any other 0 is kept (stressng_untimed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any

from podtax.parsers.base import (
    Echoed,
    MetricList,
    Parsed,
    ParseFailure,
    errors_flag,
    is_number,
)
from podtax.parsers.stressng_checks import (
    Row,
    beside_flag,
    instances_of,
    measured,
    missing_rows,
    no_rows_failure,
    no_work_flag,
    not_run,
    refuse_corrupted,
    refuse_damaged_rows,
    refuse_no_work,
    refuse_repeated_rows,
    repeated_misc,
    run_flags,
    unaccounted,
)
from podtax.parsers.stressng_forms import RESERVED_WORDS, behind, plain, plain_lines, split_line
from podtax.parsers.stressng_names import misc_metric, slug
from podtax.parsers.stressng_skips import failure_detail, partial_flag, skipped
from podtax.parsers.stressng_skips import flag as skipped_flag
from podtax.parsers.stressng_state import HANDLERS, Scan
from podtax.parsers.stressng_untimed import untimed
from podtax.parsers.stressng_yaml import MIXED, named_columns, parse_yaml

TOOL = "stress-ng"
# stress-ng's own range messages, each before it runs anything (core-affinity.c, core-numa.c, core-resctrl.c): `taskset:
# invalid range in '3-1' (...)`, `option --mbind: invalid range, 9 is not allowed, ...`, `--memfd-numa: ...`; not any
# line holding the words (a kernel's `pci 0000:00:1f.4: invalid range 0x0-0xff`)
_INVALID_RANGE = re.compile(r"(?:taskset|option --mbind|--[a-z0-9-]+|resctrl: [^\s:]+): invalid range"
                            r"(?:, -?\d| in '| \d)")
_BAD_ARG = ("unrecognized option", "invalid option", "Try 'stress-ng --help'", "unknown option",
            "must be one of", "option requires an argument", "invalid value", "Illegal time specifier",
            "No stress workers invoked", "Unknown stressor: ", "Unknown class: ", "Invalid number",
            "Invalid percentage", "aborting: temp-path ", "Invalid sched option: ", "Priority levels range from ",
            "Unknown priority class: ")  # from `Unknown stressor`: without a `stress-ng:` prefix


def _scan(text: str) -> Scan:
    """Read the log line by line (see _line). In one under 8 KiB that starts in the common form, the lines
    in that form are read in one regex pass (stressng_forms.plain_lines: same result) and _line reads the
    others. In a longer log, the lines that cannot change anything outside a table (per-instance chatter
    such as `stream: memory rate: ...`) are passed over by _NEXT, and table rows in the common form are read
    by _ROW and _MISC, in C; a short log in another form is cheapest read plainly (same result)."""
    s = Scan()
    cut = text.rfind("\n")
    if 0 < cut < 8192 and text.startswith(_PID_PREFIXES):
        _last(s, text[cut + 1:], plain_lines(s, text, cut, HANDLERS, _line))
        return s
    state = 0  # 0 outside, 1 in table, 2 in misc metrics
    if len(text) < 2048:
        *lines, last = text.split("\n")
        for raw in lines:
            state = _line(s, raw, state)
        _last(s, last, state)
        return s
    pos = 0
    while True:
        end = text.find("\n", pos)
        if end < 0:
            _last(s, text[pos:], state)
            return s
        state = _line(s, text[pos:end], state)
        if state:
            pos = end + 1
            if state == 1:
                m = _ROW.match(text, pos)
                while m is not None:  # table rows in the common form, read in C
                    s.rows.append((m.group(1), list(map(float, m.group(2).split()))))
                    pos = m.end()
                    m = _ROW.match(text, pos)
            else:
                m = _MISC.match(text, pos)
                while m is not None:  # miscellaneous metrics in the common form, read in C
                    s.misc.append((m.group(1), float(m.group(2)), m.group(3)))
                    pos = m.end()
                    m = _MISC.match(text, pos)
            continue
        m = _NEXT.search(text, end)
        if m is None:  # only no-op `stress-ng: info:` lines remain
            s.seen = True
            return s
        if m.start() > end:  # no-op `stress-ng: info:` lines were passed over
            s.seen = True
        pos = m.start() + 1


def _last(s: Scan, line: str, state: int) -> None:
    """The log's last line, with no newline after it (a harness stripped it, or the log was cut: `1770.62`
    -> `177`). It is a table row only when whole beyond doubt: in the printed form (_ROW: its times and
    rates with their 2 decimals) and ending in one of those, not in an RSS Max that a cut would not show."""
    if not line:  # the log ends with a newline: _line does nothing with an empty line
        return
    whole = state == 1 and s.columns < 8 and _WHOLE.match(line + "\n") is not None
    _line(s, line, 1 if whole else 0)


# The start of the next line (at its "\n") that can change the scan in state 0: every line except
# `stress-ng: info:  [1234] <msg>` (or metrc:) whose msg starts with none of the words _line acts on
# (header, misc metrics, HANDLERS keys: a verbose log's `stress-ng 0.19.02` too); such a line only sets `seen`.
# The [0-9] run and the prefix make it a subset of the lines _line splits inline (so those lines are no-ops there too).
_NEXT = re.compile(rf"\n(?!stress-ng: (?:info:  |metrc: )\[[0-9]{{1,20}}\](?![^\S\n]*+(?:{RESERVED_WORDS}|stress-ng)))")


# A table row as _line reads it in state 1 (name, then 6 to 8 numbers; float() takes each one), in its
# printed form (bogo ops, 5 or 6 figures with 2 decimals, RSS Max; _line checks the other forms):
# `stress-ng: metrc: [7111] cpu    3000   1.69   1.69   0.00   1770.62   1770.72\n`. A name starting
# with "(" is the units line, skipped by _line; any other line also goes to _line.
_ROW = re.compile(r"stress-ng: (?:info:  |metrc: )\[[0-9]{1,20}\][^\S\n]*+([^\s(]\S*+)([^\S\n]++[0-9]++"
                  r"(?:[^\S\n]++[0-9]++\.[0-9]{2}){5}+(?:[^\S\n]++[0-9]++\.[0-9]{2}(?:[^\S\n]++[0-9]++)?+)?+)[^\S\n]*+\n")
# The last line (see _last): the same, and 5 such figures then a whole number (`... 1770.72 9`: a --metrics row cut
# after its 7th figure's first digit), which _line refuses as cut rather than leave out
_WHOLE = re.compile(r"stress-ng: (?:info:  |metrc: )\[[0-9]{1,20}\][^\S\n]*+([^\s(]\S*+)"
                    r"([^\S\n]++[0-9]++(?:[^\S\n]++[0-9]++\.[0-9]{2}){5,6}+(?:[^\S\n]++[0-9]++)?+)[^\S\n]*+\n")

# A miscellaneous metric as _line reads it in state 2 (name, number, description), except a name
# starting with "(" or "stressor" (_line looks at those first):
# `stress-ng: metrc: [61993] memrate   701.77 write64 MB per sec (geometric mean of 128 instances)\n`
# A description that starts as a number does (`-`, `+`, `.` or a digit: float() reads no other finite number) is
# left to _line: it may be a table row's figures, printed or --sn (`9.392e-02 2.371e-02 ...`), that _line reads there
# as a row (_row_shaped).
_MISC = re.compile(r"stress-ng: (?:info:  |metrc: )\[[0-9]{1,20}\][^\S\n]*+(?!stressor|note:)([^\s(]\S*+)"
                   r"[^\S\n]++([0-9]++(?:\.[0-9]++)?+)[^\S\n]++(?![-+.\d])(\S[^\n]*+(?<=\S))\n")


_SN = re.compile(r"[0-9]\.[0-9]{3,5}e[+-][0-9]{2,3}")  # a --sn figure as a row prints it (`%9.3e`, `%12.5e`, `%15.4e`)


def _row_shaped(msg: str) -> bool:
    """`matrix  2642  1.01 ...`: a name and 6 to 8 figures, a table row (no misc metric's description is figures)."""
    parts = msg.split()
    return 7 <= len(parts) <= 9 and all(is_number(p) for p in parts[1:])


def _line(s: Scan, raw: str, state: int) -> int:
    """One line of the log; returns the new state."""
    # The common prefixes are split inline (same result as split_line, 3x cheaper per line).
    close = raw.find("]", 19, 40) if raw.startswith(_PID_PREFIXES) else -1
    if close > 19 and raw[19:close].isdigit():
        level, msg = _LEVELS[raw[11]], raw[close + 1:].strip()
    else:
        m = split_line(raw)
        if m is None:
            # behind a log collector's prefix (journalctl `Jul 28 16:19:31 host stress-ng[1310]: `, the kernel
            # log `user  :notice: [  109.92] `), a shell prompt or another line's text: read from `stress-ng: `
            at = behind(raw)
            if at:
                return _line(s, raw[at:], state)
            line = raw.strip()
            if line.startswith(_BAD_ARG) or "must be one of" in line or " is out of range for " in line \
                    or _INVALID_RANGE.match(line):  # `taskset: invalid range, 5 is not allowed, allowed range: 0 to 1`
                s.bad_arg.append(line)
                s.seen = True
            elif line.startswith("stress-ng: ") and ("unrecognized" in line or "invalid" in line) \
                    and not _HAS_PID.search(line):  # a stressor's message (`[1340] clock: ... invalid`)
                s.bad_arg.append(line)
            elif line == "metrics:":
                s.yaml = True
            return state
        level, msg = m
    s.seen = True
    if not state:
        # Outside a table, a line whose first word starts nothing (`stream: memory rate: ...`,
        # `4.00s available CPU time`) is skipped at once: it is no header, no misc start and no
        # HANDLERS key, so the rest of this function would do nothing with it either. A HANDLERS
        # line (`dispatching`, `passed:`...) goes on to the one dispatch at the end.
        space = msg.find(" ")
        word = msg[:space] if space >= 0 else msg
        if word not in HANDLERS and level != "error" and level != "fail" and not word.startswith("stressor") \
                and msg != "miscellaneous metrics:":
            if level == "warn" and msg.find("finished prematurely") >= 0:  # `bigheap: WARNING: finished ...`
                s.premature.append(msg)
            return state
    elif msg.startswith("("):
        return state  # the units line under the header
    if msg.startswith("stressor") and "bogo ops" in msg:
        s.header, state = s.header + 1, 1
        s.columns = 6 + ("CPU used per" in msg) + ("RSS Max" in msg)
        return state
    if state == 1 or (state == 2 and msg.count(".") >= 5 and _row_shaped(msg)):  # a row among misc metrics
        parts = msg.split()
        if len(parts) >= 7:
            try:
                s.rows.append((parts[0], list(map(float, parts[1:9]))))
            except ValueError:
                pass
            else:  # stress-ng prints times, rates and CPU % with 2 decimals: one without was cut (`167.67` -> `167`)
                if not s.cut:  # or, with --sn, every figure in scientific notation (`3.336e-01`): the row's
                    sn = _SN.fullmatch(parts[2]) is not None  # first says which, and a cut `8.43526e+03` is `8.43`
                    for odd in parts[2:8]:
                        if _SN.fullmatch(odd) is None if sn else len(odd) < 4 or odd[-3] != ".":
                            s.cut = f"the stress-ng {parts[0]} row's `{odd}` lacks the 2 decimals stress-ng prints"
                            break
                return state
        if len(parts) >= 3 and is_number(parts[1]) and any(r[0] == parts[0] for r in s.rows):
            # up to 0.13, a stressor's own metric followed its row, with no `miscellaneous metrics:`:
            # `vdso   9.88 nanoseconds per call (average per stressor)`
            s.misc.append((parts[0], float(parts[1]), msg.split(None, 2)[2]))
            return state
        state = 0
    if msg == "miscellaneous metrics:":
        state = 2
        return state
    if state == 2:
        if msg.startswith("note: "):  # `note: 97 metrics were set, only reporting first 96 metrics` (0.17 to 0.19),
            return state  # `note: only reporting first 96 metrics` (0.20 on): a stressor's metrics follow, no metric
        parts = msg.split(None, 2)
        value = _float(parts[1]) if len(parts) == 3 else None
        if value is not None:
            if value - value == 0.0:  # a metric printed as nan or inf is no figure: left out
                s.misc.append((parts[0], value, parts[2]))
            return state
        state = 0
    if level == "error" or level == "fail":
        s.errors.append(msg)
        if "must be one of" in msg or msg.startswith(_BAD_ARG):
            s.bad_arg.append(msg)
        return state
    space = msg.find(" ")
    handler = HANDLERS.get(msg[:space] if space >= 0 else msg)
    if handler is not None:
        handler(s, msg)
    return state


_HAS_PID = re.compile(r": +\[[0-9]+\] ")
# `stress-ng: info:  [1234] msg` and `stress-ng: metrc: [1234] msg`: both prefixes are 19 characters.
_PID_PREFIXES = ("stress-ng: info:  [", "stress-ng: metrc: [")
_LEVELS = {"i": "info", "m": "metrc"}


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def parse(text: str, test: str | None = None, requested: Mapping[str, Any] | None = None,
          recorded_version: str | None = None) -> Parsed:
    yaml = text[:200].lstrip().startswith("---")
    if yaml and "metrics:" not in text and "stress-ng-version:" in text[:2000] and text.rfind("\n...") >= 0:
        raise ParseFailure("unknown-format", "this stress-ng --yaml report has no `metrics:` section: stress-ng writes "
                                             "one only with --metrics-brief (or --metrics) and without --quiet; rerun "
                                             "with --metrics-brief")
    if yaml and "metrics:" in text:
        parsed = parse_yaml(text, test, requested, _primary, _flags_yaml)
        after = _scan(text[text.rfind("\n...") + 4:])  # another run's failure appended after the report
        said = after.bad_arg or after.errors
        return replace(parsed, flags=(*parsed.flags, errors_flag(TOOL, said[0]))) if said else parsed
    s = _scan(text)
    if not s.seen:
        unfolded = plain(text)
        if unfolded is not None:
            s = _scan(unfolded)
    refuse_repeated_rows(s.rows)
    refuse_damaged_rows(s.rows, s.columns, s.cut)
    runs = max(s.dispatches, s.header, s.completions)
    if runs > 1 and s.rows:  # runs appended to one log: one run's rows must not pass for the other's
        raise ParseFailure("unknown-format", f"this log holds {runs} stress-ng runs ({s.dispatches} `dispatching "
                                             f"hogs` lines, {s.header} metrics tables, {s.completions} `successful "
                                             "run completed` lines); split it, one run per log")
    printed = len(s.rows)  # the rows of the table as printed (a skipped stressor's too)
    skips, partial = _gone(s, text)
    if not s.rows and (refused := not_run(text, s.bad_arg)) is not None:  # a setting stress-ng could not apply
        raise refused
    if s.bad_arg and not (skips and s.bad_arg[0].startswith("No stress workers invoked")) \
            and not (s.rows and all(_INVALID_RANGE.match(said) for said in s.bad_arg)):  # the run went on: not its own
        raise ParseFailure("bad-argument", "stress-ng rejected its arguments: " + s.bad_arg[0][:2000])
    if not s.rows:
        failure = no_rows_failure(s)  # stress-ng's own count of skips (0.15.07 on) says it first
        skipped_only = failure.detail.startswith("stress-ng skipped its stressor")
        raise ParseFailure("fatal", failure_detail(skips)) if skips and not skipped_only else failure
    if s.errors:
        refuse_corrupted(s.errors)
    primary = _primary(s.rows, test, "," in s.hogs or bool(skips) or printed > 1)  # skipped: as where it ran
    idle = refuse_no_work(s.rows, primary)
    metrics = MetricList()
    for name, values in s.rows:
        if name not in idle:  # an idle row gives no bogo-op figure (NO_WORK); its miscellaneous metrics are read
            metrics.add_columns(named_columns("") if name == primary else _columns(name), measured(values))
    names = metrics.names
    for name, value, desc in s.misc:
        suffix, unit, better = misc_metric(desc)
        key = suffix if name == primary else slug(name) + "_" + suffix
        if key in names:  # printed once per run: another run's (or another PID's) misc line
            raise repeated_misc(name, desc)
        if not untimed(value, name, desc):  # a rate or time of 0: stress-ng timed nothing
            metrics.add(key, value, unit, better)
    echoed: Echoed = {"stressor": primary} if primary else {"stressors": ",".join(r[0] for r in s.rows)}
    threads = instances_of(s.hogs, primary)
    if threads is not None:
        echoed["threads"] = threads
    if s.timeout is not None:
        echoed["timeout"] = s.timeout
    flags = run_flags(s, requested, echoed, dict(s.rows).get(primary) if primary else None)
    flags += [no_work_flag(name) for name in idle] + unaccounted(s.hogs, s.passed, s.failed, s.skipped)
    missing = [name for name in missing_rows(s.hogs, s.rows) if name not in skips]
    if skips:  # named, with what stress-ng said: the count of `skipped: N` is no news unless some ran
        flags = [f for f in flags if partial or not f.startswith("SKIPPED: ")] + [skipped_flag(skips)]
    if partial and not s.skipped:  # 0.15.06 counts no skipped instance: name the stressors they were of
        flags.append(partial_flag(partial))
    if missing:
        flags.append(f"MISSING: stress-ng dispatched {', '.join(missing)} but printed no metrics row for "
                     f"{'it' if len(missing) == 1 else 'them'} (skipped, failed to start or killed?)")
    if primary and test == "stress-ng-cpu":
        flags += beside_flag(s.rows, primary, s.took)
    if s.yaml:  # a YAML report too (see above)
        flags.append(MIXED + "the metrics table")
    return Parsed(TOOL, s.version, None, metrics.as_tuple(), echoed, tuple(flags))


def _gone(s: Scan, text: str) -> tuple[dict[str, str], dict[str, str]]:
    """The stressors stress-ng skipped whole (stressng_skips), and those skipped in some instances only: the rows
    of the first (all zeros, --metrics) are taken out of `s.rows`, so that no 0 passes for a figure measured; the
    row of the others counts their other instances' bogo ops and stays (flagged by the count, or by name)."""
    skips = skipped(text)  # {} at the cost of looking for `skipp` and `aborted early` once each
    if not skips:
        return {}, {}
    worked = {name for name, values in s.rows if values and values[0] > 0}
    gone = {name: why for name, why in skips.items() if name not in worked}
    s.rows = [row for row in s.rows if row[0] not in gone]
    return gone, {name: why for name, why in skips.items() if name in worked}


@lru_cache(maxsize=4096)
def _columns(stressor: str) -> tuple[tuple[str, str, bool], ...]:
    """The metric columns of a stressor's row other than the primary one (`af-alg` -> `af_alg_bogo_ops`...)."""
    return named_columns(slug(stressor) + "_")


def _primary(rows: list[Row], test: str | None, several: bool = False) -> str | None:
    """`several`: the run is of several stressors (dispatched, skipped or printed), so a lone row is not the run's."""
    names = [r[0] for r in rows]
    if test == "stress-ng-cpu":
        if "cpu" not in names:
            raise ParseFailure("wrong-tool", f"expected a stress-ng cpu stressor row, found {', '.join(names)}")
        return "cpu"
    return names[0] if len(names) == 1 and not several else None


def _flags_yaml(requested: Mapping[str, Any] | None, echoed: Echoed, row: list[float] | None) -> list[str]:
    return run_flags(Scan(), requested, echoed, row)
