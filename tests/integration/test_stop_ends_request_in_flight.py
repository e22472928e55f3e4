"""A SIGTERM while a request is in flight to a NATS server that no longer answers (paused: hung, overloaded) waited
for nats-py's 5 s timeout, and a timeout on that live connection is an answer to the caller: the parser's dead
letter under way was said 'could not dead-letter ...; dropped it' and its message termed, lost; to a server that
died, the request ran to that timeout before the stop was seen. Now the stop ends the wait for the answer
(natsagain, after STOP_GRACE_S): Stopped, exit 0, the message left unacked for redelivery. Real nats-server paused
(and killed), the real podtax-parser entry point."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from podtax import natsagain, natsserver, subjects
from podtax.bus import Bus

from tests.paused import kill_nats, pause
from tests.servicestop import publish_undecodable, service, sigterm, stopped_cleanly, until

BAD = 2000  # undecodable messages: the parser dead-letters them one by one, so one is under way at the pause


def _sigterm_in_flight(server: natsserver.NatsServer, tmp_path: Path, kill: bool) -> str:
    """The parser dead-lettering BAD messages; nats-server paused (and killed: `kill`), then, 1 s later (a fetch
    under way at the pause has ended, a dead letter is in flight), SIGTERM: the parser's log once it exited 0."""
    log = tmp_path / "parser.log"
    asyncio.run(publish_undecodable(server.url, f"{subjects.RUN_LOG}.host.n1", BAD))
    env = {**os.environ, "PODTAX_NATS_URL": server.url, "PODTAX_HEALTH_PORT": "0"}
    with service("podtax_parser", env, log) as proc:
        text = until(log, proc, "dead-lettered")
        assert "dead-lettered" in text and proc.poll() is None, text
        pause(server.proc.pid)  # the dead letter under way is never answered
        if kill:
            kill_nats(server)
        time.sleep(1)
        assert proc.poll() is None, log.read_text()
        # a server that hangs: closing the connection waits natsclose.DRAIN_S for its answer (15 s before)
        ended = sigterm(proc, log, 60)
        stopped_cleanly(ended)
        assert "podtax-parser stopped while waiting for NATS" in ended.log, ended.log
        return ended.after


def test_sigterm_ends_a_request_to_a_server_that_hangs(nats_server: natsserver.NatsServer, tmp_path: Path) -> None:
    """Before, the dead letter's 5 s timeout on the live connection was taken for NATS's answer: dropped, termed."""
    after = _sigterm_in_flight(nats_server, tmp_path, kill=False)
    assert "could not dead-letter" not in after, after


def test_sigterm_ends_a_request_in_flight_as_nats_died(nats_server: natsserver.NatsServer, tmp_path: Path) -> None:
    """Before, the dead letter in flight ran to its 5 s timeout, then waited for NATS (saying so), then stopped."""
    after = _sigterm_in_flight(nats_server, tmp_path, kill=True)
    assert "waiting for NATS at" not in after, after


async def _asked_once_stopped(url: str) -> str:
    """A KV bucket's lookup and a dead letter's kind of publish asked with the service's stop event already set, NATS
    live: what they end with."""
    bus = await Bus.connect(url, "test/in-flight")
    try:
        await bus.ensure_streams()
        await bus.kv(subjects.RUNNER_BUCKET)
        stop = asyncio.Event()
        natsagain.watch_stop(stop)  # what bus.stop_on_signals does in a service
        stop.set()
        kv = await bus.kv(subjects.RUNNER_BUCKET)
        dead = subjects.dead_letter("podtax.x")
        ack = await natsagain.again_if_reconnected(bus.nc, lambda: bus.js.publish(dead, b"x"))
        return f"{kv.__class__.__name__} {ack.stream}"
    finally:
        await bus.close()


def test_a_live_answer_still_comes_after_the_stop(nats_server: natsserver.NatsServer) -> None:
    """The stop ends the wait for an answer only after STOP_GRACE_S: a live server's answer (a batch being drained
    dead-letters its rejects after the SIGTERM) still comes, as before."""
    assert asyncio.run(_asked_once_stopped(nats_server.url)) == f"KeyValue {subjects.DLQ_STREAM}"
