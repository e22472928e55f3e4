"""One run at a time per node, and no benchmark outlives its agent.

Three defences against a crashed agent leaving a benchmark running beside the next one:

- the benchmark child asks the kernel to SIGKILL it when the agent dies (``PR_SET_PDEATHSIG``);
- every process of a run carries a marker in its environment (``PODTAX_RUN_MARKER``), which its
  descendants inherit even when they leave the process group: fio's job processes call setsid(), so
  neither a process-group kill nor the parent-death signal (reset on fork) reaches them. At the end
  of a run every marked process is killed; while it runs, the agent records the run's process group
  and marker in its state directory, and an agent that starts reaps whatever is left of them;
- a node lock (``flock`` on ``<state>/node.lock``) is held for the whole run and inherited by the
  benchmark's processes, so while any of them lives the next run waits until the node is idle.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import json
import logging
import os
import re
import shutil
import signal
import stat
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from podtax_host_agent import owndir

log = logging.getLogger("podtax.host_agent")
PR_SET_PDEATHSIG = 1
RECORD = "running.json"
# A note's NATS (a campaign name is unique in one NATS only, and a run id is made from it): the identity of its events
# stream (the creation time NATS gives it, datetime.isoformat(): Agent.learn_stream), or, when that was unknown, '@'
# and when the note was written (epoch seconds, the host's clock; an older agent's note without one: its file's mtime)
_NATS = re.compile(r"[0-9][-0-9T:.+Z]{0,39}|@[0-9]{1,12}(\.[0-9]{1,6})?")
# the run whose log was published last, a space, its NATS: the run by its log's event id (measured.key: the run id
# and its submission), or, an older agent's note, its run id alone
REPORTED = "reported"
REPORTED_BYTES = 272  # an event id of 225 characters (a run id of 200, events.RunId), a space, a NATS of 40, a newline
# the campaigns cancelled last, newest last, a line each: its name, a space, the NATS it was cancelled in
CANCELLED = "cancelled"
CANCELLED_KEEP = 1000
CANCELLED_BYTES = CANCELLED_KEEP * 84  # as many names of 50 characters, a space, a NATS of 32 and a newline
_CAMPAIGN = re.compile(r"[a-z0-9]([-a-z0-9]{0,48}[a-z0-9])?")  # event_payloads.CampaignName
LOCK = "node.lock"
MARKER = "PODTAX_RUN_MARKER"


# The launcher between the agent and a benchmark: a fresh interpreter (no threads, no state of the agent's) asks the
# kernel for SIGKILL when the agent dies, exits if the agent already has, restores the signals Python ignores at
# start and those a shell ignores in a background job (SIGINT, SIGQUIT: an agent started with `nohup ... &`), as
# they would stay ignored across exec, then becomes the tool. The agent's own forked child runs no Python
# (no preexec_fn): a fork of a threaded process that runs Python before exec can deadlock there, and the agent's
# event loop with it (a CI run hung so in create_subprocess_exec).
_LAUNCH = (
    "import ctypes, os, signal, sys\n"
    "for s in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM):\n"
    "    signal.signal(s, signal.SIG_DFL)\n"
    f"if ctypes.CDLL(None).prctl({PR_SET_PDEATHSIG}, signal.SIGKILL, 0, 0, 0) or os.getppid() != int(sys.argv[1]):\n"
    "    os._exit(126)\n"
    "try:\n"
    "    os.execv(sys.argv[2], sys.argv[3:])\n"
    "except OSError as e:\n"
    "    sys.stderr.write(f'podtax: cannot execute {sys.argv[2]}: {e.strerror}\\n')\n"
    "    os._exit(127)\n"
)
EXEC_FAILED = "podtax: cannot execute "  # the launcher's line (exit 127) when the tool cannot be executed


def exec_failure(exit_code: int | None, stderr: str) -> str | None:
    """Why the launcher could not execute the tool (a bad interpreter line, a binary of another architecture), from
    its exit status and line, or None: the tool ran."""
    if exit_code != 127:
        return None
    return next((line.removeprefix("podtax: ") for line in stderr.splitlines() if line.startswith(EXEC_FAILED)), None)


def launcher_problem() -> str | None:
    """Why no benchmark can start (the launcher is the agent's own Python), or None."""
    if os.access(sys.executable, os.X_OK):
        return None
    return (f"the host agent's Python {sys.executable} is gone (its virtualenv made again, or Python upgraded?): no "
            "benchmark can start until the agent is restarted")


def dying_with_agent(argv: Sequence[str], path: str) -> list[str]:
    """argv run through the launcher (see _LAUNCH): SIGKILLed when this process dies. The tool is looked up in
    `path` here (FileNotFoundError when it is not there, as from exec); its own argv is unchanged."""
    tool = shutil.which(argv[0], path=path)
    if tool is None:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", argv[0])
    return [sys.executable, "-I", "-S", "-c", _LAUNCH, str(os.getpid()), os.path.abspath(tool), *argv]


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (state is [0], pgrp [2], start time [19])."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()


def start_ticks(pid: int) -> str | None:
    fields = _stat(pid)
    return fields[19] if fields else None


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of a process group."""
    out = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
                out.append(int(entry.name))
    return out


def marked(marker: str) -> list[int]:
    """Live processes whose environment carries ``PODTAX_RUN_MARKER=<marker>``."""
    needle = f"{MARKER}={marker}".encode()
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            env = Path(f"/proc/{entry.name}/environ").read_bytes()
        except OSError:
            continue
        fields = _stat(int(entry.name))
        if needle in env.split(b"\0") and fields and fields[0] not in ("Z", "X"):
            out.append(int(entry.name))
    return out


def kill_marked(marker: str, wait_s: float = 10.0) -> int:
    """SIGKILL every process carrying the marker (again, for ones forked meanwhile); returns how many."""
    killed: set[int] = set()
    deadline = time.monotonic() + wait_s
    while (pids := marked(marker)) and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        time.sleep(0.02)
    return len(killed)


def record(state_dir: Path, pid: int, run_id: str, marker: str = "") -> None:
    """Note the running benchmark's process group (its leader's pid, started by setsid) and marker."""
    owndir.make(state_dir)
    doc = {"pgid": pid, "run_id": run_id, "marker": marker, "boot_id": _boot_id(), "start_ticks": start_ticks(pid)}
    tmp = state_dir / f".{RECORD}.tmp"
    tmp.write_text(json.dumps(doc))
    tmp.replace(state_dir / RECORD)


def clear(state_dir: Path) -> None:
    (state_dir / RECORD).unlink(missing_ok=True)


def reported(state_dir: Path, run_key: str, nats: str = "") -> None:
    """Note that the log of the run `run_key` (measured.key: the run id and its submission) is on the bus of `nats`
    (its events stream; '' unknown: the note's time). An agent killed before it acked the request gets the request
    again when it restarts: it is the last run it reported, and must not run twice."""
    owndir.make(state_dir)
    tmp = state_dir / f".{REPORTED}.tmp"
    tmp.write_text(f"{run_key} {nats or noted_now()}")
    tmp.replace(state_dir / REPORTED)


def last_reported_note(state_dir: Path) -> tuple[str, str] | None:
    """The run reported last (its key; an older agent's note, its run id) and its NATS (a note naming none: '@' and
    the note's mtime), read as the cancelled campaigns are (_read_note)."""
    if (note := _read_note(state_dir / REPORTED, REPORTED_BYTES, "no run remembered as reported")) is None:
        return None
    text, written = note
    run_id, *nats = text.split()[:2] or [""]
    return (run_id, nats[0] if nats else written) if run_id else None


def last_reported(state_dir: Path) -> str | None:
    return note[0] if (note := last_reported_note(state_dir)) else None


def noted_now() -> str:
    """The NATS of a note written while its events stream is unknown: '@' and the time."""
    return f"@{time.time():.6f}"


def is_nats(noted: str) -> bool:
    """Whether `noted` is a note's NATS (an events stream's identity, or '@' and a time)."""
    return bool(_NATS.fullmatch(noted))


def same_nats(noted: str, stream: str, created_at: float) -> bool:
    """Whether a note of `noted` belongs to the NATS whose events stream is `stream`, created at `created_at` (epoch
    seconds): its stream named, or, noted while that was unknown ('@' and a time), written since that stream was made
    (the host's clock against the server's: a skew blurs only a note written around a NATS reset)."""
    if not _NATS.fullmatch(noted):  # a note put there by hand: another's
        return False
    return float(noted[1:]) >= created_at if noted.startswith("@") else noted == stream


def note_cancelled(state_dir: Path, notes: dict[str, str]) -> None:
    """Write the campaigns cancelled, each with its NATS, newest last (the last CANCELLED_KEEP): an agent restarted
    after it acked a cancellation still refuses the campaign's requests."""
    owndir.make(state_dir)
    tmp = state_dir / f".{CANCELLED}.tmp"
    with tmp.open("w") as out:  # on disk before it replaces the old list (a power loss leaves one or the other)
        out.write("".join(f"{n} {s}\n" for n, s in list(notes.items())[-CANCELLED_KEEP:]))
        out.flush()
        os.fsync(out.fileno())
    tmp.replace(state_dir / CANCELLED)


def stamped(notes: dict[str, str], stream: str, created_at: float) -> dict[str, str]:
    """The notes, those written while the stream was unknown ('@' and a time) given the events stream `stream`
    created at `created_at` when written since, dropped when written before (same_nats): an earlier NATS's."""
    return {n: stream if s.startswith("@") else s for n, s in notes.items()
            if not s.startswith("@") or same_nats(s, stream, created_at)}


def cancelled_campaigns(state_dir: Path) -> dict[str, str]:
    """The campaigns noted cancelled, each with its NATS (a name alone, an older agent's: '@' and the list's mtime),
    newest last: a link, a FIFO or anything not a regular file reads as none, at most CANCELLED_KEEP of at most
    CANCELLED_BYTES are read, and a line that is no campaign name (and NATS) is skipped."""
    if (note := _read_note(state_dir / CANCELLED, CANCELLED_BYTES, "no cancelled campaign remembered")) is None:
        return {}
    text, written = note
    notes: dict[str, str] = {}
    for line in text.splitlines():
        name, *nats = line.split()[:3] or [""]
        if _CAMPAIGN.fullmatch(name) and len(nats) <= 1 and all(_NATS.fullmatch(s) for s in nats):
            notes.pop(name, None)
            notes[name] = nats[0] if nats else written
    return dict(list(notes.items())[-CANCELLED_KEEP:])


def _read_note(path: Path, limit: int, lost: str) -> tuple[str, str] | None:
    """A note's text (its first `limit` bytes, an undecodable byte replaced) and its mtime as a NATS ('@' and the time:
    an older agent's note names none), or None when absent; a link, a FIFO (never waited on) or anything not a regular
    file, or a file that cannot be read, is one error line saying what is `lost`, and None."""
    try:
        raw, mtime = read_regular(path, limit)
    except FileNotFoundError:
        return None
    except OSError as exc:  # a link (ELOOP), not a regular file, unreadable, EIO
        log.error("%s not read (%s): %s", path, exc, lost)
        return None
    return raw.decode(errors="replace"), f"@{mtime:.6f}"


def read_regular(path: Path, limit: int, from_end: bool = False) -> tuple[bytes, float]:
    """The first `limit` bytes of the regular file `path` (`from_end`: the last) and its mtime: never through a link
    (OSError ELOOP), never waiting on a FIFO nor reading a device (OSError EINVAL, 'not a regular file')."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if from_end:
            f.seek(max(0, os.fstat(fd).st_size - limit))
        return f.read(limit), os.fstat(fd).st_mtime


def reap(state_dir: Path, wait_s: float = 10.0) -> str | None:
    """Kill what is left of a recorded run's process group; returns what was done, None if nothing."""
    path = state_dir / RECORD
    try:
        doc = json.loads(path.read_text())
        pgid, run_id = int(doc["pgid"]), str(doc["run_id"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        path.unlink(missing_ok=True)
        return f"ignored an unreadable run record ({exc})"
    leader_ticks = start_ticks(pgid)
    stale = doc.get("boot_id") != _boot_id() or (leader_ticks is not None and leader_ticks != doc.get("start_ticks"))
    members = [] if stale else group_members(pgid)
    if members:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        deadline = time.monotonic() + wait_s
        while group_members(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)
    marker = str(doc.get("marker") or "")
    escaped = kill_marked(marker, wait_s) if marker else 0  # descendants that left the group (fio jobs)
    path.unlink(missing_ok=True)
    if not members and not escaped:
        return f"run {run_id} left no process behind"
    left = group_members(pgid) + (marked(marker) if marker else [])
    return (f"killed {len(set(members)) + escaped} leftover process(es) of run {run_id} (process group {pgid}"
            f"{f', {escaped} outside it' if escaped else ''})" + (f"; {len(left)} still exiting" if left else ""))


class NodeLock:
    """An exclusive ``flock`` on ``<state>/node.lock``. The descriptor is passed to the benchmark, so
    the lock is held until the last of its processes is gone, even when the agent is not."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / LOCK

    def _open(self) -> int:
        owndir.make(self.path.parent)
        return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)  # never through a link

    @staticmethod
    def _lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return False
            raise
        return True

    def try_acquire(self) -> int | None:
        fd = self._open()
        try:
            if self._lock(fd):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
        return None

    async def acquire(self, poll_s: float = 0.2) -> int:
        """Wait until the node is idle; returns the locked descriptor (close it to release). The file is opened
        once: while waiting, the state directory may be removed or handed to another user, and a file opened again
        there would be another lock than the one the earlier run's processes hold (or one made through a link)."""
        fd = self._open()
        try:
            waited = False
            while not self._lock(fd):
                if not waited:
                    log.warning("node busy: processes of an earlier run still hold %s; waiting until they exit",
                                self.path)
                    waited = True
                await asyncio.sleep(poll_s)
        except BaseException:
            os.close(fd)
            raise
        if waited:
            log.info("node idle again; starting the run")
        return fd
