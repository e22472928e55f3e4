"""`podtax import MANIFEST --campaign NAME`: publish logs recorded before podtax as raw-log events.

Every row is checked before anything is sent; one bad row stops the whole import (exit 2), so a
manifest is never half-imported because of its content. Each row becomes one run with a
deterministic id (a hash of campaign, file, node as written, env, start time and log) and event id
`<run_id>.log`: importing the same manifest again is harmless (JetStream drops the repeated event ids inside its
de-duplication window, and the analyzer keeps one row per run id after that).

An imported run keeps its real time: it ends at its start plus the wall-clock time the log itself
reports (sysbench "total time", stress-ng "real time", the timeline's wall_s), else plus the
requested `time` parameter, else at its start. The scheduler ages evidence by that end time.

Cost per row: the manifest check stats each log (no reading); the logs of rows sharing a node, env, test, params
and start (a manifest giving the day only) are read once more, for their digest (importoverlap.same_captures); before
publishing, every log is read and parsed once (its run length, and whether that end is a valid time: the spans
importoverlap.overlap_warnings warns of, O(n log n)), but its
event is built and encoded only when `size_bound` says it might not fit one NATS message; publishing reads the log
again and builds the event with the run length found then (no second parse). `--dry-run` makes the same checks
without NATS (sizes against nats-server's default max_payload) and lists the logs the parser rejects or flags.
The manifest itself is read and checked in podtax.cli.manifest; what the logs say that does not stop the
import (rejected logs, versions, flags, host and pod tool builds that differ) is gathered and warned of in
podtax.cli.importcheck.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from contextlib import nullcontext
from datetime import datetime, timedelta
from pathlib import Path
from types import EllipsisType
from typing import Annotated, Any

import typer
from pydantic import TypeAdapter, ValidationError
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from podtax import events, sidenodes, sideparams, subjects
from podtax.bus import Bus, BusError, wire_bytes
from podtax.busrefusal import too_large
from podtax.busstreams import DUPLICATE_WINDOW_S
from podtax.campaign import NAME_PATTERN
from podtax.cli import deadline, interrupted
from podtax.cli.common import a_path, console, err, fail, refused, warn
from podtax.cli.deadline import within
from podtax.cli.importcheck import MAX_SHOWN, Findings, parse_log, warn_each, warn_findings
from podtax.cli.importoverlap import capture_warnings, overlap_warnings, same_captures
from podtax.cli.manifest import HEADER as HEADER  # the manifest's names stay importable from here
from podtax.cli.manifest import ManifestError, Row, accepted, read_manifest
from podtax.safefiles import MAX_LOG_BYTES, UnsafePath, decode_log, read_capped
from podtax.templates import params_key

CHUNK = 200  # events published (and acked) per progress-bar step
SOURCE = "podtax/cli/import"
_CAMPAIGN = re.compile(NAME_PATTERN)
_END = TypeAdapter(events.Timestamp)  # what RawLog checks of ended_at, without building the event

# An event's encoded size is bounded without building it. JSON writes a character of the log as at most
# 6 bytes: `\u00XX` for a control character (ASCII otherwise 1 or 2 bytes, `\"`; other characters as their
# UTF-8, at most 4 bytes; decode_log never yields a lone surrogate). A decoded log has at most as many
# characters as its file has bytes (UTF-8, U+FFFD for each undecodable byte; UTF-16: one per 2 or 4 bytes).
# The rest of the event is the envelope and run fields (about 820 bytes with one-letter values; bounded
# here by REST_FIXED) plus what comes from the row's text: file (twice), node (twice: subject and run),
# params (`k=v` as `"k":v,`), tool version, campaign, each character again at most 6 bytes of JSON;
# REST_PER_CHAR = 12 covers a field written twice. tests/unit/test_import_size.py holds it to real events.
JSON_BYTES_PER_CHAR = 6
REST_FIXED = 4096
REST_PER_CHAR = 12
# the most the NATS header block of an imported run's raw log takes (size_bound is the body's): Nats-Msg-Id (its id
# import-<24 hex>.log, 62 bytes in all) and a traceparent when a span is current (70): nats-server counts it
HEADER_BOUND = 256


def size_bound(log_chars: int, row: Row, campaign: str) -> int:
    """At least the encoded size of the row's event when its log decodes to `log_chars` characters (or has
    that many bytes: never fewer characters); see JSON_BYTES_PER_CHAR."""
    chars = (len(row.file) + len(row.node) + len(row.env) + len(row.test) + len(row.tool_version or "")
             + len(campaign) + sum(len(k) + len(str(v)) + 1 for k, v in row.params.items()))
    return JSON_BYTES_PER_CHAR * log_chars + REST_FIXED + REST_PER_CHAR * chars


def run_id_for(campaign: str, file: str, node: str, env: str, started_at: datetime, stdout: str) -> str:
    """Deterministic: the same campaign, file, node, env, start time and log always give the same run id, so the same
    manifest imported again gives the ids it gave. The start and the log's digest are in it because the file is the
    manifest's relative text: day1/m.csv and day2/m.csv both naming `host.log` for other runs gave one id, and
    every run after the first was dropped as 'already there'. `node` is the node as the manifest writes it
    (Row.spelled, else Row.node), as podtax before 6de8b23 derived it. Ids of older podtax versions (without start
    and log) are other ids for the same runs: the analyzer knows a capture it holds whatever its id
    (store_imports.py)."""
    log = hashlib.sha256(stdout.encode()).hexdigest()
    digest = hashlib.sha256("\x1f".join((campaign, file, node, env, started_at.isoformat(), log)).encode()).hexdigest()
    return f"import-{digest[:24]}"


def run_seconds(test: str, stdout: str, params: dict[str, Any]) -> float | None:
    """How long the run took: the log's own wall-clock figure, else the requested `time`, else None."""
    return parse_log(test, stdout, params).seconds


