"""NATS lost and back (its server stopped and started again on the same port and store): every service's Bus
reconnected silently, so a log showed work stopping with no word of why, nor when it went on (hK's left-out). Now
one warning when the connection is lost and one when it is back, with how long it was gone; a Bus closed on
purpose says neither. Real nats-server."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from podtax import natsserver
from podtax.bus import Bus


async def said_within(caplog: pytest.LogCaptureFixture, text: str, seconds: float) -> None:
    """Return once a log line has `text`, or after `seconds` (the assertions after say what was logged)."""
    for _ in range(int(seconds * 10)):
        if any(text in r.getMessage() for r in caplog.records):
            return
        await asyncio.sleep(0.1)


async def test_a_lost_and_regained_connection_is_said_once_each(tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    server = natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log")
    caplog.set_level(logging.INFO, logger="podtax")
    bus = await Bus.connect(server.url, "test")
    try:
        server.stop()
        await said_within(caplog, "lost", 10)
        server = natsserver.start(tmp_path / "js", server.port, log_file=tmp_path / "nats.log")
        await said_within(caplog, "back at", 20)
        said = [r.getMessage() for r in caplog.records if "NATS connection" in r.getMessage()]
        assert len(said) == 2, said
        assert said[0].startswith(f"NATS connection to nats://127.0.0.1:{server.port} lost; reconnecting"), said
        assert said[1].startswith(f"NATS connection back at nats://127.0.0.1:{server.port} after "), said
        caplog.clear()
    finally:
        await bus.close()
        server.stop()
    assert not [r.getMessage() for r in caplog.records if "lost" in r.getMessage()]


async def test_the_lost_line_names_the_server_in_use_not_the_list(tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    # PODTAX_NATS_URL may list several servers: the line named the whole list, not the one that went away
    server = natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log")
    other = f"nats://127.0.0.1:{natsserver.free_port()}"  # nothing listens there
    caplog.set_level(logging.INFO, logger="podtax")
    bus = await Bus.connect(f"{other},{server.url}", "test")
    try:
        server.stop()
        await said_within(caplog, "lost", 10)
        said = [r.getMessage() for r in caplog.records if "lost" in r.getMessage()]
        assert said and said[0].startswith(f"NATS connection to {server.url} lost; reconnecting"), said
    finally:
        await bus.close()
