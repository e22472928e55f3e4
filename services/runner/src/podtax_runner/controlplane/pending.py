"""The DELETE_REFUSED result of a failed run not yet taken by NATS, marked beside its kept timeline.

A run whose deletes were refused is reported failed, then its timeline goes as a result flagged DELETE_REFUSED
(dispatch.py). A runner stopped between the two (a deploy, NATS not taking the result until then) gave the result
up: its run was recorded as reported (neither run again nor with a kept copy to send), so the result was only in
`<spool>/measured/`, pruned like any file (the next runner's start-up prune removed it, the run stayed failed). Now
`<kept file>.pending` (the run, its start and its failure, under a fixed event id) is written beside the kept timeline
before the failure is reported (once it was recorded, a runner stopped in between still lost the result) and removed
once NATS takes the result; a runner starting sends each one's result (the kept timeline as the run's raw log, under
its event id: stored once), after the run's failure when that is not recorded as reported (the copy an earlier
runner kept, else the mark's: stored once), not running the run again; retention.py never prunes a timeline that
has one. One
above the max_payload of the server a starting runner meets (its headers counted: Bus.wire_bytes) stays pending, said
in an error naming the size to raise max_payload to (ControlPlaneExecutor.send_pending)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from podtax import events
from podtax.parsers import ParseFailure, parse_run
from podtax.parsers.timeline_aborted import MARK

from podtax_runner.controlplane.timeline import Timeline
from podtax_runner.spool import write_atomic

SUFFIX = ".pending"


def marker(kept: Path) -> Path:
    """The pending mark of the kept timeline `kept`."""
    return kept.with_name(kept.name + SUFFIX)


def write(kept: Path, run: events.RunSpec, started: datetime, failure: events.RunFailedV1) -> Path:
    """Mark `kept`'s result pending, with the run's `failure` (atomically, as the spool writes); raises OSError."""
    doc = {"run": run.model_dump(mode="json"), "started_at": started.isoformat(),
           "failure": events.encode(failure).decode()}
    return write_atomic(kept.parent, marker(kept).name, json.dumps(doc).encode())


def read(mark: Path) -> tuple[events.RunSpec, datetime, str]:
    """The run, its start and its kept timeline's text of a pending mark; OSError when either file cannot be read,
    ValueError when the mark is not one."""
    text = mark.with_name(mark.name.removesuffix(SUFFIX)).read_text()
    try:
        doc = json.loads(mark.read_bytes())
        return events.RunSpec.model_validate(doc["run"]), datetime.fromisoformat(doc["started_at"]), text
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"not a pending result ({type(exc).__name__}: {exc})") from None


def failure_of(mark: Path) -> events.RunFailedV1 | None:
    """The run's failure a pending mark holds (under its fixed event id); None when it holds none (a mark of an
    earlier version) or cannot be read."""
    try:
        return events.RunFailedV1.model_validate_json(json.loads(mark.read_bytes())["failure"])
    except (OSError, ValueError, KeyError, TypeError):  # pydantic's ValidationError is a ValueError
        return None


def marks(folder: Path) -> list[Path]:
    """The pending marks in `folder` (none when it does not exist, or cannot be listed: retention.prune says so)."""
    try:
        return sorted(p for p in folder.iterdir() if p.name.endswith(SUFFIX) and not p.name.startswith(".tmp-"))
    except OSError:
        return []


def kept_names(names: list[str]) -> set[str]:
    """Of a folder's file names, the kept timelines that have a pending mark."""
    return {n.removesuffix(SUFFIX) for n in names if n.endswith(SUFFIX)}


def delete_refused(tl: Timeline, test: str) -> bool:
    """Whether the parser makes a result flagged DELETE_REFUSED of a failed run's kept timeline: its deletes were
    refused (execute.keep's mark) after every object's create and bind (parsers/timeline_aborted.py decides)."""
    if not (tl.aborted and tl.aborted.get(MARK)):
        return False
    try:
        parse_run(test, tl.jsonl())
    except ParseFailure:
        return False
    return True
