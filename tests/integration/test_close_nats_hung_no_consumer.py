"""Closing a Bus that consumes nothing (a CLI command's) while its nats-server hangs logs the close below WARNING
(fxN, session 55; review rN, item 3). A Ctrl-C of `podtax campaign status` with NATS hung printed two lines: the
service's 'NATS at ... did not answer a PING within 3 s: closed without draining; what was not acknowledged is
delivered again' (Python's last-resort handler prints a warning on stderr; nothing of a command is delivered again),
then 'interrupted: ...'. A Bus with a consumer still warns (test_stop_nats_hung).

A real nats-server, paused (SIGSTOP) once the Bus is connected."""

from __future__ import annotations

import asyncio
import logging
import signal

import pytest
from podtax import natsserver
from podtax.bus import Bus

from tests.paused import pause


def test_a_command_closing_on_a_hung_server_warns_nothing(nats_server: natsserver.NatsServer,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    async def connect_pause_close() -> None:
        bus = await Bus.connect(nats_server.url, "podtax/cli", auth={})
        pause(nats_server.proc.pid)
        try:
            await bus.close()
        finally:
            nats_server.proc.send_signal(signal.SIGCONT)

    with caplog.at_level(logging.INFO, logger="podtax.bus"):
        asyncio.run(connect_pause_close())
    closes = [r for r in caplog.records if "closed without draining" in r.getMessage()]
    assert [r.levelno for r in closes] == [logging.INFO], [(r.levelname, r.getMessage()) for r in caplog.records]
