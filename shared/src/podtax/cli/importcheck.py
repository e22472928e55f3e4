"""What `podtax import` finds in the logs that does not stop it, and the warnings that say so.

Each log is parsed once, as the parser service will parse its event (parse_log): its run length, whether
the parser rejects it, whether it prints another version than its row's tool_version, the parser's flags
(those of other or less work, and FEW_OBSERVATIONS: percentiles the run had too few observations for, not
stored), and its tool build. Findings gathers them per log; warn_findings prints one warning per log (the first
MAX_SHOWN of each kind) and, per node, test and params, each cell whose sides ran different tool builds
(podtax.sidebuilds: the report flags it CONFOUNDED).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from podtax import parsers, sidebuilds
from podtax.cli.common import err, warn
from podtax.cli.manifest import Row
from podtax.flags import FEW_RUN_FLAG  # percentiles left out: too few observations (parsers/sockperf.py)
from podtax.parsers.fio_flags import ROUNDED_MAX_MS, ROUNDED_SHARE
from podtax.templates import params_key

DURATION_METRICS = ("total_time", "real_time", "wall_s")  # wall-clock seconds as logs report them
VERSION_MISMATCH = "VERSION_MISMATCH: "  # the parser's flag (parsers._with_version)
RUN_FLAGS = ("SHORT: ", "THREADS_MISMATCH: ", "PARAM_MISMATCH: ")  # the parsers' flags that flag the run's cell
ROUNDED_FLAG = "ROUNDED_RUNTIME: "  # fio's: the run did its work, its IOPS and bandwidth a floor (warned apart)
MAX_SHOWN = 50  # problems printed; a manifest with every row wrong would print one line per row


@dataclass(frozen=True, slots=True)
class LogCheck:
    """What parsing a log found: the run length, the parser's ParseFailure when it rejects the log (which
    is still imported: the analyzer stores it as a failed run), when the log prints another version than
    the row's tool_version (the parser flags the run VERSION_MISMATCH) the tool and version it prints, the
    parser's flags (RUN_FLAGS) that the report turns into its cell's SHORT or PARAMS_MISMATCH, and the
    run's tool build as the analyzer will compare it (None when rejected); `few`: the parser's FEW_OBSERVATIONS
    flag (percentiles it left out), if any; `rounded`: its ROUNDED_RUNTIME flag, if any."""
    seconds: float | None
    failure: parsers.ParseFailure | None = None
    mismatch: str | None = None  # e.g. `sysbench 1.0.20`
    flags: tuple[str, ...] = ()
    build: sidebuilds.Build | None = None
    few: str | None = None
    rounded: str | None = None


def parse_log(test: str, stdout: str, params: dict[str, Any], tool_version: str | None = None) -> LogCheck:
    """The log parsed as the parser service parses the imported event (with the row's tool_version)."""
    failure: parsers.ParseFailure | None = None
    mismatch: str | None = None
    flags: tuple[str, ...] = ()
    build: sidebuilds.Build | None = None
    few: str | None = None
    rounded: str | None = None
    try:
        parsed = parsers.parse_run(test, stdout, requested=params, recorded_version=tool_version)
        found = {m.name: m.value for m in parsed.metrics}
        if any(f.startswith(VERSION_MISMATCH) for f in parsed.flags):
            mismatch = f"{parsed.tool} {parsed.tool_version}"
        flags = tuple(f for f in parsed.flags if f.startswith(RUN_FLAGS))
        build = sidebuilds.Build(parsed.tool, parsed.tool_version, parsed.tool_build)
        few = next((f for f in parsed.flags if f.startswith(FEW_RUN_FLAG)), None)
        rounded = next((f for f in parsed.flags if f.startswith(ROUNDED_FLAG)), None)
    except parsers.ParseFailure as exc:
        found, failure = {}, exc
    for name in DURATION_METRICS:
        if isinstance(found.get(name), int | float) and found[name] >= 0:
            return LogCheck(float(found[name]), failure, mismatch, flags, build, few, rounded)
    requested = params.get("time")
    return LogCheck(float(requested) if isinstance(requested, int | float) and requested >= 0 else None,
                    failure, mismatch, flags, build, few, rounded)


@dataclass(slots=True)
class Findings:
    """What check_events found that does not stop the import, one line per log (`line N: FILE: ...`):
    logs the parser rejects (imported as failed runs), logs that print another tool version than the
    row's tool_version (VERSION_MISMATCH), logs whose runs the parser flags (RUN_FLAGS), and logs whose runs
    had too few observations for some percentiles (FEW_OBSERVATIONS) or fio timed in a few ms (ROUNDED_RUNTIME),
    or ran UDP iperf3 at bitrate 0 (a flood: `flooded`); each accepted log's tool build by node, test, params
    and env (`builds`, for sidebuilds); and each row with its run's end (`spans`, for importoverlap)."""
    rejected: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)
    flagged: list[str] = field(default_factory=list)
    few: list[str] = field(default_factory=list)
    rounded: list[str] = field(default_factory=list)
    flooded: list[str] = field(default_factory=list)
    builds: list[tuple[str, str, str, str, sidebuilds.Build]] = field(default_factory=list)
    duplicates: int = 0  # logs JetStream already had (its publish ack's `duplicate`): not imported again
    spans: list[tuple[Row, datetime]] = field(default_factory=list)  # each row and its run's end (importoverlap)

    def add(self, row: Row, check: LogCheck, end: datetime) -> None:
        self.spans.append((row, end))
        where = f"line {row.line}: {row.file}"
        if check.failure is not None:
            self.rejected.append(f"{where}: {check.failure.reason}: {check.failure.detail}")
        if check.mismatch is not None:
            self.mismatched.append(f"{where}: VERSION_MISMATCH: the log prints {check.mismatch}, the manifest's "
                                   f"tool_version is {row.tool_version!r}")
        if check.flags:
            self.flagged.append(f"{where}: {'; '.join(check.flags)}")
        if check.few is not None:
            self.few.append(f"{where}: {check.few}")
        if check.rounded is not None:
            self.rounded.append(f"{where}: {check.rounded}")
        if row.test == "iperf3" and row.params.get("protocol") == "udp" and str(row.params.get("bitrate", "0")) == "0":
            named = "bitrate 0" if "bitrate" in row.params else "no bitrate, so -b 0"
            self.flooded.append(f"{where}: UDP at {named} (unlimited)")
        if check.build is not None:
            self.builds.append((row.node, row.test, params_key(row.params), row.env, check.build))


