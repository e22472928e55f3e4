"""Run one registered benchmark template: argv only (no shell), a process group killed on timeout,
stdout and stderr capped, the provenance block around it. One run at a time (the caller's lock).

The child dies with the agent (guard.dying_with_agent); the data files a tool writes in the work
directory (fio's `--filename`) are deleted after every run, and a run whose data would not fit in the
free space of the work directory is refused before it starts (:func:`space_problem`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import stat
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from podtax import benchwrap, events, templates
from podtax.templates import size_bytes

from podtax_host_agent.facts import tool_path
from podtax_host_agent.guard import MARKER, dying_with_agent, group_members, kill_marked
from podtax_host_agent.owndir import make, recheck

# Kept free in the work directory beyond a run's data: 5% of the filesystem, at least this much.
RESERVE_BYTES = 256 * 1024**2


@dataclass(frozen=True)
class Outcome:
    stdout: str
    stderr: str
    exit_code: int | None
    started_at: datetime
    ended_at: datetime
    truncated: bool
    timed_out: bool
    cancelled: bool = False  # stopped by its campaign's cancellation (`stop` set)


async def _read_capped(stream: asyncio.StreamReader, cap: int) -> tuple[bytes, bool]:
    """Read everything (so the process never blocks on a full pipe) but keep only `cap` bytes."""
    kept = bytearray()
    truncated = False
    while chunk := await stream.read(65536):
        room = cap - len(kept)
        if room > 0:
            kept += chunk[:room]
        if len(chunk) > max(room, 0):
            truncated = True
    return bytes(kept), truncated


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _group_gone(pgid: int, within_s: float) -> list[int]:
    """Wait until no live process of the group `pgid` is left, at most `within_s`; returns those left. SIGKILL is
    only queued: each process dies when it next runs, so on a loaded host a tool's workers (stress-ng's, fio's) still
    ran a moment after their leader was reaped, and the run was reported over (the node free for the next run)."""
    deadline = time.monotonic() + within_s
    while (left := group_members(pgid)) and time.monotonic() < deadline:
        time.sleep(0.01)
    return left


READ_AFTER_KILL_S = 10.0  # pipes still open after every process was killed: stop reading
EXIT_AFTER_KILL_S = 60.0  # how long to wait for a killed tool to exit before reporting the run
log = logging.getLogger("podtax.host_agent")


async def _ends(proc: asyncio.subprocess.Process, timeout_s: float, stop: asyncio.Event | None) -> str:
    """Wait for the process to exit ('exited'), `stop` to be set ('cancelled') or the timeout ('timed-out')."""
    waits = {asyncio.ensure_future(proc.wait()): "exited"}
    if stop is not None:
        waits[asyncio.ensure_future(stop.wait())] = "cancelled"
    try:
        done, _ = await asyncio.wait(waits, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in waits:
            task.cancel()
    exited = [waits[t] for t in done]
    return "exited" if "exited" in exited else exited[0] if exited else "timed-out"


async def run_argv(argv: list[str], timeout_s: float, cap_bytes: int, cwd: Path, *, pass_fds: Sequence[int] = (),
                   on_start: Callable[[int, str], None] | None = None, stop: asyncio.Event | None = None) -> Outcome:
    """Run argv in its own session (process group = its pid), every process of it marked in its
    environment (guard.MARKER); `on_start(pid, marker)` is called once it runs. When it ends, times out,
    is cancelled or `stop` is set (its campaign was cancelled), every process carrying the marker is killed,
    wherever it went."""
    started = events.now()
    marker = uuid.uuid4().hex
    env = {"PATH": tool_path(), "LC_ALL": "C", MARKER: marker}  # nothing of the agent's or the request's
    proc = await asyncio.create_subprocess_exec(
        *dying_with_agent(argv, env["PATH"]), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, cwd=cwd, start_new_session=True, env=env, pass_fds=tuple(pass_fds),
    )
    if on_start is not None:
        on_start(proc.pid, marker)
    assert proc.stdout and proc.stderr
    readers = asyncio.gather(_read_capped(proc.stdout, cap_bytes // 2), _read_capped(proc.stderr, cap_bytes // 2))
    ended = "timed-out"
    try:
        ended = await _ends(proc, timeout_s, stop)
    finally:
        # The tool's group, then whatever left the group (fio's job processes call setsid), at once: a
        # tool killed first may take seconds to exit (I/O in flight) while its escaped children run on.
        _kill_group(proc.pid)
        await asyncio.to_thread(kill_marked, marker)
        try:  # a process in uninterruptible I/O exits once the I/O ends; the node lock covers the wait
            await asyncio.wait_for(proc.wait(), EXIT_AFTER_KILL_S)
            if left := await asyncio.to_thread(_group_gone, proc.pid, EXIT_AFTER_KILL_S):
                log.error("%d process(es) of the run's group (first: pid %d) still live %.0f s after SIGKILL "
                          "(uninterruptible I/O?)", len(left), left[0], EXIT_AFTER_KILL_S)
        except TimeoutError:
            log.error("pid %d has not exited %.0f s after SIGKILL (uninterruptible I/O?); the node stays "
                      "locked until it does", proc.pid, EXIT_AFTER_KILL_S)
    try:
        (out, out_cut), (err, err_cut) = await asyncio.wait_for(readers, READ_AFTER_KILL_S)
    except TimeoutError:  # a process still holds the pipes: stop reading rather than wait for ever
        (out, out_cut), (err, err_cut) = (b"", True), (b"podtax: output unreadable after the run ended", True)
    cut_short = ended != "exited"
    return Outcome(out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
                   None if cut_short else proc.returncode, started, events.now(), out_cut or err_cut,
                   ended == "timed-out", ended == "cancelled")


def data_files(argv: Sequence[str]) -> list[Path]:
    """Files the tool writes as its test data (fio's `--filename=`)."""
    return [Path(a.split("=", 1)[1]) for a in argv if a.startswith("--filename=")]


def remove_data_file(path: Path) -> None:
    """Delete a tool's data file; anything else at that path (a directory) is not ours to touch."""
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)


