"""Checks of a stress-ng metrics table's rows that refuse or flag a run (pure functions).

A row is (stressor name, [bogo ops, real time s, usr time s, sys time s, bogo ops/s real,
bogo ops/s usr+sys, (CPU used per instance %, RSS max KB)]) as stressng.py reads it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from podtax.parsers.base import Echoed, ParseFailure, compare_echoed, int_or_float, parse_int, requested_int

Row = tuple[str, list[float]]
_USR_SYS, _RSS = 5, 7  # a row's bogo ops/s (usr+sys time) and RSS max
_MIN_RSS_KB = 256  # no process maps less (stress-ng itself maps over 1 MB)


def measured(values: list[float]) -> Sequence[float | None]:
    """A row's values, None for those stress-ng could not measure (left out by MetricList.add_columns):
    an RSS Max of 0 (no getrusage ru_maxrss, or versions before 0.14 in some builds), where 0 KB would
    read as a perfect score, and the usr+sys rate when no CPU time was charged to the stressor (usr and
    sys 0.00: stress-ng then prints a rate of 0.00, which would read as the slowest run ever)."""
    rss = len(values) > _RSS and values[_RSS] == 0
    idle = len(values) > _USR_SYS and values[_USR_SYS] == 0 and values[2] + values[3] == 0
    if not rss and not idle:  # the common row: every value measured
        return values
    row: list[float | None] = list(values)
    if rss:
        row[_RSS] = None
    if idle:
        row[_USR_SYS] = None
    return row


def refuse_damaged_rows(rows: list[Row], columns: int, cut: str = "") -> None:
    """A table row cut inside a figure and then given a newline (`1581.53` -> `15`, by whatever stored
    the log) reads as a whole row. It is refused when `cut` says a figure lacks the 2 decimals
    stress-ng prints its times, rates and CPU % with (see stressng._line; every real row seen has
    them), or when it has fewer figures than its header has columns (`columns`: 6, 7 with `CPU used
    per`, 8 with `RSS Max`), or when its RSS Max, the last figure, is below what any process maps
    (`_MIN_RSS_KB`; the smallest seen is 1,200 KB on a 32-bit ARM board): `2512` cut to `2`."""
    if cut:
        raise ParseFailure("unknown-format", f"{cut}: the row was cut inside a figure")
    for name, values in rows:
        if len(values) < columns:
            raise ParseFailure("unknown-format", f"the stress-ng {name} row has {len(values)} figures under a "
                                                 f"header of {columns} columns: the row was cut")
        if len(values) > _RSS and 0 < values[_RSS] < _MIN_RSS_KB:
            raise ParseFailure("unknown-format", f"the stress-ng {name} row's RSS Max, {values[_RSS]:g} KB, is below "
                                                 "what any process maps: the row was cut inside it")


def refuse_repeated_rows(rows: list[Row]) -> None:
    """A stressor reports one row per run: a second row of the same name means several runs were
    appended to one log, whose figures must not be mixed (one run's bogo ops, another's threads)."""
    seen: set[str] = set()
    for name, _ in rows:
        if name in seen:
            times = sum(1 for r in rows if r[0] == name)
            raise ParseFailure("unknown-format", f"this log holds several stress-ng runs (the {name} stressor "
                                                 f"reported {times} times); split it, one run per log")
        seen.add(name)


def repeated_misc(name: str, desc: str) -> ParseFailure:
    """A stressor prints each miscellaneous metric once per run: a second one (another run's misc lines
    before this run's, a log of another PID pasted in) would give the first one's figure."""
    return ParseFailure("unknown-format", f"this log holds several stress-ng runs (the {name} stressor's "
                                          f"`{desc[:80]}` printed twice); split it, one run per log")


def refuse_no_work(rows: list[Row], primary: str | None) -> list[str]:
    """The stressors that completed no bogo op. Refused when that is the run's figure (the primary
    row, or every row): a rate of 0 would pass for the slowest result ever measured, while the
    stressor could not run here (stress-ng warns `all bogo-op counters are zero, data may be
    incorrect`) or the run was too short for one bogo op. Other rows give no figure and are flagged (NO_WORK)."""
    idle = [name for name, values in rows if values[0] == 0]
    if idle and (primary in idle or len(idle) == len(rows)):
        name = primary or idle[0]
        seconds = dict(rows)[name][1]
        raise ParseFailure("fatal", f"stress-ng's {name} stressor completed 0 bogo ops in {int_or_float(seconds)} s: "
                                    "it could not work here (see stress-ng's warnings; try it alone with -v) or "
                                    "the run was too short for one bogo op (raise --timeout)")
    return idle


# stress-ng's check of its own counters (`metrics-check`, 0.15 and later): an instance died mid-run
_CORRUPT = ("corrupted bogo-ops counter", "hash error in bogo-ops counter", "stressor metrics corrupted")


def refuse_corrupted(errors: list[str]) -> None:
    """stress-ng found its own metrics corrupted (`metrics-check: stressor metrics corrupted, data is compromised`,
    after `cpu instance 0 corrupted bogo-ops counter, 1338 vs 0`): an instance was killed mid-run (SIGKILL, the
    OOM killer), and the row still printed sums its counters with a real time averaged over it (a rate twice the
    survivor's, or 0.00 s and a rate of 0). Refused: stress-ng itself says the figures are not the run's."""
    bad = [e for e in errors if any(word in e for word in _CORRUPT)]
    if bad:
        raise ParseFailure("fatal", f"stress-ng found its own metrics corrupted (`{bad[0][:200]}`"
                                    f"{f' and {len(bad) - 1} more such line(s)' if len(bad) > 1 else ''}): an "
                                    "instance died mid-run (killed: SIGKILL, the OOM killer?), so its row is not "
                                    "the run's figure")


def missing_rows(hogs: str, rows: list[Row]) -> list[str]:
    """The stressors of `dispatching hogs: 4 cpu, 2 vm` that have no row in the metrics table."""
    names = {r[0] for r in rows}
    return [words[1] for words in _hog_counts(hogs) if words[1] not in names]


def instances_of(hogs: str, stressor: str | None) -> int | None:
    """The instances `dispatching hogs: 16 af-alg, ..., 16 cpu, ...` started of `stressor` (None: not listed). Read
    whatever else ran: a --sequential class run's cpu row is of its 16 instances, not of the one requested."""
    counts = [parse_int(words[0]) for words in _hog_counts(hogs) if words[1] == stressor] if stressor else []
    return counts[0] if len(counts) == 1 else None


def _hog_counts(hogs: str) -> list[list[str]]:
    """`4 cpu, 2 vm` -> [["4", "cpu"], ["2", "vm"]]: the parts of two words (each part split once)."""
    return [words for words in map(str.split, hogs.split(",")) if len(words) == 2]


def unaccounted(hogs: str, passed: int | None, failed: int, skipped: int) -> list[str]:
    """A flag when stress-ng's `passed:`/`failed:`/`skipped:` counts (0.15 and later) account for fewer
    instances than `dispatching hogs: 512 ioport` started: the figures come from the ones that passed."""
    if passed is None:  # before 0.15, or not printed: nothing to check (and no need to read `hogs`)
        return []
    dispatched = sum(int(c) for c, _ in _hog_counts(hogs) if c.isdecimal() and len(c) < 10)
    if not dispatched or passed + failed + skipped >= dispatched:
        return []
    return [f"PARTIAL: stress-ng dispatched {dispatched} stressor instance(s) but reports {passed} passed, {failed} "
            f"failed and {skipped} skipped: the figures come from the {passed} that passed"]


def no_work_flag(name: str) -> str:
    return f"NO_WORK: stress-ng's {name} stressor completed 0 bogo ops; its bogo-op figures are not read"


# what stress-ng says, before it starts any stressor, of a setting it could not apply (it then exits 1, no table):
# its core-sched.c (0.13 on) and its removal of a pathological stressor not enabled (stress-ng.c)
_SCHED_DENIED, _SCHED_RANGE = "sched: cannot set scheduler", "sched: scheduler priority level must be set between"
# core-io-priority.c, --ionice-class/--ionice-level, exit 1: `Cannot set I/O priority: errno=` up to 0.18, `Cannot
# set I/O priority, errno=` 0.19 and 0.20, `cannot ...` 0.21, then a pr_err (`stress-ng: error: [pid] cannot ...`)
_IOPRIO_DENIED = "cannot set I/O priority"
_IOPRIO = re.compile(r"cannot set I/O priority[:,]\s*errno=(\d+)", re.IGNORECASE)
_DENIED_ERRNO = frozenset(("1", "13"))  # EPERM, EACCES
_PATHOLOGICAL = "as it may hang or reboot the machine"


def not_run(text: str, bad_arg: Sequence[str]) -> ParseFailure | None:
    """Why a log with no metrics table ran nothing, when stress-ng said so at its start: `sched: cannot set scheduler
    'fifo': errno=1 (Operation not permitted)` (--sched fifo, rr or deadline without root), `sched: scheduler priority
    level must be set between 1 and 99` (--sched-prio), `disabled 'bind-mount' as it may hang or reboot the machine
    (enable it with the --pathological option)` when it is followed by `No stress workers invoked`, `Cannot set I/O
    priority: errno=1 (Operation not permitted)` or, from 0.19, `..., errno=1` (--ionice-class realtime without
    CAP_SYS_NICE: a pod's default; errno 1 or 13 is permission-denied).
    Read only for a log that has no rows (stress-ng's children set the scheduler quietly), and not when a message of
    the log's own (`bad_arg`: `Unknown stressor: 'fma'`) says why."""
    workers = bool(bad_arg) and bad_arg[0].startswith("No stress workers invoked")
    if bad_arg and not workers:
        return None
    for mark in (_SCHED_DENIED, _SCHED_RANGE, _PATHOLOGICAL) if workers else (_SCHED_DENIED, _SCHED_RANGE,
                                                                              _IOPRIO_DENIED):
        ioprio = _IOPRIO.search(text) if mark == _IOPRIO_DENIED else None
        at = (ioprio.start() if ioprio else -1) if mark == _IOPRIO_DENIED else text.find(mark)
        if at < 0:
            continue
        start = text.rfind("] ", 0, at) + 2 if mark == _PATHOLOGICAL else at
        end = text.find("\n", at)
        said = text[max(start, text.rfind("\n", 0, at) + 1):end if end >= 0 else len(text)].strip()[:300]
        if mark == _SCHED_DENIED:
            denied = "errno=1 " in said or "Operation not permitted" in said
            return ParseFailure("permission-denied" if denied else "fatal",
                                f"stress-ng could not set the scheduler it was asked for (`{said}`) and ran nothing"
                                + (": --sched fifo, rr or deadline needs root (CAP_SYS_NICE)" if denied else ""))
        if ioprio:
            denied = ioprio.group(1) in _DENIED_ERRNO
            return ParseFailure("permission-denied" if denied else "fatal",
                                f"stress-ng could not set the I/O priority it was asked for (`{said}`) and ran nothing"
                                + (": --ionice-class realtime needs CAP_SYS_NICE (or CAP_SYS_ADMIN); add it to the "
                                   "pod's securityContext capabilities, or leave the option out" if denied else ""))
        return ParseFailure("bad-argument", f"stress-ng rejected its arguments and ran nothing: `{said}`")
    return None


def no_rows_failure(scan: Any) -> ParseFailure:
    """Why a log has no metrics table (`scan` is stressng_state.Scan), most specific first."""
    if scan.skipped and scan.completed and not scan.passed:
        return ParseFailure("fatal", f"stress-ng skipped its stressor ({scan.skipped} instance(s) skipped, none "
                                     "passed), so there are no figures: its log says why (out of memory, not "
                                     "supported on this system?)")
    unsuccessful = any(e.startswith("unsuccessful run completed") for e in scan.errors)
    if scan.errors and (scan.completed or unsuccessful or not scan.dispatches):
        return ParseFailure("fatal", f"stress-ng reported an error and printed no metrics: {scan.errors[0]}")
    if scan.errors:  # started, then stopped with neither a table nor a `run completed` line
        return ParseFailure("truncated", "the stress-ng log stops before its metrics table, with no `run completed` "
                                         "line (killed: by the OOM killer, a time limit?); it printed "
                                         f"{len(scan.errors)} error line(s), first: {scan.errors[0][:200]}")
    if scan.header and scan.closed:  # --metrics-brief leaves out the row of a stressor that did nothing
        return ParseFailure("fatal", f"stress-ng finished, but its metrics table has no rows: --metrics-brief leaves "
                                     f"out a stressor that completed 0 bogo ops ({scan.hogs or 'its stressors'}): it "
                                     "could not work here (see stress-ng's warnings; rerun with --metrics to see "
                                     "its row) or the run was too short for one bogo op (raise --timeout)")
    if scan.header:
        return ParseFailure("truncated", "the stress-ng metrics table has a header but no rows")
    if scan.completed:
        return ParseFailure("unknown-format", "stress-ng finished but printed no metrics table: run it "
                                              "with --metrics-brief (or --metrics)")
    if scan.seen:
        return ParseFailure("truncated", "the stress-ng log stops before its metrics table")
    return ParseFailure("unknown-format", "no `stress-ng:` lines found in the log")


def run_flags(s: Any, requested: Mapping[str, Any] | None, echoed: Echoed, row: list[float] | None) -> list[str]:
    """The flags of a run read into `s` (stressng_state.Scan) whose primary row is `row`."""
    flags = compare_echoed(requested, echoed, ("timeout",))
    if s.failed:
        flags.append(f"FAILED: stress-ng reported {s.failed} failed stressor instance(s)")
    if s.skipped:
        flags.append(f"SKIPPED: stress-ng skipped {s.skipped} stressor instance(s) (out of resources, or not "
                     "supported here): the figures come from the instances that ran")
    if s.premature:  # stress-ng still prints the row, over the time the instances ran
        flags.append(f"PREMATURE: {len(s.premature)} stress-ng instance(s) stopped before the run's end (first: "
                     f"`{s.premature[0][:120]}`): the figures cover less than the time asked (out of memory, "
                     "killed?)")
    if s.untrusted:
        flags.append(f"UNTRUSTWORTHY: stress-ng marked {s.untrusted} metric(s) untrustworthy")
    if s.errors:
        flags.append(f"ERRORS: stress-ng printed {len(s.errors)} error line(s), first: {s.errors[0][:200]}")
    ops = requested_int(requested, "ops")
    if row and ops and row[0] < ops:
        flags.append(f"SHORT: stress-ng ran {int_or_float(row[0])} of the {ops} requested bogo ops "
                     "before its timeout")
    elif row and not ops and not s.premature and (stopped := _stopped_early(s, requested, row)):
        flags.append(stopped)
    return flags


# a primary row whose real time is under this share of the run's timeout, and a second or more under it, stopped
# early (a loaded machine starts an instance late by a fraction of a second, never by a tenth of a long run)
SHORT_SHARE, SHORT_MIN_S = 0.9, 1.0
DEFAULT_TIMEOUT_S = 86400  # stress-ng's own timeout when none is given (a run of --*-ops): nothing asked of it


def _stopped_early(s: Any, requested: Mapping[str, Any] | None, row: list[float]) -> str | None:
    """SHORT when the primary stressor ran well under the run's timeout (the requested one, else the log's own
    unless it is stress-ng's default): stopped by a signal, which stress-ng still calls a `successful run
    completed` with exit 0 (a real run interrupted at 2.5 of its 10 s)."""
    timeout = requested_int(requested, "timeout") or (s.timeout if s.timeout != DEFAULT_TIMEOUT_S else None)
    real = row[1] if len(row) > 1 else None
    if not timeout or real is None or real >= SHORT_SHARE * timeout or timeout - real < SHORT_MIN_S:
        return None
    return (f"SHORT: stress-ng's stressor ran {int_or_float(real)} s of the {timeout} s asked (stopped by a "
            "signal or Ctrl-C? stress-ng still reports a successful run): its bogo ops count a shorter run")


_UNTOLD = " unless --sequential was given, which this log does not tell: it has no `successful run completed in`"


def beside_flag(rows: Sequence[Row], primary: str, took: float | None) -> list[str]:
    """PARAM_MISMATCH when the primary stressor (stress-ng-cpu's cpu) ran side by side with others that worked
    (`--cpu 2 --vm 2`: stress-ng's default is to run them at once, loading the same CPUs): its figures measure
    the stressor under their load (cpu 268 bogo ops/s beside 2 vm against 583 alone, same machine). A run that
    took the sum of its rows' real times or more (`--sequential`: `successful run completed in 110.83s` for 51
    rows summing 110.58 s; each row's time is rounded to 0.01 s) ran each alone: not flagged. At once, the run
    takes about its longest row's time. A row that ran under a tenth of the primary's time (a stressor that
    stopped at once: uprobe's 0.007 s beside cpu's 1 s, skipped) loaded nothing to speak of, nor did one that did no
    work (0 bogo ops in under 0.01 s of usr+sys time: af-alg's 0.000497 s beside cpu's 1 s; NO_WORK). Without the run's
    time (`took` None: a --yaml report, or a run killed before its `successful run completed` line) the run is
    taken as stress-ng's default, at once, and so said."""
    own = next((values[1] for name, values in rows if name == primary and len(values) > 1), 0.0)
    others = [name for name, values in rows if name != primary and len(values) > 1 and values[1] >= 0.1 * own > 0
              and not (len(values) > 3 and values[0] == 0 and values[2] + values[3] < 0.01)]
    if not others:
        return []
    summed = sum(values[1] for _, values in rows if len(values) > 1)
    if took is not None and took >= summed - 0.01 * len(rows):
        return []
    return [f"PARAM_MISMATCH: stressors: {primary} ran beside {', '.join(others[:5])}"
            f"{f' and {len(others) - 5} more' if len(others) > 5 else ''} (stress-ng runs the stressors of one "
            f"command at once{_UNTOLD if took is None else ''}); podtax's stress-ng-{primary} runs --{primary} "
            f"alone, so these {primary} figures were measured under the others' load and measure another cell"]
