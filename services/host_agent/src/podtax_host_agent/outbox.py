"""Logs measured but not yet published, kept on disk until NATS has them.

A benchmark can run for many minutes; when NATS is down at the moment its log is published, the
request is redelivered later and, without this, the benchmark ran again and the first measurement
was lost. The log is written here (atomically, one file per run) before it is published and removed
once JetStream acked it; a redelivered request whose log is here publishes it instead of running,
an agent that starts publishes what an earlier one left, and
while any is kept the agent tries it again every RETRY_S (keptlogs.py: its request may have been dead-lettered).

A file names the NATS it was measured under (guard: the events stream's identity, on a first line before the event;
a file without it, an older agent's, is judged by its mtime): after a NATS reset a new campaign may take an old one's
name, and with it the same run ids, so a log kept under an earlier NATS is set aside (renamed, never published as the
new campaign's run, nor lost); so is one whose request comes back while the events stream is unknown (its NATS cannot
be told), and the run is measured again.

NATS refusing a log until an admin acts (the events stream full, the log above its max_msg_size or above what a
file stream stores, the stream sealed: podtax.busrefusal, as the runner's outbox takes them) was said as a handler's
traceback naming no fix (10054, 10109), or without saying that the log is kept: publish() says it in one line (a
NatsLost), with the fix and where the log is kept.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from podtax import events, subjects
from podtax.bus import Bus, NatsLost, TooBig, at_limit
from podtax.busrefusal import lasting, lasting_text

from podtax_host_agent import guard, owndir

log = logging.getLogger("podtax.host_agent")
FOLDER = "outbox"
ASIDE = ".earlier-nats"  # the suffix of a log set aside, kept under another NATS
UNVERIFIED = ".unknown-nats"  # the suffix of a log set aside, its request back while the events stream was unknown
SUPERSEDED = ".superseded"  # the suffix of a log set aside, a later attempt of its run kept or reported (keptlogs)
BAD = ".bad"  # the suffix of a kept file that does not decode
RETRY_S = 10.0  # how often the kept logs are tried again while any is kept (keptlogs.retry_loop)
SLACK_BYTES = 4 << 20  # a kept file is read up to the agent's output cap and this (JSON, the event around the output)


def _path(state_dir: Path, run_id: str) -> Path:
    return state_dir / FOLDER / f"{run_id}.json"  # run ids are plain names (events.RunId): no separators


def save(state_dir: Path, event: events.RawLogV1, stream: str = "") -> None:
    """Keep `event`, measured under the NATS whose events stream is `stream` ('' unknown: the file's time), until
    :func:`remove`; the file is complete or absent, never half-written."""
    path = _path(state_dir, event.data.run.run_id)
    owndir.make(path.parent)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes((f"{stream}\n".encode() if stream else b"") + events.encode(event))
    os.replace(tmp, path)


async def publish(bus: Bus, event: events.RawLogV1, state_dir: Path, kept: bool) -> None:
    """bus.publish(event); NATS refusing it until an admin acts raised as NatsLost naming the fix (the module) and
    what became of the log (`kept`: saved here before)."""
    try:
        await bus.publish(event)
    except Exception as exc:
        if (why := refusal(bus, event, exc)) is None:
            raise
        run_id = event.data.run.run_id
        then = (f"its log is kept in {_path(state_dir, run_id)} and published once NATS takes it (tried again every "
                f"{RETRY_S:g} s)" if kept else
                "its log is not kept (the state directory is unsafe): the run is measured again if its request comes "
                "again")
        raise NatsLost(f"NATS refuses the log of run {run_id}: {why}; {then}") from None


def refusal(bus: Bus, event: events.Event, exc: BaseException) -> str | None:
    """Why NATS refuses `event` until an admin acts, and the fix, when `exc` (of bus.publish(event)) is such a refusal
    (bus.at_limit, bus.TooBig, busrefusal.lasting: as the runner's outbox takes them); else None."""
    if at_limit(exc) or isinstance(exc, TooBig):  # their words name the fix (bus.refusal_text, Bus._payload)
        return str(exc)
    return lasting_text(exc, bus.wire_bytes(event), subjects.STREAM) if lasting(exc) else None


async def publish_event(bus: Bus, event: events.Event, what: str) -> None:
    """bus.publish(event) (the agent's other events: a run's failure, the host's facts); NATS refusing it until an
    admin acts raised as NatsLost, one line naming the fix: 'NATS refuses <what>: ...' (it was a handler's traceback
    naming no fix)."""
    try:
        await bus.publish(event)
    except Exception as exc:
        if (why := refusal(bus, event, exc)) is None:
            raise
        raise NatsLost(f"NATS refuses {what}: {why}") from None


def _nats_and_event(raw: bytes, mtime: float) -> tuple[str, bytes]:
    """A kept file's NATS (guard: its first line, else '@' and its mtime) and its event's bytes."""
    if raw.startswith(b"{"):
        return f"@{mtime:.6f}", raw
    head, _, body = raw.partition(b"\n")
    return head.decode(errors="replace").strip(), body


def _read(path: Path, cap_bytes: int) -> tuple[bytes, float]:
    """A kept file's bytes and mtime, read as the notes are (guard.read_regular: never through a link, never waiting on
    a FIFO, at most `cap_bytes` (the agent's output cap) and SLACK_BYTES: a longer one does not decode)."""
    return guard.read_regular(path, cap_bytes + SLACK_BYTES)


def load(state_dir: Path, run_id: str, cap_bytes: int) -> events.RawLogV1 | None:
    """The kept log of `run_id`, or None; a file that no longer decodes is set aside, not trusted, and one that is not
    a regular file or cannot be read is one error line (the run is measured again, its new log replaces it)."""
    path = _path(state_dir, run_id)
    try:
        raw, _ = _read(path, cap_bytes)
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.error("outbox: %s not read (%s); the run is measured again", path, exc)
        return None
    try:
        event = events.decode(_nats_and_event(raw, 0.0)[1])
    except ValueError as exc:
        log.error("outbox: %s does not decode (%s); set aside as %s, the run is measured again", path, exc,
                  _rename(path, BAD))
        return None
    return event if isinstance(event, events.RawLogV1) and event.data.run.run_id == run_id else None


def remove(state_dir: Path, run_id: str) -> None:
    _path(state_dir, run_id).unlink(missing_ok=True)


def kept(state_dir: Path) -> list[str]:
    """Run ids with a kept log, oldest first: regular files only (a link, a FIFO is no kept log)."""
    try:
        with os.scandir(state_dir / FOLDER) as entries:
            files = [(e.stat(follow_symlinks=False).st_mtime, e.name.removesuffix(".json")) for e in entries
                     if e.name.endswith(".json") and e.is_file(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [run_id for _, run_id in sorted(files)]


def set_aside(state_dir: Path, stream: str, created_at: float, cap_bytes: int) -> list[tuple[str, str, Path]]:
    """Rename the logs kept under another NATS than the one whose events stream is `stream`, created at `created_at`
    (guard.same_nats), to `<run id>.json.earlier-nats` (not published, not lost); returns each one's run id, NATS and
    new path."""
    moved = []
    for run_id in kept(state_dir):
        path = _path(state_dir, run_id)
        try:
            nats, _ = _nats_and_event(*_read(path, cap_bytes))
        except OSError:  # gone, or no longer a regular file: load() says so if its request comes
            continue
        if not guard.same_nats(nats, stream, created_at):
            moved.append((run_id, nats, _rename(path, ASIDE)))
    return moved


def set_aside_unverified(state_dir: Path, run_id: str) -> Path | None:
    """Rename the kept log of `run_id` to `<run id>.json.unknown-nats` (not published, not lost): the events stream
    unknown, whether it was measured under this NATS cannot be told. Returns the new path, None if none was kept."""
    try:
        return _rename(_path(state_dir, run_id), UNVERIFIED)
    except FileNotFoundError:
        return None


def set_aside_superseded(state_dir: Path, run_id: str) -> Path:
    """Rename the kept log of `run_id` to `<run id>.json.superseded` (not published, not lost)."""
    return _rename(_path(state_dir, run_id), SUPERSEDED)


def _rename(path: Path, suffix: str) -> Path:
    """Rename `path` to its name and `suffix` (then -1, -2... when one was set aside before: both kept)."""
    where, n = path.with_name(path.name + suffix), 1
    while where.exists():
        where, n = path.with_name(f"{path.name}{suffix}-{n}"), n + 1
    path.rename(where)
    return where
