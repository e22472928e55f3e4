"""SIGTERM while a service's request waits for NATS to be back (natsagain.again_if_reconnected: nats-server killed
during the request, nats-py away). The wait did not look at the service's stop event: the service went on waiting
until NATS was back or 60 s ran out (Kubernetes kills a pod 30 s after its SIGTERM). Now the wait ends at once with
Stopped, the service exits 0 ('stopped while waiting for NATS'), and the message whose dead letter was under way
stays unacked: delivered again later, nothing lost."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from podtax import natsserver, subjects
from podtax.bus import Bus

from tests.paused import kill_nats, pause, start_nats_again

BAD = 2000  # undecodable messages: the parser dead-letters them one by one, so one is under way at the pause


def _until(log: Path, proc: subprocess.Popen[bytes], text: str, tries: int = 300) -> str:
    for _ in range(tries):
        got = log.read_text(errors="replace")
        if text in got or proc.poll() is not None:
            return got
        time.sleep(0.1)
    return log.read_text(errors="replace")


async def _publish_bad(url: str) -> None:
    """BAD undecodable raw logs, once the parser's consumer is there; returns once the parser dead-letters them (a
    pause before its first fetch left nothing waiting for NATS, so "waiting for NATS at" never came: 2 of 3 runs
    at load 3-4)."""
    bus = await Bus.connect(url, "test/sigterm")
    try:
        for _ in range(300):
            try:
                await bus.js.consumer_info(subjects.STREAM, "parser")
                break
            except Exception:  # noqa: BLE001 - not made yet
                await asyncio.sleep(0.1)
        for _ in range(BAD):
            await bus.nc.publish(f"{subjects.RUN_LOG}.host.n1", b"not an event")
        await bus.nc.flush()
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
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "podtax_parser"], env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        asyncio.run(_publish_bad(nats_server.url))
        pause(nats_server.proc.pid)  # the dead letter under way is never answered
        kill_nats(nats_server)
        text = _until(log, proc, "waiting for NATS at")
        assert "waiting for NATS at" in text and proc.poll() is None, text
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            raise AssertionError("podtax-parser still running 10 s after SIGTERM: " + log.read_text()) from None
        text = log.read_text(errors="replace")
        assert proc.returncode == 0, text
        assert "Traceback" not in text and "podtax-parser stopped while waiting for NATS" in text, text
        start_nats_again(nats_server, tmp_path / "nats2.log")
        left, done, dead = asyncio.run(_left(nats_server.url))
        assert left > 0 and dead >= done, (left, done, dead)  # every message termed was dead-lettered first
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
