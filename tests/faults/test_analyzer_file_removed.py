"""The analyzer's DuckDB file removed while it runs (a clean-up script, a wrong `rm`; audit hH). The analyzer kept
the file open and went on: /healthz said 'ok', and every result was stored and acked into the removed file, all of
it lost when the analyzer stopped (its next start made a new, empty file). Now /healthz says 503 with what happened
and how to get the file back, nothing more is stored (new events wait in NATS), and following what it says keeps
every result: the ones stored before the removal and the ones that came after."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from podtax import events, natsserver
from podtax.bus import Bus

T0 = datetime(2026, 1, 5, 8, tzinfo=UTC)


def failed(run_id: str) -> events.Envelope:
    run = events.RunSpec(run_id=run_id, campaign="gone", node="node-1", env="host", test="sysbench-cpu",
                         params={"threads": 1}, cluster="local", attempt=1, timeout_s=60)
    return events.run_failed(events.RunFailed(run=run, stage="runner", reason="timeout", detail="x", started_at=T0,
                                              ended_at=T0 + timedelta(seconds=10)), "test")


def start(db: Path, nats_url: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}, "PODTAX_NATS_URL": nats_url,
           "PODTAX_ANALYZER_DB": str(db), "PODTAX_ANALYZER_PORT": str(port), "PODTAX_LOG_FORMAT": "text"}
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "podtax_analyzer"], env=env, stdout=out,
                                stderr=subprocess.STDOUT)


def until(what: str, check: Any, proc: subprocess.Popen[bytes], log: Path, timeout: float = 60) -> Any:
    """Poll `check()` until it returns something true; the analyzer's log is the message if it never does."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if got := check():
                return got
        except httpx.HTTPError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, f"{what}: {log.read_text(errors='replace')}"
        time.sleep(0.1)


def stored(port: int) -> set[str]:
    answer = httpx.get(f"http://127.0.0.1:{port}/api/runs", params={"campaign": "gone"}, timeout=5)
    return {r["run_id"] for r in answer.json()} if answer.status_code == 200 else set()


def health(port: int) -> str | None:
    """/healthz's storage line while it answers 503."""
    answer = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
    return answer.json()["storage"] if answer.status_code == 503 else None


def copied_back(storage: str, db: Path, port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Do what /healthz says; then it said 'replaced by another file: move the new file away' (review r5 L1)."""
    source = re.search(r"cp (/proc/\d+/fd/\d+) ", storage)
    assert source, storage
    shutil.copyfile(source[1], db)
    storage = until("/healthz after the file was copied back",
                    lambda: (said := health(port)) and "was removed while" not in said and said, proc, log)
    assert "a file is back at" in storage and "restart" in storage, storage
    assert "move the new file away" not in storage, storage


@pytest.mark.parametrize("copied", [True, False])
async def test_a_removed_file_is_said_and_nothing_is_lost(tmp_path: Path, nats_url: str, copied: bool) -> None:
    """copied=False: nobody copies the file back and the analyzer is stopped (in Kubernetes, the liveness probe
    restarts it on /healthz's 503 within a minute; review r5 M2): what it had stored was dropped with the removed
    file and the next start made an empty one; now it puts the file back as it stops."""
    db, log = tmp_path / "data" / "podtax.duckdb", tmp_path / "analyzer.log"
    bus = await Bus.connect(nats_url, "test/removed")
    try:
        await bus.ensure_streams()
        port = natsserver.free_port()
        proc = start(db, nats_url, port, log)
        try:
            await bus.publish(failed("before"))
            until("the first result stored", lambda: "before" in stored(port), proc, log)
            db.unlink()
            storage = until("/healthz saying the file was removed", lambda: health(port), proc, log)
            assert "was removed while the analyzer ran" in storage, storage
            await bus.publish(failed("after"))  # held in NATS, not written into the removed file
            if copied:
                copied_back(storage, db, port, proc, log)
        finally:
            proc.terminate()
            assert proc.wait(60) == 0, log.read_text(errors="replace")
        assert copied or "put back there as it stops" in log.read_text(errors="replace")
        port = natsserver.free_port()
        proc = start(db, nats_url, port, log)
        try:
            until("both results stored", lambda: stored(port) == {"before", "after"}, proc, log)
        finally:
            proc.terminate()
            proc.wait(60)
    finally:
        await bus.close()
