"""Fault scenario "full disk": the analyzer's data directory (its DuckDB file) is on a small tmpfs that
is filled up mid-campaign for 40 s, then freed. A SIMULATED campaign keeps producing results meanwhile.
40 s is past the bus's retries (1 + 2 + 5 + 10 s of backoff over max_deliver 5): before the analyzer
held batches while its storage was down (bus.Unavailable), a full disk of 60 s dead-lettered valid results.

Expected: no valid result is dead-lettered or lost because the disk was full for a while; every planned
run is stored exactly once in DuckDB once space is back. The analyzer is restarted if it exits (as
`podtax up` would). Needs root (mount -t tmpfs); otherwise the scenario is skipped, with the reason.

For the `make faults` suite: ``run() -> dict(planned, results, failures, duplicates, lost)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import nats
from podtax import natsserver, subjects
from podtax.bus import Bus

from tests.faults.drill import RunnerProcess, campaign_spec, finished_runs, seed_nodes, submit, tally, wait_header

DISK_MB = 64
FULL_FOR_S = 40.0


def mount_tmpfs(path: Path) -> str | None:
    """Mount a DISK_MB tmpfs at `path`; the reason when that is not possible here."""
    if os.geteuid() != 0:
        return "needs root to mount a tmpfs"
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(path)],
                          capture_output=True, text=True)
    return None if done.returncode == 0 else f"mount -t tmpfs failed: {done.stderr.strip()}"


def fill(path: Path) -> int:
    """Write a file until the filesystem is full; returns the bytes written."""
    written = 0
    block = b"\0" * (1 << 20)
    with open(path, "wb") as f:
        try:
            while True:
                f.write(block)
                f.flush()
                written += len(block)
        except OSError:
            pass
    return written


async def dead_letters(url: str, campaign: str) -> int:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        try:
            info = await js.stream_info(subjects.DLQ_STREAM)
        except Exception:  # noqa: BLE001 - no dead-letter stream yet: none
            return 0
        if not info.state.messages:
            return 0
        sub = await js.pull_subscribe(f"{subjects.DLQ_PREFIX}.>", stream=subjects.DLQ_STREAM)
        n, left = 0, info.state.messages
        while left > 0:
            msgs = await sub.fetch(min(left, 500), timeout=5)
            left -= len(msgs)
            n += sum(f'"campaign":"{campaign}"'.encode() in m.data for m in msgs)
        return n
    finally:
        await nc.close()


def stored(port: int, campaign: str) -> tuple[int, int] | None:
    try:
        rows = httpx.get(f"http://127.0.0.1:{port}/api/runs", params={"campaign": campaign, "limit": 100_000},
                         timeout=5).json()
    except (httpx.HTTPError, ValueError):
        return None
    return len(rows), len({r["run_id"] for r in rows})


async def scenario(tmp: Path, nodes: int = 10, reps: int = 30, full_for_s: float = FULL_FOR_S) -> dict[str, Any]:
    disk = tmp / "disk"
    why = mount_tmpfs(disk)
    if why:
        return {"skipped": why}
    server = natsserver.start(tmp / "jetstream", log_file=tmp / "nats.log")
    port = natsserver.free_port()
    env = {**os.environ, "PODTAX_NATS_URL": server.url, "PODTAX_LOG_FORMAT": "text",
           "PODTAX_ANALYZER_DB": str(disk / "podtax.duckdb"), "PODTAX_ANALYZER_PORT": str(port),
           "PODTAX_ANALYZER_BATCH": "50"}

    def start_analyzer() -> subprocess.Popen[bytes]:
        with open(tmp / "analyzer.log", "ab") as out:
            return subprocess.Popen([sys.executable, "-m", "podtax_analyzer"], env=env, stdout=out,
                                    stderr=subprocess.STDOUT)

    analyzer = start_analyzer()
    restarts = 0
    runner = RunnerProcess(server.url, tmp / "runner.log")
    name = "fulldisk"
    try:
        bus = await Bus.connect(server.url, "faults/full-disk")
        await bus.ensure_streams()
        names = [f"sim-{i:03d}" for i in range(nodes)]
        await seed_nodes(bus, names)
        runner.start()
        await submit(bus, campaign_spec(name, names, reps, combos=2, spacing="0.05s"))
        h = await wait_header(bus, name, lambda h: True, 60, "the campaign to be planned")
        total = h["runs"]
        await wait_header(bus, name, lambda h: finished_runs(h) >= 0.2 * total, 300, "20% of the runs")
        filled = fill(disk / "filler")
        t_full = time.monotonic()
        while time.monotonic() - t_full < full_for_s:
            if analyzer.poll() is not None:  # a supervisor restarts it; the disk is still full
                analyzer, restarts = start_analyzer(), restarts + 1
            await asyncio.sleep(0.5)
        (disk / "filler").unlink()
        await wait_header(bus, name, lambda h: h.get("finished_at"), 300, "the campaign to finish")
        await bus.close()
        out = await tally(server.url, name)
        deadline = time.monotonic() + 120
        while True:
            if analyzer.poll() is not None:
                analyzer, restarts = start_analyzer(), restarts + 1
            got = await asyncio.to_thread(stored, port, name)
            if (got and got[1] >= out["results"]) or time.monotonic() > deadline:
                break
            await asyncio.sleep(1)
        rows, distinct = got or (0, 0)
        dlq = await dead_letters(server.url, name)
        out.update({"stored": distinct, "duplicates": out["duplicates"] + rows - distinct, "dead_lettered": dlq,
                    "lost": out["planned"] - distinct - out["failures"], "filled_mb": filled >> 20,
                    "analyzer_restarts": restarts})
        return out
    finally:
        runner.stop()
        if analyzer.poll() is None:
            analyzer.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                analyzer.wait(15)
        server.stop()
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="podtax-fault-") as tmp:
        return asyncio.run(scenario(Path(tmp)))


if __name__ == "__main__":
    print(run())