def _imported(rows: int, duplicates: int, campaign: str) -> str:
    """The last line of an import: how many logs were published and how many NATS already had. What the analyzer
    drops is not known here: a log imported again under another file name is published, then dropped there."""
    if duplicates:
        said = (f"{rows - duplicates} new log(s) to campaign [bold]{campaign}[/bold], {duplicates} already there; the "
                "analyzer drops any it holds already under another file name")
    else:  # NATS knows a message id for its duplicate window only; the analyzer stores each run once anyway
        said = (f"{rows} log(s) to campaign [bold]{campaign}[/bold]; the analyzer drops any it holds already "
                f"(imported more than {DUPLICATE_WINDOW_S / 60:g} minutes ago, or under another file name)")
    return f"published {said}. See `podtax report {campaign}`."


def _read_log(row: Row) -> str:
    try:
        return decode_log(read_capped(row.path, MAX_LOG_BYTES, row.file))
    except UnsafePath as exc:  # changed since the manifest was checked
        raise ManifestError([f"line {row.line}: file {exc}"]) from None


def _ended(row: Row, seconds: float | None) -> datetime:
    """The run's end, checked as RawLog checks it; a ManifestError naming the line when it cannot be one."""
    try:
        return _END.validate_python(row.started_at + timedelta(seconds=seconds) if seconds is not None
                                    else row.started_at)
    except (OverflowError, ValidationError) as exc:  # a log that reports a run lasting centuries
        why = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        raise ManifestError([f"line {row.line}: {row.file} reports a run of {seconds or 0:,g} s from "
                             f"{row.started_at}, which cannot be its end ({why})"]) from None


def _event(row: Row, campaign: str, sequence: int, stdout: str, seconds: float | None) -> events.RawLogV1:
    run_id = run_id_for(campaign, row.file, row.spelled or row.node, row.env, row.started_at, stdout)
    run = events.RunSpec(run_id=run_id, campaign=campaign, node=row.node, env=row.env,  # type: ignore[arg-type]
                         test=row.test, params=row.params, sequence=sequence)
    log = events.RawLog(run=run, stdout=stdout, stderr="", exit_code=0, started_at=row.started_at,
                        ended_at=_ended(row, seconds), tool_version=row.tool_version, imported_from=row.file)
    return events.raw_log(log, SOURCE).model_copy(update={"id": f"{run_id}.log"})


def build_event(row: Row, campaign: str, sequence: int, seconds: float | None | EllipsisType = ...) -> events.RawLogV1:
    """The row's raw-log event; its run length parsed from the log unless given (`check_events` found it)."""
    stdout = _read_log(row)
    return _event(row, campaign, sequence, stdout,
                  run_seconds(row.test, stdout, row.params) if seconds is ... else seconds)


def _too_big(row: Row, size: int, limit: int) -> str:
    return (f"line {row.line}: {row.file} does not fit one NATS message ({size:,} bytes encoded with its headers, the "
            f"server allows {limit:,}); cut it")


