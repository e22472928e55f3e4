"""Logs measured but not yet published, kept on disk until NATS has them.

A benchmark can run for many minutes; when NATS is down at the moment its log is published, the
request is redelivered later and, without this, the benchmark ran again and the first measurement
was lost. The log is written here (atomically, one file per run) before it is published and removed
once JetStream acked it; a redelivered request whose log is here publishes it instead of running,
and an agent that starts publishes what an earlier one left.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from podtax import events

from podtax_host_agent import owndir

log = logging.getLogger("podtax.host_agent")
FOLDER = "outbox"


def _path(state_dir: Path, run_id: str) -> Path:
    return state_dir / FOLDER / f"{run_id}.json"  # run ids are plain names (events.RunId): no separators


def save(state_dir: Path, event: events.RawLogV1) -> None:
    """Keep `event` until :func:`remove`; the file is complete or absent, never half-written."""
    path = _path(state_dir, event.data.run.run_id)
    owndir.make(path.parent)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(events.encode(event))
    os.replace(tmp, path)


def load(state_dir: Path, run_id: str) -> events.RawLogV1 | None:
    """The kept log of `run_id`, or None; a file that no longer decodes is set aside, not trusted."""
    path = _path(state_dir, run_id)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        event = events.decode(raw)
    except ValueError as exc:
        path.rename(path.with_suffix(".bad"))
        log.error("outbox: %s does not decode (%s); set aside as .bad, the run is measured again", path, exc)
        return None
    return event if isinstance(event, events.RawLogV1) and event.data.run.run_id == run_id else None


def remove(state_dir: Path, run_id: str) -> None:
    _path(state_dir, run_id).unlink(missing_ok=True)


def kept(state_dir: Path) -> list[str]:
    """Run ids with a kept log, oldest first."""
    folder = state_dir / FOLDER
    if not folder.is_dir():
        return []
    files = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime)
    return [p.stem for p in files]
