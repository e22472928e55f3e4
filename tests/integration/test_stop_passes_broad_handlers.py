"""A SIGTERM while a request waits for NATS to be back raises natsagain.Stopped, a plain Exception: a broad
`except Exception` on its way swallowed it. The analyzer's score publication (its sweep looks the scores bucket up
again after rows were deleted) logged 'publishing scores failed; will retry' with Stopped's traceback, then stopped.
Now it passes through: the service says it stopped while waiting for NATS, no traceback, exit 0. Real nats-server
killed, the real podtax-analyzer entry point, a real DuckDB file holding one imported capture twice (POST
/api/imports/twice then deletes a copy: the sweep is due, and the kept run, without an outcome, has no score, so the
publication puts nothing before the lookup)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
import urllib.request
from pathlib import Path

import pytest
from podtax import natsserver, subjects
from podtax.bus import Bus
from podtax.natsagain import Stopped
from podtax_analyzer.service import said_if_crashed
from podtax_analyzer.store import Store

from tests.paused import kill_nats, pause
from tests.servicestop import publish_undecodable, service, sigterm_once_waiting, stopped_cleanly, until, until_made

TOKEN = "stop-test-token-0123456789abcdef"  # POST needs one
BAD = 2000  # undecodable cancellations: dead-lettered one by one, so one is under way at the pause
NODES = ("Node-1", "node-1")  # two spellings of one node: the same capture stored twice (imports_twice.py)
STOP_S = 120.0  # a bound for a hang, not a timing: a stop is waited for until it exits (10 s ran out under heavy load)
LOOKS = 1200  # a log line is looked for every 0.1 s up to 120 s, returned as soon as it is there


def _db_with_a_capture_twice(path: Path) -> None:
    store = Store(path)
    try:
        for i, node in enumerate(NODES):
            store.con.execute(
                "INSERT INTO raw_logs VALUES (?, ?, 'c1', 'cl', ?, 'host', 'sysbench-cpu', '{}', '', 1, "
                "TIMESTAMPTZ '2026-01-01 00:00:00+00', TIMESTAMPTZ '2026-01-01 00:01:00+00', 0, 'out', '', NULL, "
                "false, false, '{}', 'manifest.csv', TIMESTAMPTZ '2026-01-01 00:02:00+00')", [f"r{i}", f"e{i}", node])
    finally:
        store.close()


async def _ready(url: str) -> None:
    """Once the analyzer consumes and its scores bucket is there (its restore at start is done with it)."""
    bus = await Bus.connect(url, "test/stop")

    async def made() -> None:
        await bus.js.consumer_info(subjects.STREAM, "analyzer")
        await bus.js.stream_info(f"KV_{subjects.SCORES_BUCKET}")

    try:
        await until_made(made)
    finally:
        await bus.close()


def test_sigterm_while_the_score_sweep_waits_for_nats_is_a_clean_stop(nats_server: natsserver.NatsServer,
                                                                     tmp_path: Path) -> None:
    db, log, port = tmp_path / "a.duckdb", tmp_path / "analyzer.log", natsserver.free_port()
    _db_with_a_capture_twice(db)
    env = {**os.environ, "PODTAX_NATS_URL": nats_server.url, "PODTAX_HEALTH_PORT": "0", "PODTAX_ANALYZER_DB": str(db),
           "PODTAX_ANALYZER_PORT": str(port), "PODTAX_API_TOKEN": TOKEN}
    with service("podtax_analyzer", env, log) as proc:
        asyncio.run(_ready(nats_server.url))
        time.sleep(0.5)  # the restore's last requests answered
        kill_nats(nats_server)
        with urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/api/imports/twice",
                                                           method="POST", headers={"Authorization": f"Bearer {TOKEN}"}),
                                    timeout=30) as answer:
            assert [t["run_id"] for t in json.load(answer)] == ["r0"]  # Node-1's copy goes, node-1's run stays
        ended = sigterm_once_waiting(proc, log, STOP_S, LOOKS)
        stopped_cleanly(ended)  # and 'stopped while waiting for NATS'
        assert "publishing scores failed" not in ended.log, ended.log


def test_sigterm_while_the_agent_takes_waiting_cancellations_is_a_clean_stop(nats_server: natsserver.NatsServer,
                                                                           tmp_path: Path) -> None:
    """The host agent takes the cancellations waiting before any run request (take_waiting_cancellations); its broad
    handler took Stopped for NATS slow ('the cancellations waiting were not all taken ... (Stopped: ...)') and went on
    starting: its run requests' consumer then asked NATS, away, up to nats-py's 5 s timeout before stopping."""
    log = tmp_path / "agent.log"
    # BAD undecodable cancellations waiting before the agent starts: it takes them first, dead-lettering each
    asyncio.run(publish_undecodable(nats_server.url, f"{subjects.CAMPAIGN_CANCELLED}.c1", BAD))
    env = {**os.environ, "PODTAX_NATS_URL": nats_server.url, "PODTAX_HEALTH_PORT": "0", "PODTAX_AGENT_NODE": "n1",
           "PODTAX_AGENT_WORKDIR": str(tmp_path / "work"), "PODTAX_AGENT_STATE_DIR": str(tmp_path / "state")}
    with service("podtax_host_agent", env, log) as proc:
        text = until(log, proc, "dead-lettered", LOOKS)
        assert "dead-lettered" in text and proc.poll() is None, text
        pause(nats_server.proc.pid)  # the dead letter under way is never answered
        kill_nats(nats_server)
        ended = sigterm_once_waiting(proc, log, STOP_S, LOOKS)
        stopped_cleanly(ended)
        assert "were not all taken" not in ended.log, ended.log
        assert "podtax-host-agent stopped while waiting for NATS" in ended.log, ended.log


def test_the_score_publisher_stopped_at_its_first_lookup_is_no_crash(caplog: pytest.LogCaptureFixture) -> None:
    """The publisher's first scores bucket lookup (publish_updates) is outside its loop's handlers: Stopped there ended
    its task, and said_if_crashed logged 'publishing scores stopped: Stopped ...' with a traceback. A real error is
    still said."""
    async def ended_with(exc: Exception) -> None:
        async def publisher() -> None:
            raise exc

        task = asyncio.create_task(publisher())
        task.add_done_callback(said_if_crashed)
        await asyncio.gather(task, return_exceptions=True)
        await asyncio.sleep(0)  # the done callback runs

    with caplog.at_level(logging.ERROR, logger="podtax.analyzer"):
        asyncio.run(ended_with(Stopped("stopped while waiting for NATS")))
        assert [r.getMessage() for r in caplog.records] == []
        asyncio.run(ended_with(RuntimeError("a bug")))
        assert [r.exc_info is not None for r in caplog.records] == [True], caplog.text
