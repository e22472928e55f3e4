"""The analyzer's disk refusing a write mid-batch, then taking writes again (audit hG), through the real analyzer
process, DuckDB file, parser and nats-server. A commit refused in DuckDB's WAL (a full disk: ENOSPC; here a file
size limit: EFBIG, which needs no root and can be lifted from outside with prlimit) aborts DuckDB's transaction, and
the analyzer's ROLLBACK then raised 'TransactionException: ... cannot rollback - no transaction is active', which
replaced the cause: the log and /healthz said that, and 'free space on its disk' for a file size limit. Now the
cause is said with its fix, and once the disk takes writes every held result is stored once."""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import httpx
from podtax import events, natsserver
from podtax.bus import Bus
from podtax_analyzer.store import Store

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



@dataclass
class Analyzer:
    proc: subprocess.Popen[bytes]
    port: int


@contextlib.asynccontextmanager
async def limited_analyzer(nats_url: str, tmp_path: Path, db: Path, limit: int) -> AsyncIterator[Analyzer]:
    """The parser, and the analyzer in its own process on `db` under a file size limit of `limit` bytes (the soft
    limit only: its owner may raise it again, prlimit); yields once its API answers, stops the analyzer after."""
    port = natsserver.free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}, "PODTAX_NATS_URL": nats_url,
           "PODTAX_ANALYZER_DB": str(db), "PODTAX_ANALYZER_PORT": str(port), "PODTAX_LOG_FORMAT": "text"}
    soft = (limit, resource.RLIM_INFINITY)
    async with services(nats_url, tmp_path) as s:
        await s.parser()
        with open(tmp_path / "analyzer.log", "wb") as out:
            proc = subprocess.Popen([sys.executable, "-m", "podtax_analyzer"], env=env, stdout=out,
                                    stderr=subprocess.STDOUT,
                                    preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, soft))  # noqa: PLW1509
        try:
            await wait_for(lambda: health(port), 60, "the analyzer's API")
            yield Analyzer(proc, port)
        finally:
            proc.terminate()
            proc.wait(60)


async def publish_logs(nats_url: str, prefix: str, campaign: str, n: int) -> None:
    """`n` sysbench logs as raw-log events (runs `<prefix>-<i>`), 2,000 a batch."""
    bus = await Bus.connect(nats_url, "test")
    text, now = LOG.read_text(), events.now()
    for first in range(0, n, 2000):
        await bus.publish_many([events.raw_log(events.RawLog(
            run=events.RunSpec(run_id=f"{prefix}-{i}", campaign=campaign, node="n1", env="host", test="sysbench-cpu",
                               params={"threads": 1, "max_prime": 100000, "events": 200}),
            stdout=text, exit_code=0, started_at=now, ended_at=now), "test")
            for i in range(first, min(n, first + 2000))])
    await bus.close()


def unlimit(proc: subprocess.Popen[bytes]) -> None:
    """Lift the file size limit of `proc` (the disk takes writes again)."""
    resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


async def test_a_write_refused_mid_batch_is_named_and_storing_resumes_once_the_disk_takes_writes(
        nats_url: str, tmp_path: Path) -> None:
    db = tmp_path / "podtax.duckdb"
    async with limited_analyzer(nats_url, tmp_path, db, LIMIT) as analyzer:
        port = analyzer.port
        await publish_logs(nats_url, "w", "wf", N)
        status, body = await wait_for(lambda: (h := health(port)) and h[0] != 200 and h, 60, "the refused write")
        assert status == 503 and body["status"] == "storage unavailable", (status, body)
        assert "File too large" in body["storage"], body  # was 'cannot rollback - no transaction is active'
        assert "a file size limit stops the file growing: raise it (ulimit -f" in body["storage"], body
        unlimit(analyzer.proc)
        await wait_for(lambda: (h := health(port)) and h[0] == 200 and h[1]["runs"] == N, 120,
                       f"all {N} results once the disk takes writes")
    log = (tmp_path / "analyzer.log").read_text()
    assert "cannot rollback" not in log, log
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*), count(DISTINCT run_id) FROM runs").fetchone() == (N, N)
    assert con.execute("SELECT count(*), count(DISTINCT run_id) FROM raw_logs").fetchone() == (N, N)
    con.close()



async def test_a_database_duckdb_invalidated_is_opened_again_once_the_disk_takes_writes(
        nats_url: str, tmp_path: Path) -> None:
    """A checkpoint that cannot write the file (DuckDB's own, once its WAL passes 16 MB; a full disk, here a file
    size limit just above the file's size) makes DuckDB invalidate the database: every later statement failed
    ('database has been invalidated ... must be restarted'), the log named the cause on no line (DuckDB gives it on
    a second line, 'Original error: ...'), /healthz answered 500 with a traceback, and nothing was stored again
    until someone restarted the analyzer (`podtax up` does not: it still runs). Now /healthz says 503 and why, the
    log names the cause and its fix, and the analyzer opens the file again itself once it can (its WAL replayed):
    every result stored once."""
    db = tmp_path / "podtax.duckdb"
    store = Store(db)  # the analyzer's own file, 20 MB: the WAL (16 MB before DuckDB checkpoints) fits below the limit
    store.con.execute("CREATE TABLE pad AS SELECT range AS i, md5(range::VARCHAR) || md5((range + 1)::VARCHAR) AS s "
                      "FROM range(600000)")
    store.con.execute("CHECKPOINT")
    store.close()
    n = 16_000  # about 16 MB of WAL with their results
    async with limited_analyzer(nats_url, tmp_path, db, db.stat().st_size + 65536) as analyzer:
        port = analyzer.port
        await publish_logs(nats_url, "v", "inv", n)
        await wait_for(lambda: "invalidated" in (tmp_path / "analyzer.log").read_text(), 180, "the invalidation")
        status, body = await wait_for(lambda: (h := health(port)) and h[0] != 200 and h, 30, "/healthz's 503")
        assert status == 503 and body["status"] == "storage unavailable", (status, body)  # was 500, no body
        unlimit(analyzer.proc)
        await wait_for(lambda: (h := health(port)) and h[0] == 200 and h[1]["runs"] == n, 180,
                       f"all {n} results once the file can grow")
    log = (tmp_path / "analyzer.log").read_text()
    assert "Original error: \"Failed to create checkpoint because of error: Could not write file" in log, log[-3000:]
    assert "raise its file size limit (ulimit -f" in log and "opened again after DuckDB invalidated it" in log
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*), count(DISTINCT run_id) FROM runs").fetchone() == (n, n)
    assert con.execute("SELECT count(*), count(DISTINCT run_id) FROM raw_logs").fetchone() == (n, n)
    con.close()
