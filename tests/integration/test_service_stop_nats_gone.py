"""A service stopped (SIGTERM) right after its nats-server died ended with a traceback and exit 1: closing its
connection, nats-py first writes what it held while reconnecting (pull requests, acks) to the lost connection
(ConnectionResetError: Connection lost); and one still checking its streams met nats-py's request timeout. Now it
stops with one line, exit 0. A message it had not acked is delivered again once NATS is back (the analyzer and
the parser ack a batch only once it is stored or published)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from nats.js.errors import NotFoundError
from podtax import natsserver, subjects
from podtax.bus import Bus

from tests.integration.secured import secured_fixture  # noqa: F401 - fixture
from tests.integration.test_service_stop_waiting import _wait_for_line, _waiting


def _consuming(url: str, role: str) -> bool:
    """Whether the role's JetStream consumer exists (the service is past its streams, pulling)."""

    async def names() -> list[str]:
        bus = await Bus.connect(url, "test/consumers")
        try:
            return [c.name for c in await bus.js.consumers_info(subjects.STREAM)]
        except NotFoundError:  # the stream is not made yet
            return []
        finally:
            await bus.close()

    return role in asyncio.run(names())


def _stop_after_nats_died(server: natsserver.NatsServer, proc: subprocess.Popen[bytes], log: Path) -> str:
    """Kill nats-server, let the service go on without it a moment, SIGTERM it: its log."""
    try:
        assert proc.poll() is None, log.read_text()
        server.proc.kill()
        server.proc.wait()
        time.sleep(1.5)  # it pulls (or polls for its streams) meanwhile: requests nats-py holds until it reconnects
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert proc.returncode == 0, text
    assert "Traceback" not in text, text
    return text


@pytest.mark.parametrize("role", ["analyzer", "parser"])
def test_a_service_stopped_after_nats_died_stops_in_one_line(role: str, nats_server: natsserver.NatsServer,
                                                              tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}, "PODTAX_NATS_URL": nats_server.url,
           "PODTAX_HEALTH_PORT": "0", "PODTAX_ANALYZER_DB": str(tmp_path / "podtax.duckdb"),
           "PODTAX_ANALYZER_PORT": str(natsserver.free_port())}
    log = tmp_path / f"{role}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", f"podtax_{role}"], env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        _wait_for_line(log, proc, f"podtax-{role} started")
        for _ in range(100):
            if proc.poll() is not None or _consuming(nats_server.url, role):
                break
            time.sleep(0.1)
    except BaseException:  # not left running
        proc.kill()
        proc.wait()
        raise
    text = _stop_after_nats_died(nats_server, proc, log)
    # what the lost connection said depends on when the server's reset came: asyncio's 'Connection lost' (the
    # transport already closed), the socket's '[Errno 104] Connection reset by peer' (seen under load), ...
    assert re.search(r"NATS: the connection was lost as it closed \(.+\): what was not acked comes back", text), text
    assert text.rstrip().endswith(f'"msg": "podtax-{role} stopped"}}'), text


def test_a_service_waiting_for_its_streams_stops_after_nats_died(
        secured: tuple[natsserver.NatsServer, dict[str, str]], tmp_path: Path) -> None:
    log = tmp_path / "analyzer.log"
    proc = _waiting(secured, log, "analyzer", PODTAX_ANALYZER_DB=str(tmp_path / "podtax.duckdb"),
                    PODTAX_ANALYZER_PORT=str(natsserver.free_port()))
    text = _stop_after_nats_died(secured[0], proc, log)
    assert "podtax-analyzer stopped while NATS was unreachable, before its streams were checked" in text, text
    assert text.rstrip().endswith('"msg": "podtax-analyzer stopped"}'), text
