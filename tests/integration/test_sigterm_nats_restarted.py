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
from tests.servicestop import publish_undecodable, service, sigterm_once_waiting, stopped_cleanly, until

# undecodable raw logs, all stored before the parser starts and all fetched in its first pull (its batch is BAD):
# from its first dead letter on, it dead-letters them one by one with no fetch between, so a dead letter is under way
# at the pause. Published while the parser pulled, they came in batches of a few (3 to 90 dead letters before the
# pause at load 20), and a pause during a pull left nothing waiting for NATS: 'waiting for NATS at' never came
# (3 of 4 runs with a batch of 1, where every other request is a pull).
BAD = 2000


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
    asyncio.run(publish_undecodable(nats_server.url, f"{subjects.RUN_LOG}.host.n1", BAD))
    env = {**os.environ, "PODTAX_NATS_URL": nats_server.url, "PODTAX_HEALTH_PORT": "0",
           "PODTAX_PARSER_BATCH": str(BAD)}
    with service("podtax_parser", env, log) as proc:
        text = until(log, proc, "dead-lettered")  # its one pull is answered: dead letters follow, no request between
        assert "dead-lettered" in text and proc.poll() is None, text
        pause(nats_server.proc.pid)  # the dead letter under way is never answered
        kill_nats(nats_server)
        ended = sigterm_once_waiting(proc, log, 10)
        stopped_cleanly(ended)
        assert "podtax-parser stopped while waiting for NATS" in ended.log, ended.log
        start_nats_again(nats_server, tmp_path / "nats2.log")
        left, done, dead = asyncio.run(_left(nats_server.url))
        assert left > 0 and dead >= done, (left, done, dead)  # every message termed was dead-lettered first
