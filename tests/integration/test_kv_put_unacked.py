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

from tests.integration.harness import host_facts
from tests.paused import pause


async def test_puts_a_hung_server_never_acks_fail_instead_of_waiting_for_ever(tmp_path: Path) -> None:
    server = natsserver.start(tmp_path / "js")
    try:
        bus = await Bus.connect(server.url, "tests/kv-unacked")
        try:
            await bus.kv("podtax_scores")
            await bus.kv_put_many("podtax_scores", [("a", b"1")])  # the bucket takes puts
            pause(server.proc.pid)  # every thread stopped: it can answer nothing more
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


async def test_more_puts_than_nats_py_keeps_in_flight_still_end_unacked(tmp_path: Path) -> None:
    """Past 20,000 publishes in flight nats-py waits for room, and turns the deadline's cancellation there into its
    TooManyStalledMsgsError: the caller got that instead of Unacked (found by review r1); a task cancelled from outside
    still ends cancelled."""
    server = natsserver.start(tmp_path / "js")
    try:
        bus = await Bus.connect(server.url, "tests/kv-stalled")
        try:
            await bus.kv("podtax_scores")
            many = [(f"k{i}", b"v") for i in range(bus.js._publish_async_pending_semaphore._value + 100)]
            pause(server.proc.pid)  # every thread stopped: it can answer nothing more
            try:
                with pytest.raises(Unacked):
                    await bus.kv_put_many("podtax_scores", many, timeout=1.0)
                await asyncio.sleep(0)
                with pytest.raises(Unacked):
                    await bus.publish_many([host_facts(i) for i in range(len(many))], timeout=1.0)
                await asyncio.sleep(0)
                task = asyncio.create_task(bus.kv_put_many("podtax_scores", many, timeout=60.0))
                while bus.js._publish_async_pending_semaphore._value:  # until it waits for room
                    await asyncio.sleep(0.05)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
            finally:
                os.kill(server.proc.pid, signal.SIGCONT)
        finally:
            await bus.close()
    finally:
        server.stop()
