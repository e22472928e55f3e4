"""A server that hangs (or dies) with KV puts in flight never acks them: Bus.kv_put_many must not wait for those acks
for ever. The analyzer's scores publisher waited so, unbounded: its scores stopped being published while results were
still stored (real nats-server, stopped with SIGSTOP while the puts are in flight)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest
from podtax import natsserver
from podtax.bus import Bus, BusError, Unacked, Unavailable


async def test_puts_a_hung_server_never_acks_fail_instead_of_waiting_for_ever(tmp_path: Path) -> None:
    server = natsserver.start(tmp_path / "js")
    try:
        bus = await Bus.connect(server.url, "tests/kv-unacked")
        try:
            await bus.kv("podtax_scores")
            await bus.kv_put_many("podtax_scores", [("a", b"1")])  # the bucket takes puts
            os.kill(server.proc.pid, signal.SIGSTOP)
            try:
                with pytest.raises(Unacked) as caught:  # before: waited for the acks for ever (the test's timeout)
                    await bus.kv_put_many("podtax_scores", [(f"k{i}", b"v") for i in range(20)], timeout=1.0)
            finally:
                os.kill(server.proc.pid, signal.SIGCONT)
            assert isinstance(caught.value, Unavailable) and isinstance(caught.value, BusError)
            assert "puts into KV bucket podtax_scores" in str(caught.value)
            await asyncio.sleep(0)  # nats-py drops a cancelled future from its table in the future's callback
            assert not bus.js._publish_async_futures  # cancelled: their slots are free for the retry
        finally:
            await bus.close()
    finally:
        server.stop()
