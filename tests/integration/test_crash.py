"""Killing the analyzer (SIGKILL) while results flow, then starting it again, loses no result
and duplicates none: acks come only after the DuckDB commit, and inserts are keyed on run id."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import httpx
from podtax import events, natsserver, subjects
from podtax.bus import Bus

from tests.integration.harness import services, wait_for

N = 3000
LOG = Path(__file__).parents[1] / "corpus/debian12-x86_64/sysbench-cpu-prime100000-1t.log"


def start_analyzer(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "podtax_analyzer"], env=env, stdout=out,
                                stderr=subprocess.STDOUT)


def runs_stored(port: int) -> int:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).json()["runs"]
    except (httpx.HTTPError, ValueError):
        return -1


async def test_sigkill_analyzer_mid_stream_loses_and_duplicates_nothing(nats_url: str, tmp_path: Path) -> None:
    port = natsserver.free_port()
    db = tmp_path / "crash.duckdb"
    env = {**os.environ, "PODTAX_NATS_URL": nats_url, "PODTAX_ANALYZER_DB": str(db),
           "PODTAX_ANALYZER_PORT": str(port), "PODTAX_ANALYZER_BATCH": "100"}
    text = LOG.read_text()
    async with services(nats_url, tmp_path) as s:
        await s.parser()
        analyzer = start_analyzer(env, tmp_path / "analyzer.log")
        await wait_for(lambda: runs_stored(port) >= 0, 30, "the analyzer to start")
        bus = await Bus.connect(nats_url, "test")
        now = events.now()
        await bus.publish_many([events.raw_log(events.RawLog(
            run=events.RunSpec(run_id=f"k-{i}", campaign="crash", node="n1", env="host", test="sysbench-cpu",
                               params={"threads": 1, "max_prime": 100000, "events": 200}),
            stdout=text, exit_code=0, started_at=now, ended_at=now), "test") for i in range(N)])
        stored_before_kill = await wait_for(lambda: (n := runs_stored(port)) > 0 and n, 60, "first commits")
        analyzer.send_signal(signal.SIGKILL)
        analyzer.wait(10)
        assert stored_before_kill < N, "the kill came too late to test anything; lower the batch size"
        time.sleep(0.5)
        analyzer = start_analyzer(env, tmp_path / "analyzer.log")
        try:
            await wait_for(lambda: runs_stored(port) == N, 120, f"all {N} results after the restart")
            # Every result can be stored while raw logs of the batch the kill cut short are still unacked: they
            # come back only after the consumer's ack wait (60 s). Wait until the analyzer acked everything.
            deadline = time.monotonic() + 150
            while time.monotonic() < deadline:
                info = await bus.js.consumer_info(subjects.STREAM, "analyzer")
                if not info.num_pending and not info.num_ack_pending:
                    break
                await asyncio.sleep(0.5)
            assert not info.num_pending and not info.num_ack_pending, f"the analyzer never acked everything: {info}"
        finally:
            analyzer.terminate()
            analyzer.wait(30)
        await bus.close()
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*), count(DISTINCT run_id) FROM runs").fetchone() == (N, N)
    assert con.execute("SELECT count(*), count(DISTINCT run_id) FROM raw_logs").fetchone() == (N, N)
    assert con.execute("SELECT count(DISTINCT run_id) FROM metrics").fetchone() == (N,)
    dup = con.execute("SELECT count(*) FROM (SELECT run_id, name FROM metrics GROUP BY ALL HAVING count(*) > 1)")
    assert dup.fetchone() == (0,)
