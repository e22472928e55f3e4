"""nats-server killed and started again (its store kept) while a service looks its KV bucket up at start (the
analyzer's scores bucket, the runner's plans: Streams.kv). The request went to the server that died; nats-py
reconnected within 2 s and timed it out on the new, live connection, and the TimeoutError went up: the service
ended in a traceback, exit 1; so it did when nats-server came back later (nats-py still away at the timeout). Now
the bucket is looked up again once nats-py is connected again."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest
from podtax import natsserver, subjects
from podtax.bus import Bus

from tests.paused import pause


async def _looked_up_during_restart(server: natsserver.NatsServer, tmp_path: Path, delay_s: float) -> str:
    bus = await Bus.connect(server.url, "test/runner")
    again = None
    try:
        await bus.ensure_streams()
        await bus.kv(subjects.RUNNER_BUCKET)  # there already, as after the runner's first start
        await asyncio.to_thread(pause, server.proc.pid)  # the lookup is sent and never answered
        looking = asyncio.create_task(bus.kv(subjects.RUNNER_BUCKET))
        await asyncio.sleep(1)
        server.proc.kill()
        await asyncio.to_thread(server.proc.wait)
        await asyncio.sleep(delay_s)  # a pod restarted is slower than a process
        again = await asyncio.to_thread(natsserver.start, server.store_dir, server.port,
                                        log_file=tmp_path / "nats2.log")
        try:
            kv = await looking
        except Exception as exc:  # noqa: BLE001 - what the service would end with
            return f"{type(exc).__name__}: {exc}"
        return f"bucket {(await kv.status()).bucket}"
    finally:
        await bus.close()
        if again is not None:
            again.stop()


# back at once, or 3.5 s after the kill (a pod restart): nats-py, trying every 2 s, is then still away when the
# request times out (5 s), which went up as a traceback (r8 of 1acaa175: 2.5, 3.5 and 5 s)
@pytest.mark.parametrize("delay_s", [0, 3.5])
def test_a_bucket_looked_up_as_nats_restarts_is_found(nats_server: natsserver.NatsServer, tmp_path: Path,
        delay_s: float) -> None:
    try:
        got = asyncio.run(_looked_up_during_restart(nats_server, tmp_path, delay_s))
    finally:
        if nats_server.proc.poll() is None:
            nats_server.proc.send_signal(signal.SIGCONT)
    assert got == f"bucket {subjects.RUNNER_BUCKET}", got