def check_events(rows: list[Row], campaign: str, limit: int, found: Findings | None = None) -> list[float | None]:
    """Every row's run length in seconds, each log read and parsed once; raises ManifestError listing
    every row whose log cannot be read now, whose run cannot end when the log says, or whose event
    would not fit `limit` bytes. An event is built and encoded only when size_bound says it might not
    fit: for the others it cannot exceed the limit. `found`, when given, receives what the parser says of
    each log (see Findings)."""
    seconds: list[float | None] = []
    problems: list[str] = []
    for i, row in enumerate(rows):
        length: float | None = None
        try:
            stdout = _read_log(row)
            check = parse_log(row.test, stdout, row.params, row.tool_version)
            length = check.seconds
            end = _ended(row, length)
            if found is not None:
                found.add(row, check, end)
            if size_bound(len(stdout), row, campaign) + HEADER_BOUND > limit and \
                    (size := wire_bytes(_event(row, campaign, i, stdout, length))) > limit:
                problems.append(_too_big(row, size, limit))
        except ManifestError as exc:
            problems += exc.problems
        seconds.append(length)
    if problems:
        raise ManifestError(problems)
    return seconds


def publishable_event(row: Row, campaign: str, sequence: int, seconds: float | None, limit: int) -> events.RawLogV1:
    """The row's event, as checked by check_events; a ManifestError naming the line when its log changed
    since then so that the event no longer fits `limit` bytes (or can no longer be read)."""
    event = build_event(row, campaign, sequence, seconds)
    if size_bound(len(event.data.stdout), row, campaign) + HEADER_BOUND > limit and \
            (size := wire_bytes(event)) > limit:
        raise ManifestError([_too_big(row, size, limit)])
    return event


async def _refuse_runner_campaign(bus: Bus, campaign: str, into_existing: bool) -> None:
    """A campaign the runner planned (its plan in KV, as `podtax campaign status` reads it) has runs podtax
    made: imported runs would join its cells silently, so that needs --into-existing."""
    kv = await within(bus.kv(subjects.RUNNER_BUCKET), "reading the runner's campaigns")
    if await within(Bus.kv_json(kv, f"campaign.{campaign}"), f"reading campaign {campaign}") is None:
        return
    if not into_existing:
        raise fail(f"campaign {campaign!r} was run by podtax (podtax campaign submit): imported runs would join its "
                   "cells and move their ratios; import into another --campaign, or pass --into-existing to add "
                   "them (the report counts them per cell, IMPORTED); nothing was imported", 2)
    warn(f"adding imported runs to campaign {campaign!r}, which podtax ran (--into-existing): the report flags "
         "each cell that has some IMPORTED, with how many")


async def _publish(rows: list[Row], campaign: str, found: Findings, into_existing: bool = False) -> None:
    """Check that the campaign is not one the runner ran (unless `into_existing`) and that every log reads,
    ends and fits one NATS message, then publish them all (in acked chunks). `found` receives what the
    parser says of each log (published all the same, see Findings)."""
    try:
        bus = await deadline.connect(SOURCE)
    except BusError as exc:
        raise fail(f"{exc}; nothing was imported", 1) from None
    published = sent = 0
    try:
        await _refuse_runner_campaign(bus, campaign, into_existing)
        limit = bus.nc.max_payload
        seconds = check_events(rows, campaign, limit, found)  # raises before anything is published
        await within(bus.ensure_streams(), "creating the streams")
        with Progress(TextColumn("importing"), BarColumn(), MofNCompleteColumn(), console=err,
                      disable=len(rows) < CHUNK, transient=True) as progress:
            task = progress.add_task("import", total=len(rows))
            for start in range(0, len(rows), CHUNK):
                chunk = [publishable_event(row, campaign, i, seconds[i], limit)
                         for i, row in enumerate(rows[start:start + CHUNK], start)]
                sent += len(chunk)
                found.duplicates += await within(bus.publish_many(chunk),
                                                 f"publishing rows {start + 1} to {start + len(chunk)}")
                published += len(chunk)
                progress.advance(task, len(chunk))
    except ManifestError as exc:
        if not published:
            raise
        raise fail("; ".join(exc.problems) + f" (changed since the check); stopped part-way: {published} of "
                   f"{len(rows)} published. Fix it and run the import again (rows already imported are not "
                   "duplicated)", 2) from None
    except BusError as exc:
        if too_large(exc):  # no want of room, no NATS away: that log never goes (busrefusal.TOO_LARGE)
            raise fail(f"{exc} (the log of one of rows {published + 1} to {sent}); stopped part-way: {published} of "
                       f"{len(rows)} published. Leave that log out (or cut it) and run the import again (rows already "
                       "imported are not duplicated)", 1) from None
        raise fail(f"{exc}; stopped part-way: {published} of {len(rows)} published. Run the import again once "
                   "NATS answers (rows already imported are not duplicated)", 1) from None
    except asyncio.CancelledError:  # Ctrl-C: asyncio.run cancels this; the runner says the note (`interrupted: ...`)
        if not sent:
            interrupted.note("stopped before publishing: nothing was imported (no row was sent)")
            raise
        interrupted.note(f"stopped part-way: {published:,} of {len(rows):,} rows published and acknowledged (the "
                         "next chunk's may be stored too). Run the same import again to publish the rest (rows "
                         "already imported are not duplicated)")
        raise
    finally:
        await _close(bus)


