"""A SIGTERM while the analyzer commits a batch and dead-letters the next fetch's messages (review r2, session 51).
consume_batches fetches and dead-letters the next batch while the previous one commits in a thread
(asyncio.to_thread); a dead letter waiting for NATS raised Stopped, and its `finally` cancelled the batch under way:
the cancel does not stop the thread, so serve()'s `finally` closed the store under the commit ('connection is busy
with another call', a traceback, exit 1). Now the batch under way ends first: exit 0, no traceback, the batch
committed. Real nats-server (killed after a pause), the real podtax-analyzer entry point, a real DuckDB file."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import duckdb
from podtax import natsserver, subjects
from podtax.bus import Bus

from tests.integration.harness import host_facts
from tests.paused import kill_nats, pause
from tests.servicestop import send_undecodable, service, sigterm, stopped_cleanly, until

BATCH = 1000  # host facts are written row by row: a commit of this many takes seconds, under way at the SIGTERM
BAD = 2000  # undecodable messages after them: the next fetch, dead-lettered one by one while the batch commits


async def _fill(url: str) -> None:
    bus = await Bus.connect(url, "test/stop")
    try:
        await bus.ensure_streams()
        await bus.publish_many([host_facts(i) for i in range(BATCH)])
        await send_undecodable(bus, f"{subjects.HOST_FACTS}.bad", BAD)
    finally:
        await bus.close()


def test_sigterm_while_a_batch_commits_waits_for_its_commit(nats_server: natsserver.NatsServer,
                                                           tmp_path: Path) -> None:
    db, log = tmp_path / "a.duckdb", tmp_path / "analyzer.log"
    asyncio.run(_fill(nats_server.url))
    env = {**os.environ, "PODTAX_NATS_URL": nats_server.url, "PODTAX_HEALTH_PORT": "0", "PODTAX_ANALYZER_DB": str(db),
           "PODTAX_ANALYZER_PORT": str(natsserver.free_port()), "PODTAX_ANALYZER_BATCH": str(BATCH)}
    with service("podtax_analyzer", env, log) as proc:
        # the first batch is committing: the next one is being read
        text = until(log, proc, "dead-lettered", tries=600, every_s=0.05)
        assert "dead-lettered" in text and proc.poll() is None, text
        pause(nats_server.proc.pid)  # the dead letter under way is never answered
        kill_nats(nats_server)
        ended = sigterm(proc, log, 60)
        stopped_cleanly(ended, shown=3000)  # and 'stopped while waiting for NATS'
        assert "connection is busy" not in ended.log, ended.log[-3000:]
        with duckdb.connect(str(db), read_only=True) as con:  # committed; not acked (NATS gone): delivered again
            assert con.execute("SELECT count(*) FROM host_facts").fetchone() == (BATCH,)
