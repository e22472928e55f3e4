"""Checks of a stress-ng metrics table's rows that refuse or flag a run (pure functions).

A row is (stressor name, [bogo ops, real time s, usr time s, sys time s, bogo ops/s real,
bogo ops/s usr+sys, (CPU used per instance %, RSS max KB)]) as stressng.py reads it.
"""

from __future__ import annotations

from typing import Any

from podtax.parsers.base import ParseFailure, int_or_float

Row = tuple[str, list[float]]


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


def refuse_no_work(rows: list[Row], primary: str | None) -> list[str]:
    """The stressors that completed no bogo op. Refused when that is the run's figure (the primary
    row, or every row): a rate of 0 would pass for the slowest result ever measured, while the
    stressor could not run here (stress-ng warns `all bogo-op counters are zero, data may be
    incorrect`) or the run was too short for one bogo op. Other rows are flagged (NO_WORK)."""
    idle = [name for name, values in rows if values[0] == 0]
    if idle and (primary in idle or len(idle) == len(rows)):
        name = primary or idle[0]
        seconds = dict(rows)[name][1]
        raise ParseFailure("fatal", f"stress-ng's {name} stressor completed 0 bogo ops in {int_or_float(seconds)} s: "
                                    "it could not work here (see stress-ng's warnings; try it alone with -v) or "
                                    "the run was too short for one bogo op (raise --timeout)")
    return idle


def missing_rows(hogs: str, rows: list[Row]) -> list[str]:
    """The stressors of `dispatching hogs: 4 cpu, 2 vm` that have no row in the metrics table."""
    names = {r[0] for r in rows}
    dispatched = [part.split()[-1] for part in hogs.split(",") if len(part.split()) == 2]
    return [name for name in dispatched if name not in names]


def no_work_flag(name: str) -> str:
    return f"NO_WORK: stress-ng's {name} stressor completed 0 bogo ops; its rates read 0"


def no_rows_failure(scan: Any) -> ParseFailure:
    """Why a log has no metrics table (`scan` is stressng._Scan), most specific first."""
    if scan.skipped and scan.completed and not scan.passed:
        return ParseFailure("fatal", f"stress-ng skipped its stressor ({scan.skipped} instance(s) skipped, none "
                                     "passed), so there are no figures: its log says why (out of memory, not "
                                     "supported on this system?)")
    if scan.errors and (scan.completed or not scan.dispatches):
        return ParseFailure("fatal", f"stress-ng reported an error and printed no metrics: {scan.errors[0]}")
    if scan.errors:  # started, then stopped with neither a table nor a `run completed` line
        return ParseFailure("truncated", "the stress-ng log stops before its metrics table, with no `run completed` "
                                         "line (killed: by the OOM killer, a time limit?); it printed "
                                         f"{len(scan.errors)} error line(s), first: {scan.errors[0][:200]}")
    if scan.header:
        return ParseFailure("truncated", "the stress-ng metrics table has a header but no rows")
    if scan.completed:
        return ParseFailure("unknown-format", "stress-ng finished but printed no metrics table: run it "
                                              "with --metrics-brief (or --metrics)")
    if scan.seen:
        return ParseFailure("truncated", "the stress-ng log stops before its metrics table")
    return ParseFailure("unknown-format", "no `stress-ng:` lines found in the log")
