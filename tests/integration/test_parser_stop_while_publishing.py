"""A SIGTERM while the parser's pipelined publish of a batch's outcomes (Bus.publish_many) waited for JetStream's
acks, with NATS killed (or hung: paused), was seen only once those acks timed out (PUBLISH_ACK_TIMEOUT_S, 30 s: the
end of Kubernetes' grace): the batch then said 'NATS acked ... within 30 s', held, and the parser stopped. Now the
stop ends the wait for the acks after natsagain.STOP_GRACE_S: exit 0, 'stopped while waiting for NATS', the batch's
raw logs unacked (delivered again; its outcomes de-duplicated by their Nats-Msg-Id), never acked without their
outcomes. Real nats-server paused (then killed), the real podtax-parser entry point."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

from podtax import events, natsagain, natsserver, subjects
from podtax.bus import Bus

from tests.paused import kill_nats, pause, start_nats_again
from tests.pongproxy import pong_then_hang
from tests.servicestop import Ended, service, sigterm, stopped_cleanly

LOGS = 6000  # a backlog the parser works through in batches, so one batch's publish is under way at the pause
LOG = Path(__file__).parents[1] / "corpus/debian12-x86_64/sysbench-cpu-prime100000-1t.log"


async def publish_logs(url: str) -> None:
    bus = await Bus.connect(url, "test/stop-publishing")
    try:
        await bus.ensure_streams()
        text, now = LOG.read_text(), events.now()
        for first in range(0, LOGS, 2000):
            await bus.publish_many([events.raw_log(events.RawLog(
                run=events.RunSpec(run_id=f"sp-{i}", campaign="sp", node="n1", env="host", test="sysbench-cpu",
                                   params={"threads": 1, "max_prime": 100000, "events": 200}),
                stdout=text, exit_code=0, started_at=now, ended_at=now), "test")
                for i in range(first, min(LOGS, first + 2000))])
    finally:
        await bus.close()


async def results_published(url: str, at_least: int) -> None:
    """Return once the parser has published `at_least` results (a core subscription beside the stream)."""
    bus = await Bus.connect(url, "test/stop-publishing")
    seen = 0

    async def count(_msg: object) -> None:
        nonlocal seen
        seen += 1

    try:
        await bus.nc.subscribe(f"{subjects.RUN_RESULT}.>", cb=count)
        while seen < at_least:
            await asyncio.sleep(0.01)
    finally:
        await bus.nc.close()


def sigterm_while_publishing(server: natsserver.NatsServer, tmp_path: Path, kill: bool) -> Ended:
    """The parser working through LOGS raw logs; once it has published results, nats-server paused (and killed:
    `kill`), then, 1 s later (the batch under way waits for its acks), SIGTERM."""
    log = tmp_path / "parser.log"
    asyncio.run(publish_logs(server.url))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}, "PODTAX_NATS_URL": server.url,
           "PODTAX_HEALTH_PORT": "0", "PODTAX_LOG_FORMAT": "text"}
    with service("podtax_parser", env, log) as proc:
        asyncio.run(asyncio.wait_for(results_published(server.url, 300), 120))
        pause(server.proc.pid)  # the acks of the publishes under way never come
        if kill:
            kill_nats(server)
        time.sleep(1)
        assert proc.poll() is None, log.read_text()
        return sigterm(proc, log, 90)


async def acked_and_stored(url: str) -> tuple[int, int]:
    """How many raw logs the parser's consumer acked (all up to its ack floor: it acks in order, batch after batch)
    and how many results the stream holds."""
    bus = await Bus.connect(url, "test/stop-publishing")
    try:
        info = await bus.js.consumer_info(subjects.STREAM, "parser")
        stored = await bus.js.stream_info(subjects.STREAM, subjects_filter=f"{subjects.RUN_RESULT}.>")
        results = sum((stored.state.subjects or {}).values())
        return info.ack_floor.stream_seq, results
    finally:
        await bus.close()


def _stopped_cleanly(stopped: Ended) -> None:
    stopped_cleanly(stopped)
    # before: the acks' 30 s timeout ended the wait ('NATS acked 0 of 256 published events within 30 s ...')
    assert "published events within" not in stopped.after, stopped.after
    assert "podtax-parser stopped while waiting for NATS" in stopped.after, stopped.after


def test_sigterm_ends_the_wait_for_acks_as_nats_died(nats_server: natsserver.NatsServer, tmp_path: Path) -> None:
    stopped = sigterm_while_publishing(nats_server, tmp_path, kill=True)
    _stopped_cleanly(stopped)
    start_nats_again(nats_server, tmp_path / "nats-again.log")
    acked, results = asyncio.run(acked_and_stored(nats_server.url))
    # the raw logs are the stream's first LOGS messages: every one acked has its result stored (the acks of the last
    # batches acked before the pause may have been lost with the server: those logs are delivered again)
    assert acked < LOGS and results >= acked, (acked, results)


def test_sigterm_ends_the_wait_for_acks_of_a_server_that_hangs(nats_server: natsserver.NatsServer,
                                                               tmp_path: Path) -> None:
    """Then its connection's close waited 15 s more for the hung server (nats-py's drain: drain_timeout 5 s, then a
    flush's 10 s), saying nothing of it. Now it closes once the server has not answered a PING within
    natsclose.DRAIN_S (3 s), saying so (the line is what fails before: the exit is given 90 s, no timed assertion);
    the server resumed, every raw log acked has its result stored."""
    stopped = sigterm_while_publishing(nats_server, tmp_path, kill=False)
    _stopped_cleanly(stopped)
    assert "did not answer a PING within 3 s: closed without draining" in stopped.after, stopped.after
    nats_server.proc.send_signal(signal.SIGCONT)  # the hung server comes back, with what the parser sent it
    acked, results = asyncio.run(acked_and_stored(nats_server.url))
    assert acked < LOGS and results >= acked, (acked, results)


def test_a_busy_parser_stops_when_nats_hangs_right_after_the_ping(nats_server: natsserver.NatsServer,
                                                                   tmp_path: Path) -> None:
    """The parser working through its backlog is stopped; its server answers the close's PING and hangs before the
    drain is done (tests.pongproxy). Before: nats-py's whole drain (5 + 10 s), without a word; now closed once
    natsclose.DRAIN_S is up, saying so. Nothing lost: the server resumed, every raw log acked has its result stored
    (what was not acked is delivered again)."""
    log = tmp_path / "parser.log"
    asyncio.run(publish_logs(nats_server.url))
    with pong_then_hang(nats_server.port, nats_server.proc.pid) as relay:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}, "PODTAX_NATS_URL": relay.url,
               "PODTAX_HEALTH_PORT": "0", "PODTAX_LOG_FORMAT": "text"}
        with service("podtax_parser", env, log) as proc:
            asyncio.run(asyncio.wait_for(results_published(nats_server.url, 300), 120))
            relay.arm()
            stopped = sigterm(proc, log, 90)
        assert relay.paused.is_set(), stopped.log
    assert stopped.returncode == 0 and "Traceback" not in stopped.log, stopped.log
    assert "never retrieved" not in stopped.log, stopped.log
    assert "answered a PING but did not finish draining within 3 s" in stopped.after, stopped.after
    nats_server.proc.send_signal(signal.SIGCONT)
    acked, results = asyncio.run(acked_and_stored(nats_server.url))
    assert acked < LOGS and results >= acked, (acked, results)


async def _published_once_stopped(url: str) -> tuple[int, int]:
    """Raw logs published (pipelined) with the service's stop event already set, NATS live: (duplicates, stored)."""
    bus = await Bus.connect(url, "test/stop-publishing")
    try:
        await bus.ensure_streams()
        stop = asyncio.Event()
        natsagain.watch_stop(stop)  # what bus.stop_on_signals does in a service
        stop.set()
        now = events.now()
        duplicates = await bus.publish_many([events.raw_log(events.RawLog(
            run=events.RunSpec(run_id=f"live-{i}", campaign="sp", node="n1", env="host", test="sysbench-cpu",
                               params={"threads": 1}), stdout="x", exit_code=0, started_at=now, ended_at=now), "test")
            for i in range(200)])
        return duplicates, (await bus.js.stream_info(subjects.STREAM)).state.messages
    finally:
        await bus.close()


def test_a_live_servers_acks_still_come_after_the_stop(nats_server: natsserver.NatsServer) -> None:
    """The stop ends the wait for acks only after STOP_GRACE_S: a live server's acks (a batch drained after the
    SIGTERM) still come, and the batch is acked. (It fails with the grace set to 0: Stopped.)"""
    assert asyncio.run(_published_once_stopped(nats_server.url)) == (0, 200)
