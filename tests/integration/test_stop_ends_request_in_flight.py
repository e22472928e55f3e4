"""A SIGTERM while a request is in flight to a NATS server that no longer answers (paused: hung, overloaded) waited
for nats-py's 5 s timeout, and a timeout on that live connection is an answer to the caller: the parser's dead
letter under way was said 'could not dead-letter ...; dropped it' and its message termed, lost; to a server that
died, the request ran to that timeout before the stop was seen. Now the stop ends the wait for the answer
(natsagain, after STOP_GRACE_S): Stopped, exit 0, the message left unacked for redelivery. Real nats-server paused
(and killed), the real podtax-parser entry point."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from podtax import natsagain, natsserver, subjects
from podtax.bus import Bus

from tests.paused import pause

BAD = 2000  # undecodable messages: the parser dead-letters them one by one, so one is under way at the pause


def _until(log: Path, proc: subprocess.Popen[bytes], text: str, tries: int = 300) -> str:
    for _ in range(tries):
        got = log.read_text(errors="replace")
        if text in got or proc.poll() is not None:
            return got
        time.sleep(0.1)
    return log.read_text(errors="replace")


async def _publish_bad(url: str) -> None:
    bus = await Bus.connect(url, "test/in-flight")
    try:
        await bus.ensure_streams()
        for _ in range(BAD):
            await bus.nc.publish(f"{subjects.RUN_LOG}.host.n1", b"not an event")
        await bus.nc.flush()
    finally:
        await bus.close()


def _sigterm_in_flight(server: natsserver.NatsServer, tmp_path: Path, kill: bool) -> str:
    """The parser dead-lettering BAD messages; nats-server paused (and killed: `kill`), then, 1 s later (a fetch
    under way at the pause has ended, a dead letter is in flight), SIGTERM: the parser's log once it exited 0."""
    log = tmp_path / "parser.log"
    asyncio.run(_publish_bad(server.url))
    env = {**os.environ, "PODTAX_NATS_URL": server.url, "PODTAX_HEALTH_PORT": "0"}
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "podtax_parser"], env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        text = _until(log, proc, "dead-lettered")
        assert "dead-lettered" in text and proc.poll() is None, text
        pause(server.proc.pid)  # the dead letter under way is never answered
        if kill:
            server.proc.kill()
            server.proc.wait()
        time.sleep(1)
        assert proc.poll() is None, log.read_text()
        proc.send_signal(signal.SIGTERM)
        signalled = len(log.read_text(errors="replace"))
        try:
            proc.wait(60)  # a server that hangs: closing the connection takes 15 s (nats-py's drain, then close)
        except subprocess.TimeoutExpired:
            raise AssertionError("podtax-parser still running 60 s after SIGTERM: " + log.read_text()) from None
        text = log.read_text(errors="replace")
        assert proc.returncode == 0, text
        assert "Traceback" not in text and "podtax-parser stopped while waiting for NATS" in text, text
        return text[signalled:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


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
