"""nats-server killed and started again (its store kept) while a service makes its JetStream consumer at start. The
request went to the server that died; nats-py reconnected within 2 s and timed it out on the new, live connection,
and the TimeoutError went up through consume()/consume_batches(): the service ended in a traceback, exit 1; so it
did when nats-server came back later (nats-py still away at the timeout). Now the consumer is asked for again once
nats-py is connected again (add_consumer of the same config: idempotent)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from podtax import natsserver, subjects
from podtax.bus import Bus
from podtax.busconsume import ConsumerSpec

from tests.paused import asked_during_restart


async def _subscribed_during_restart(server: natsserver.NatsServer, tmp_path: Path, delay_s: float) -> str:
    bus = await Bus.connect(server.url, "test/parser")
    try:
        await bus.ensure_streams()
        spec = ConsumerSpec("parser", (f"{subjects.RUN_LOG}.>",))
        making = await asked_during_restart(server, tmp_path / "nats2.log", lambda: bus._subscribe(spec), delay_s)
        try:
            sub = await making
        except Exception as exc:  # noqa: BLE001 - what the service would end with
            return f"{type(exc).__name__}: {exc}"
        return f"subscribed to {(await sub.consumer_info()).name}"
    finally:
        await bus.close()


# back at once, or 3.5 s after the kill (a pod restart): nats-py, trying every 2 s, is then still away when the
# request times out (5 s), which went up as a traceback (r8 of 1acaa175: 2.5, 3.5 and 5 s)
@pytest.mark.parametrize("delay_s", [0, 3.5])
def test_a_consumer_asked_for_as_nats_restarts_is_made(nats_server: natsserver.NatsServer, tmp_path: Path,
        delay_s: float) -> None:
    got = asyncio.run(_subscribed_during_restart(nats_server, tmp_path, delay_s))
    assert got == "subscribed to parser", got
