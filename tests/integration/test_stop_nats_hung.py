"""A service told to stop while its nats-server hangs (paused here: an overloaded server, or a network that drops
packets without a reset, does the same) took 15 s to exit: Bus.close's drain waited nats-py's drain_timeout (5 s) for
its subscriptions, then its own flush for 10 s more, which drain_timeout does not bound. Now the close asks the server
for a PONG for natsclose.DRAIN_S (3 s) and, none coming, closes without the drain, saying so: the idle parser exits 0
with that line (before: 15 s later, without it; the exit is given a generous 60 s, no timed assertion). A busy one is
test_parser_stop_while_publishing's server-that-hangs case. Real nats-server paused, the real podtax-parser."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from podtax import natsserver, subjects
from podtax.bus import Bus

from tests.paused import pause
from tests.pongproxy import pong_then_hang
from tests.servicestop import service, sigterm, until, until_made


async def _consuming(url: str) -> None:
    """Return once the parser's consumer is there (it pulls from it)."""
    bus = await Bus.connect(url, "test/hung")
    try:
        await until_made(lambda: bus.js.consumer_info(subjects.STREAM, "parser"))
    finally:
        await bus.close()


def test_an_idle_service_stops_at_once_when_nats_hangs(nats_server: natsserver.NatsServer, tmp_path: Path) -> None:
    log = tmp_path / "parser.log"
    env = {**os.environ, "PODTAX_NATS_URL": nats_server.url, "PODTAX_HEALTH_PORT": "0"}
    with service("podtax_parser", env, log) as proc:
        text = until(log, proc, "podtax-parser started")
        assert "podtax-parser started" in text and proc.poll() is None, text
        asyncio.run(_consuming(nats_server.url))
        pause(nats_server.proc.pid)  # no answer to anything from now on: the drain's flush is never answered
        ended = sigterm(proc, log, 60)  # before: exit 0 after 15 s, without the line below
        assert ended.returncode == 0 and "Traceback" not in ended.log, ended.log
        assert "did not answer a PING within 3 s: closed without draining" in ended.after, ended.after
        assert "podtax-parser stopped" in ended.after, ended.after


def test_an_idle_service_stops_when_nats_hangs_right_after_the_ping(nats_server: natsserver.NatsServer,
                                                                     tmp_path: Path) -> None:
    """The server answers the close's PING and hangs before the drain is done (paused right after relaying that PONG:
    tests.pongproxy). Before: nats-py's whole drain, 5 + 10 s, then exit 0 without a word. Now the drain is bounded
    by what is left of natsclose.DRAIN_S, then closed, saying so, without 'Task exception was never retrieved'."""
    log = tmp_path / "parser.log"
    with pong_then_hang(nats_server.port, nats_server.proc.pid) as relay:
        env = {**os.environ, "PODTAX_NATS_URL": relay.url, "PODTAX_HEALTH_PORT": "0"}
        with service("podtax_parser", env, log) as proc:
            text = until(log, proc, "podtax-parser started")
            assert "podtax-parser started" in text and proc.poll() is None, text
            asyncio.run(_consuming(nats_server.url))
            relay.arm()
            ended = sigterm(proc, log, 60)  # before: exit 0 after 15 s, without the line below
        assert relay.paused.is_set(), ended.log
    assert ended.returncode == 0 and "Traceback" not in ended.log, ended.log
    assert "never retrieved" not in ended.log, ended.log
    assert "answered a PING but did not finish draining within 3 s: closed without draining" in ended.after, ended.after
    assert "podtax-parser stopped" in ended.after, ended.after
