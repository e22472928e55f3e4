"""SIGTERM while a service's request waits for NATS to be back (natsagain.again_if_reconnected: nats-server killed
during the request, nats-py away). The wait did not look at the service's stop event: the service went on waiting
until NATS was back or 60 s ran out (Kubernetes kills a pod 30 s after its SIGTERM). Now the wait ends at once with
Stopped, the service exits 0 ('stopped while waiting for NATS'), and the message whose dead letter was under way
stays unacked: delivered again later, nothing lost."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from podtax import natsserver, subjects
from podtax.bus import Bus

from tests.paused import kill_nats, pause, start_nats_again
from tests.servicestop import send_undecodable, service, sigterm_once_waiting, stopped_cleanly, until_made

BAD = 2000  # undecodable messages: the parser dead-letters them one by one, so one is under way at the pause


async def _publish_bad(url: str) -> None:
    """BAD undecodable raw logs, once the parser's consumer is there; returns once the parser dead-letters them (a
    pause before its first fetch left nothing waiting for NATS, so "waiting for NATS at" never came: 2 of 3 runs
    at load 3-4)."""
    bus = await Bus.connect(url, "test/sigterm")
    try:
        await until_made(lambda: bus.js.consumer_info(subjects.STREAM, "parser"))
        await send_undecodable(bus, f"{subjects.RUN_LOG}.host.n1", BAD)
        for _ in range(300):
            if (await bus.js.stream_info(subjects.DLQ_STREAM)).state.messages:
                break
            await asyncio.sleep(0.1)
    finally:
        await bus.close()


async def _left(url: str) -> tuple[int, int, int]:
    """(messages left to deliver again, consumer deliveries acked or termed, dead letters stored)."""
    bus = await Bus.connect(url, "test/sigterm")
    try:
        info = await bus.js.consumer_info(subjects.STREAM, "parser")
        dead = (await bus.js.stream_info(subjects.DLQ_STREAM)).state.messages
        return info.num_ack_pending + info.num_pending, info.ack_floor.consumer_seq, dead
    finally:
        await bus.close()


def test_sigterm_ends_a_wait_for_nats_at_once(nats_server: natsserver.NatsServer, tmp_path: Path) -> None:
    log = tmp_path / "parser.log"
    env = {**os.environ, "PODTAX_NATS_URL": nats_server.url, "PODTAX_HEALTH_PORT": "0"}
    with service("podtax_parser", env, log) as proc:
        asyncio.run(_publish_bad(nats_server.url))
        pause(nats_server.proc.pid)  # the dead letter under way is never answered
        kill_nats(nats_server)
        ended = sigterm_once_waiting(proc, log, 10)
        stopped_cleanly(ended)
        assert "podtax-parser stopped while waiting for NATS" in ended.log, ended.log
        start_nats_again(nats_server, tmp_path / "nats2.log")
        left, done, dead = asyncio.run(_left(nats_server.url))
        assert left > 0 and dead >= done, (left, done, dead)  # every message termed was dead-lettered first
