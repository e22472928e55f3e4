"""Run one registered benchmark template: argv only (no shell), a process group killed on timeout,
stdout and stderr capped, the provenance block around it. One run at a time (the caller's lock)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from podtax import benchwrap, events, templates


@dataclass(frozen=True)
class Outcome:
    stdout: str
    stderr: str
    exit_code: int | None
    started_at: datetime
    ended_at: datetime
    truncated: bool
    timed_out: bool


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


async def run_argv(argv: list[str], timeout_s: float, cap_bytes: int, cwd: Path) -> Outcome:
    started = events.now()
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        cwd=cwd, start_new_session=True, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"},
    )
    assert proc.stdout and proc.stderr
    readers = asyncio.gather(_read_capped(proc.stdout, cap_bytes // 2), _read_capped(proc.stderr, cap_bytes // 2))
    timed_out = False
    try:
        await asyncio.wait_for(proc.wait(), timeout_s)
    except TimeoutError:
        timed_out = True
        _kill_group(proc.pid)
        await proc.wait()
    finally:
        _kill_group(proc.pid)  # children that outlived the tool
    (out, out_cut), (err, err_cut) = await readers
    return Outcome(out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
                   None if timed_out else proc.returncode, started, events.now(), out_cut or err_cut, timed_out)


async def run_template(run: events.RunSpec, cap_bytes: int, workdir: Path,
                       tool_version: str | None) -> Outcome:
    """Validate (raises templates.TemplateError) and execute one run, wrapped in the provenance block."""
    argv = templates.get(run.test).build_argv(run.params, str(workdir))
    workdir.mkdir(parents=True, exist_ok=True)
    before = benchwrap.block("before", tool_version)
    outcome = await run_argv(argv, run.timeout_s, cap_bytes, workdir)
    after = benchwrap.block("after")
    return Outcome(outcome.stdout, f"{before}\n{outcome.stderr}{after}\n", outcome.exit_code,
                   outcome.started_at, outcome.ended_at, outcome.truncated, outcome.timed_out)