def leftover_data_files(workdir: Path) -> list[Path]:
    """Data files a crashed run may have left in the work directory (fio's, with any parameters)."""
    return [p for p in data_files(templates.get("fio").build_argv({}, str(workdir))) if p.is_file()]


def space_problem(run: events.RunSpec, workdir: Path) -> str | None:
    """Why the run's data cannot fit in the work directory's free space, or None when it fits."""
    if run.test != "fio":
        return None
    params = templates.get("fio").validate(run.params)  # the size as fio reads it: 1m is 1M
    assert isinstance(params, templates.Fio)
    size = params.size
    need = size_bytes(size)
    probe = workdir if workdir.exists() else next((p for p in workdir.parents if p.exists()), Path("/"))
    usage = shutil.disk_usage(probe)
    reserve = max(RESERVE_BYTES, usage.total // 20)
    room = max(0, usage.free - reserve)
    if need <= room:
        return None
    return (f"fio size {size} needs {need:,} bytes but the work directory {workdir} has "
            f"{usage.free:,} bytes free, of which {reserve:,} are kept in reserve (at most {room:,} usable); "
            f"lower size or free space there (PODTAX_AGENT_WORKDIR)")


def _meminfo_bytes() -> dict[str, int]:
    out = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        key, _, value = line.partition(":")
        if value.strip().endswith(" kB"):
            out[key] = int(value.split()[0]) * 1024
    return out


def memory_problem(run: events.RunSpec) -> str | None:
    """Why the run's memory cannot fit in the host's available memory, or None when it fits. sysbench memory
    allocates its block (one, shared by its threads) and writes it through before it starts: on the host, where no
    cgroup limit stops it, a block of the host's memory drives it into swap and the OOM killer."""
    if run.test != "sysbench-memory":
        return None
    params = templates.get("sysbench-memory").validate(run.params)
    assert isinstance(params, templates.SysbenchMemory)
    block = params.block_size
    mem = _meminfo_bytes()
    free, reserve = mem.get("MemAvailable", 0), max(RESERVE_BYTES, mem.get("MemTotal", 0) // 10)
    room = max(0, free - reserve)
    if size_bytes(block) <= room:
        return None
    return (f"sysbench-memory block_size {block} needs {size_bytes(block):,} bytes of memory but this node has "
            f"{free:,} available (MemAvailable), of which {reserve:,} are kept in reserve (at most {room:,} usable); "
            f"lower block_size")


def workdir_problem(workdir: Path) -> str | None:
    """Why no tool may run in `workdir`, or None. Every tool runs there (its working directory): fio writes its data
    file at a fixed name, through any symbolic link it finds (into a file at least its size, or a disk), and
    `python -m podtax.netpair` (network runs) would import a module found there. The directory must be this
    user's and writable by no one else, or another user could put such a link or module there (/var/tmp is
    world-writable, and anyone may create /var/tmp/podtax first). The agent made it at start (owndir.prepare);
    one removed since (tmpfiles ages /var/tmp) is made again, for this user alone."""
    if (why := recheck(workdir)) is None:
        return None
    return (f"the work directory {why}, or set PODTAX_AGENT_WORKDIR to another: another user could put a link "
            f"where fio writes its data file, or code where a tool looks for it, and have this agent overwrite "
            f"any file or disk, or run that code")


def device_problem(run: events.RunSpec) -> str | None:
    """Why hdparm must not open the run's device, or None: it must be a block device (after following
    symbolic links such as /dev/disk/by-id/...). The template's pattern admits any path under /dev, and
    opening a character device as root can do harm (/dev/watchdog starts the hardware watchdog)."""
    if run.test != "hdparm":
        return None
    device = str(run.params.get("device", templates.get("hdparm").params.model_fields["device"].default))
    try:
        mode = os.stat(device).st_mode
    except OSError as exc:
        return f"device {device} cannot be opened on this node ({exc.strerror}); name a disk such as /dev/sda"
    if not stat.S_ISBLK(mode):
        return f"device {device} is not a block device; hdparm times disks: name one such as /dev/sda"
    return None


def target_problem(run: events.RunSpec) -> str | None:
    """Why the run's network client must not start, or None: a host run's client connects only to the server
    it starts on loopback (host->host); aimed at any other address it would send traffic, as long and as fast
    as the parameters say, to a host the run request chose."""
    if (server := templates.get(run.test).remote_server(run.params)) is None:
        return None
    return (f"{run.test} server {server[:80]!r} is not this node's loopback: the host side of a network test runs "
            f"host->host (its own server on 127.0.0.1 or ::1), and only pod runs connect to a server the runner "
            f"starts (`topology`); drop `server` from the campaign's {run.test} parameters")


async def run_template(run: events.RunSpec, cap_bytes: int, workdir: Path, tool_version: str | None, *,
                       pass_fds: Sequence[int] = (), on_start: Callable[[int, str], None] | None = None,
                       stop: asyncio.Event | None = None) -> Outcome:
    """Validate (raises templates.TemplateError) and execute one run, wrapped in the provenance block.
    The tool's data files are deleted afterwards, whatever the outcome."""
    argv = templates.get(run.test).build_argv(run.params, str(workdir))
    make(workdir)  # for this user alone (workdir_problem)
    tool = shutil.which(benchwrap.tool_of(argv), path=tool_path())  # as run_argv (or netpair under it) finds it
    before = benchwrap.block("before", tool_version, tool)
    try:
        outcome = await run_argv(argv, run.timeout_s, cap_bytes, workdir, pass_fds=pass_fds, on_start=on_start,
                                 stop=stop)
    finally:
        for path in data_files(argv):
            remove_data_file(path)
    after = benchwrap.block("after")
    return Outcome(outcome.stdout, f"{before}\n{outcome.stderr}{after}\n", outcome.exit_code,
                   outcome.started_at, outcome.ended_at, outcome.truncated, outcome.timed_out, outcome.cancelled)