async def _close(bus: Bus) -> None:
    """Close without waiting on a server that does not answer (drain would)."""
    try:
        await asyncio.wait_for(bus.close(), 5)
    except Exception:  # noqa: BLE001 - closing anyway
        await bus.nc.close()


NATS_DEFAULT_MAX_PAYLOAD = 1_048_576  # nats-server's max_payload unless configured: what --dry-run checks


def _overlaps(found: Findings, dropped: set[int]) -> None:
    """Warn of the rows whose runs the analyzer flags OVERLAP (importoverlap), of those it stores (not `dropped`)."""
    warn_each(overlap_warnings([(row, end) for row, end in found.spans if row.line not in dropped]))


def _dry_run(manifest: Path, rows: list[Row], campaign: str, dropped: set[int]) -> int:
    """Everything the import checks before publishing, without NATS: every log read and parsed once, each
    event's size held to nats-server's default max_payload. Logs the parser rejects are listed (they
    would be imported as failed runs, not results), logs whose version differs from the manifest's
    tool_version (flagged VERSION_MISMATCH), logs whose runs the parser flags (SHORT, THREADS_MISMATCH,
    PARAM_MISMATCH, FEW_OBSERVATIONS), and cells whose sides ran different tool builds (CONFOUNDED): exit 0,
    as the import itself would succeed."""
    found = Findings()
    with err.status(f"reading and parsing {len(rows):,} log(s)") if len(rows) >= CHUNK else nullcontext():
        check_events(rows, campaign, NATS_DEFAULT_MAX_PAYLOAD, found)
    warn_findings(found, len(rows), "imported, they are stored")
    _overlaps(found, dropped)
    parsed = len(rows) - len(found.rejected)
    console.print(f"{escape(str(manifest))}: {len(rows)} row(s) are valid, {parsed} log(s) parse "
                  f"(dry run: nothing published; sizes checked against NATS's default "
                  f"{NATS_DEFAULT_MAX_PAYLOAD:,}-byte max_payload)", highlight=False, soft_wrap=True)
    return 0


def _report(problems: list[str]) -> typer.Exit:
    refused(problems, "nothing was imported", MAX_SHOWN)
    return typer.Exit(2)