def warn_each(lines: list[str]) -> str:
    """One warning per line (the first MAX_SHOWN); returns ` (the first N shown)` when some were left out."""
    for line in lines[:MAX_SHOWN]:
        warn(line)
    return f" (the first {MAX_SHOWN} shown)" if len(lines) > MAX_SHOWN else ""


def warn_findings(found: Findings, rows: int, fate: str) -> None:
    """One warning per log the parser rejects, prints another tool version than its row's tool_version, or
    flags (other or less work; FEW_OBSERVATIONS); after each kind, how many. Then one per cell whose sides ran
    different tool builds."""
    for lines, what, then in (
        (found.rejected, "yield no figures", f"{fate} as failed runs with the reason above"),
        (found.mismatched, "print another tool version than the manifest's tool_version",
         "their runs are stored flagged VERSION_MISMATCH (the log's version is used); correct tool_version, or "
         "leave it empty when the log prints the version"),
        (found.flagged, "did other or less work than their row's params ask",
         "their runs are stored with the flags above, their cells flagged PARAMS_MISMATCH (no verdict) or SHORT; "
         "correct the row's params, or leave such logs out"),
        (found.few, "timed too few observations for some percentiles (FEW_OBSERVATIONS)",
         "those percentiles are not stored for their runs, so a cell of one has runs on one side only or none; "
         "rerun longer or at a higher rate"),
        (found.rounded, f"timed a fio job direction in {ROUNDED_MAX_MS} ms or less (ROUNDED_RUNTIME)",
         f"fio's whole-ms runtime may put their IOPS and bandwidth over {ROUNDED_SHARE:.0%} too low; their runs "
         "are stored flagged so, their IOPS and bandwidth cells flagged ROUNDED_RUNTIME; rerun longer (time_based "
         "with a runtime, as the fio template runs)"),
        (found.flooded, "ran UDP iperf3 at bitrate 0 (unlimited)",
         "a UDP sender at -b 0 floods and the receiver drops most datagrams (88-91 % on loopback), so their "
         "throughput_mbps may measure drops, not the network (their lost_percent says how many); they are imported "
         "as they ran; a new campaign names its rate (bitrate, e.g. 100M)"),
    ):
        if lines:
            more = warn_each(lines)
            err.print(f"{len(lines)} of {rows} log(s) {what}{more}: {then}", highlight=False, soft_wrap=True)
    warn_each(sidebuilds.manifest_warnings(found.builds))
