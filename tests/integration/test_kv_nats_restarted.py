"""nats-server killed and started again (its store kept) while a service looks its KV bucket up at start (the
analyzer's scores bucket, the runner's plans: Streams.kv). The request went to the server that died; nats-py
reconnected within 2 s and timed it out on the new, live connection, and the TimeoutError went up: the service
ended in a traceback, exit 1; so it did when nats-server came back later (nats-py still away at the timeout). Now
the bucket is looked up again once nats-py is connected again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from podtax import natsserver, subjects
from podtax.bus import Bus

from tests.paused import asked_during_restart


async def _looked_up_during_restart(server: natsserver.NatsServer, tmp_path: Path, delay_s: float) -> str:
    bus = await Bus.connect(server.url, "test/runner")
    try:
        await bus.ensure_streams()
        await bus.kv(subjects.RUNNER_BUCKET)  # there already, as after the runner's first start
        looking = await asked_during_restart(server, tmp_path / "nats2.log", lambda: bus.kv(subjects.RUNNER_BUCKET),
                                             delay_s)
        try:
            kv = await looking
        except Exception as exc:  # noqa: BLE001 - what the service would end with
            return f"{type(exc).__name__}: {exc}"
        return f"bucket {(await kv.status()).bucket}"
    finally:
        await bus.close()


# back at once, or 3.5 s after the kill (a pod restart): nats-py, trying every 2 s, is then still away when the
# request times out (5 s), which went up as a traceback (r8 of 1acaa175: 2.5, 3.5 and 5 s)
@pytest.mark.parametrize("delay_s", [0, 3.5])
def test_a_bucket_looked_up_as_nats_restarts_is_found(nats_server: natsserver.NatsServer, tmp_path: Path,
        delay_s: float) -> None:
    got = asyncio.run(_looked_up_during_restart(nats_server, tmp_path, delay_s))
    assert got == f"bucket {subjects.RUNNER_BUCKET}", got
