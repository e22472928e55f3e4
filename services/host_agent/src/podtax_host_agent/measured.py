"""The runs this agent measured, kept in its state directory (`<state>/measured`): a request of one that comes back is
acked unrun.

A request comes back once acked when the agent's consumer is made again: deleted (`nats consumer rm`), the agent
started again makes a new one, which starts from the stream's first message, and every run request of the node the
stream still holds (up to PODTAX_NATS_STREAM_MAX_AGE_S, 30 days) is given again. Measured again, each cost its
run time again and its new log competed with the stored one. A run is known by its log's event id (the run id and
its campaign's submission: RunSpec.event_id), so the same run id of a campaign submitted again is still measured;
each line names the NATS it was measured under (guard: its events stream), as a run id is unique in one NATS only.
A run the agent refused counts too, once its `run failed` is published (the runner recorded it failed; run later, its
result would supersede that failure). One line a run, appended once its log or its refusal is published; the last KEEP
are kept (a file grown past 2 KEEP lines, its rewrite failing on a full disk, is read from its end: the newest; the
rewrite is tried again every RETRY_BYTES appended, not on every run).
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from pathlib import Path

from podtax import events

from podtax_host_agent import guard, owndir

log = logging.getLogger("podtax.host_agent")
FILE = "measured"
KEEP = 100_000  # runs remembered (a line is at most LINE_BYTES: a run id of 200 characters, its stamp, a NATS)
LINE_BYTES = 272
RETRY_BYTES = 1_000 * LINE_BYTES  # a cut that failed (a full disk) is tried again this much later


def key(run: events.RunSpec) -> str:
    """What tells a run and its submission from another: its log's event id."""
    return run.event_id("log")


def load(state_dir: Path) -> dict[str, str]:
    """The runs measured (key -> NATS), oldest first, the last KEEP; read as guard's notes are (never through a link,
    at most 2 KEEP lines: the last ones); a line that is no key and NATS is skipped."""
    try:
        raw, _ = guard.read_regular(state_dir / FILE, 2 * KEEP * LINE_BYTES, from_end=True)
    except FileNotFoundError:
        return {}
    except OSError as exc:  # a link, not a regular file, unreadable
        log.error("%s not read (%s): runs measured before may be measured again when their requests come back",
                  state_dir / FILE, exc)
        return {}
    if len(raw) == 2 * KEEP * LINE_BYTES:  # perhaps begun mid-line: the oldest line read is dropped
        raw = raw.partition(b"\n")[2]
    runs: dict[str, str] = {}
    nats: dict[str, str] = {}  # one string of each NATS (a few), not one a line
    for line in raw.decode(errors="replace").splitlines():
        parts = line.split()
        if len(parts) == 2 and (parts[1] in nats or guard.is_nats(parts[1])):
            runs.pop(parts[0], None)
            runs[parts[0]] = nats.setdefault(parts[1], parts[1])
    return dict(list(runs.items())[-KEEP:]) if len(runs) > KEEP else runs


def add(state_dir: Path | None, runs: dict[str, str], run: events.RunSpec, nats: str) -> None:
    """Note `run` measured (or refused) under `nats`: in `runs`, and appended to the file (never through a link; not
    written with `state_dir` None: unsafe; a write cut short, a full disk, is an error line, not silent). A file grown
    past KEEP lines of LINE_BYTES is written again with the last KEEP (complete, or the old one left and the part
    written removed); a cut that failed is tried again once the file has grown by RETRY_BYTES more."""
    runs.pop(key(run), None)
    runs[key(run)] = nats
    while len(runs) > KEEP:
        del runs[next(iter(runs))]
    if state_dir is None:
        return
    path = state_dir / FILE
    try:
        owndir.make(state_dir)
        # never through a link, never waiting on a FIFO (opened at once: O_NONBLOCK; then refused, not a regular file)
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        with os.fdopen(os.open(path, flags, 0o600), "r+b", buffering=0) as out:
            info = os.fstat(out.fileno())
            if not stat.S_ISREG(info.st_mode):  # a FIFO opened for reading and writing does not fail: refused here
                raise OSError(errno.EINVAL, "not a regular file")
            before = info.st_size
            # a line cut short (a write that ran out of space) is ended first, not joined to this one: only it is lost
            cut = before > 0 and os.pread(out.fileno(), 1, before - 1) != b"\n"
            line = f"{key(run)} {nats}\n"
            _write_all(out.fileno(), (f"\n{line}" if cut else line).encode())
            after = os.fstat(out.fileno()).st_size
    except OSError as exc:  # a link, a disk full: this agent still remembers it
        log.error("run %s not noted in %s (%s): an agent started again may measure it again when its request comes "
                  "back", run.run_id, path, exc)
        return
    if _cut_due(before, after):
        try:
            _cut(state_dir, runs)
        except OSError as exc:  # the file is kept as it is, this run noted in it
            log.error("%s not cut back to its last %d runs (%s; run %s is noted in it): the cut is tried again once "
                      "the file has grown by %d kB", path, KEEP, exc, run.run_id, RETRY_BYTES // 1000)


def _write_all(fd: int, data: bytes) -> None:
    """All of `data` written: a write cut short (a full disk, a file-size limit: it returns fewer bytes and raises
    nothing) is continued, so that it fails with its error."""
    while data:
        written = os.write(fd, data)
        if written <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        data = data[written:]


def _cut_due(before: int, after: int) -> bool:
    """Whether an append that took the file from `before` to `after` bytes cuts it: it went past KEEP lines of
    LINE_BYTES, or (a cut that failed left it there) past another RETRY_BYTES beyond."""
    limit = KEEP * LINE_BYTES
    if after <= limit:
        return False
    return before <= limit or (before - limit) // RETRY_BYTES != (after - limit) // RETRY_BYTES


def _cut(state_dir: Path, runs: dict[str, str]) -> None:
    """The file written again with `runs` (the last KEEP); failing (a full disk), the part written is removed, so that
    it does not hold the space the next write needs, and the error raised."""
    tmp = state_dir / f".{FILE}.tmp"
    try:
        with tmp.open("w") as new:
            new.write("".join(f"{k} {n}\n" for k, n in runs.items()))
            new.flush()
            os.fsync(new.fileno())
        tmp.replace(state_dir / FILE)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def counts(runs: dict[str, str], run: events.RunSpec, stream: str) -> bool:
    """Whether `run` was measured in this NATS (events stream `stream`, '' unknown). The stream unknown, a run of a
    stamped submission counts (the same run id and submission to the microsecond is that run); an unstamped one (an
    older runner) does not: its run id may be another NATS's, it is measured again."""
    noted = runs.get(key(run))
    if noted is None:
        return False
    return noted == stream if stream else run.submitted is not None