HELP = "\n\n".join((
    "Import benchmark logs recorded before podtax (cron jobs, CronJobs) into the running system.",
    "One row per log: `file` is relative to the manifest's folder (or --root) and must lie inside it: "
    "absolute paths, '..' or symbolic links leading out, devices and /proc files are refused; "
    f"{accepted()}; `params` the parameters the run used, as "
    "space-separated key=value pairs (threads as a number; a yes/no as true or false, or yes, 1, on...: stored "
    "as true or false); `started_at` ISO 8601 — a time without a timezone "
    "is taken as UTC; `tool_version` optional (the machine's `<tool> --version`, for tools whose output does "
    "not print it). Logs above 1 MB are refused.",
    "Every row is checked first: if any is wrong, each bad line is listed and NOTHING is published (exit 2). "
    "Imported logs are treated as completed runs (exit code 0); a run ends when its log says it ended "
    "(started_at plus the run time the log reports, such as sysbench's total time or stress-ng's real time, "
    "else the requested `time`), else at started_at. Runs on one node whose times overlap, in any campaign, "
    "are flagged OVERLAP (they measured each other). The parser still "
    "rejects logs that show a failure (FATAL lines, errors, truncated output): they are imported as failed "
    "runs and each is named in a warning, as is each log that prints another tool version than its row's "
    "tool_version (its run is flagged VERSION_MISMATCH) and each log that did other or less work than its row's "
    "params (flagged THREADS_MISMATCH, PARAM_MISMATCH or SHORT), and each log that timed too few observations "
    "for some percentiles (FEW_OBSERVATIONS: they are not stored). Node names ignore case (Kubernetes writes "
    "them in lowercase): Node-1 and node-1 are one node, imported as node-1, and a warning says so; nodes of a test "
    "with host rows only beside others with pod rows only (node1.example.com and node1) are warned of: their runs "
    "get no ratio. Host and pod rows of a node and test that name "
    "different params are warned of: their runs fall into different cells and get no ratio; so are the host and "
    "pod logs of a node, test and params that ran different tool builds (the report flags the cell CONFOUNDED and "
    "withholds its ratio). --dry-run makes "
    "every check without NATS and names them too.",
    "A campaign that podtax ran (`podtax campaign submit`) is refused: imported runs would join its cells "
    "unseen; --into-existing adds them anyway, and the report then flags each cell that has imported runs "
    "IMPORTED, with how many. "
    "Importing the same manifest again adds nothing: run ids are derived from campaign, file, node (as the "
    "manifest writes it), env, start time and log, and the analyzer keeps one run per capture (campaign, env, "
    "test, params, node whatever its case, start time and log, CRLF line ends taken as LF, whatever the file's name: a "
    "copy of a log imported "
    "under another name is not another run, and the count of logs published includes such copies, which the "
    "analyzer then drops) (a database of an older podtax, whose ids spelled the node otherwise, is not given "
    "its runs twice; two manifests naming one file text for different logs or other start times keep both). "
    "Rows of one node, env, test and params at one start (a manifest giving the day only) whose logs are the same "
    "text are warned of: stored as one run, the others dropped. Runs of one node whose spans (start to start plus "
    "their run length) share more than a second, whatever their env or test (a host and a pod run at one start), "
    "are warned of too, one row per run stored: the analyzer flags them OVERLAP and gives no ratio; a run whose "
    "log gives no run length and whose row no `time` lasts nothing and overlaps nothing. "
    "Afterwards, `podtax report CAMPAIGN` shows the imported campaign.",
))


def register(app: typer.Typer) -> None:
    @app.command("import", help=HELP)
    def import_command(
        manifest: Annotated[Path, typer.Argument(parser=a_path, help="CSV manifest with the header "
                                                 "file,node,env,test,params,started_at,tool_version.")],
        campaign: Annotated[str, typer.Option("--campaign", help="Campaign the imported runs belong to.")],
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Check the manifest and every log (read, "
                                              "parsed, sized) without NATS; publish nothing.")] = False,
        root: Annotated[Path | None, typer.Option("--root", parser=a_path, metavar="<path>",
                                                  help="Folder every listed file must lie in (default: the "
                                                       "manifest's folder).")] = None,
        into_existing: Annotated[bool, typer.Option("--into-existing", help="Import into a campaign podtax ran "
                                                    "(refused without it: its cells would mix both; --dry-run "
                                                    "reads no NATS, so it cannot tell).")] = False,
    ) -> int:
        if not _CAMPAIGN.match(campaign):
            raise fail(f"--campaign {campaign!r}: use lowercase letters, digits and '-' (at most 50)", 2)
        if root is not None and not root.is_dir():
            raise fail(f"--root {root}: not a folder", 2)
        try:
            deadline.seconds()
        except ValueError as exc:
            raise fail(str(exc), 2) from None
        try:
            rows = read_manifest(manifest, root)
            warn_each(sidenodes.case_warnings((r.line, r.node, r.spelled) for r in rows))
            warn_each(sidenodes.one_sided_warnings((r.node, r.test, r.env) for r in rows))
            warn_each(sideparams.manifest_warnings((r.node, r.test, r.env, params_key(r.params)) for r in rows))
            captures = same_captures(rows, _read_log)
            warn_each(capture_warnings(captures))
            dropped = {row.line for at in captures for row in at[1:]}
            if dry_run:
                if into_existing:  # what it allows is checked on NATS, which a dry run never asks
                    warn(f"--into-existing is not tried by --dry-run: whether podtax ran campaign {campaign!r} is "
                         "checked on NATS, when importing")
                return _dry_run(manifest, rows, campaign, dropped)
        except ManifestError as exc:
            raise _report(exc.problems) from None
        found = Findings()
        try:
            asyncio.run(_publish(rows, campaign, found, into_existing))
        except ManifestError as exc:
            raise _report(exc.problems) from None
        warn_findings(found, len(rows), "the analyzer stores them")
        _overlaps(found, dropped)
        console.print(_imported(len(rows), found.duplicates, campaign), highlight=False)
        return 0
