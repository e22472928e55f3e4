"""The analyzer's disk refusing a write mid-batch, then taking writes again (audit hG), through the real analyzer
process, DuckDB file, parser and nats-server. A commit refused in DuckDB's WAL (a full disk: ENOSPC; here a file
size limit: EFBIG, which needs no root and can be lifted from outside with prlimit) aborts DuckDB's transaction, and
the analyzer's ROLLBACK then raised 'TransactionException: ... cannot rollback - no transaction is active', which
replaced the cause: the log and /healthz said that, and 'free space on its disk' for a file size limit. Now the
cause is said with its fix, and once the disk takes writes every held result is stored once."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import httpx
from podtax import events, natsserver
from podtax.bus import Bus

from tests.integration.harness import services, wait_for

N = 1500
LOG = Path(__file__).parents[1] / "corpus/debian12-x86_64/sysbench-cpu-prime100000-1t.log"
LIMIT = 1_000_000  # bytes: DuckDB's new file and WAL stay below it until the first batch of logs


def health(port: int) -> tuple[int, dict[str, Any]] | None:
    try:
        answer = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
    except httpx.HTTPError:
        return None
    return answer.status_code, (answer.json() if answer.headers.get("content-type") == "application/json" else {})


async def test_a_write_refused_mid_batch_is_named_and_storing_resumes_once_the_disk_takes_writes(
        nats_url: str, tmp_path: Path) -> None:
    port = natsserver.free_port()
    db = tmp_path / "podtax.duckdb"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}, "PODTAX_NATS_URL": nats_url,
           "PODTAX_ANALYZER_DB": str(db), "PODTAX_ANALYZER_PORT": str(port), "PODTAX_LOG_FORMAT": "text"}
    limit = (LIMIT, resource.RLIM_INFINITY)  # the soft limit only: its owner may raise it again (prlimit)
    text = LOG.read_text()
    async with services(nats_url, tmp_path) as s:
        await s.parser()
        with open(tmp_path / "analyzer.log", "wb") as out:
            analyzer = subprocess.Popen([sys.executable, "-m", "podtax_analyzer"], env=env, stdout=out,
                                        stderr=subprocess.STDOUT,
                                        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, limit))  # noqa: PLW1509
        try:
            await wait_for(lambda: health(port), 60, "the analyzer's API")
            bus = await Bus.connect(nats_url, "test")
            now = events.now()
            await bus.publish_many([events.raw_log(events.RawLog(
                run=events.RunSpec(run_id=f"w-{i}", campaign="wf", node="n1", env="host", test="sysbench-cpu",
                                   params={"threads": 1, "max_prime": 100000, "events": 200}),
                stdout=text, exit_code=0, started_at=now, ended_at=now), "test") for i in range(N)])
            await bus.close()
            status, body = await wait_for(lambda: (h := health(port)) and h[0] != 200 and h, 60, "the refused write")
            assert status == 503 and body["status"] == "storage unavailable", (status, body)
            assert "File too large" in body["storage"], body  # was 'cannot rollback - no transaction is active'
            assert "a file size limit stops the file growing: raise it (ulimit -f" in body["storage"], body
            resource.prlimit(analyzer.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            await wait_for(lambda: (h := health(port)) and h[0] == 200 and h[1]["runs"] == N, 120,
                           f"all {N} results once the disk takes writes")
        finally:
            analyzer.terminate()
            analyzer.wait(30)
    log = (tmp_path / "analyzer.log").read_text()
    assert "cannot rollback" not in log, log
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*), count(DISTINCT run_id) FROM runs").fetchone() == (N, N)
    assert con.execute("SELECT count(*), count(DISTINCT run_id) FROM raw_logs").fetchone() == (N, N)
    con.close()
