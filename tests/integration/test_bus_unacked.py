"""A server that dies with publishes in flight never acks them: Bus.publish_many must not wait for those
acks forever (real nats-server, killed with SIGKILL and restarted on its port and store).

Found by an audit (Dec 3): nats-server killed while the parser published a batch; the parser's handler
waited on the lost acks for good, its consumer kept 512 messages in progress (never redelivered), 440
of 3,000 runs were never stored, and nothing was logged."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest
from podtax import natsserver
from podtax.bus import Bus, BusError, Unacked, Unavailable

from tests.integration.harness import host_facts, stream_messages


@pytest.fixture
def own_server(tmp_path: Path):
    """A nats-server this test may kill (the shared fixture's would be stopped twice)."""
    servers = [natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log")]
    yield servers
    for s in servers:
        s.stop()


async def test_publishes_whose_acks_died_with_the_server_fail_the_batch_instead_of_hanging(own_server) -> None:
    server = own_server[0]
    b = await Bus.connect(server.url, "tests/unacked")
    try:
        await b.ensure_streams()
        os.kill(server.proc.pid, signal.SIGSTOP)  # the events reach the socket, the acks never come back
        task = asyncio.create_task(b.publish_many([host_facts(i) for i in range(50)], timeout=2.0))
        # the publishes written to the (stopped) server's socket before it dies: on a loaded CI host 0.3 s was not
        # always enough, the client still held them, re-sent them to the restarted server and got their acks
        deadline = time.monotonic() + 10
        while (len(b.js._publish_async_futures) < 50 or b.nc.pending_data_size) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.1)
        server.proc.kill()
        server.proc.wait()
        own_server.append(natsserver.start(server.store_dir, port=server.port))
        with pytest.raises(Unacked) as caught:
            await asyncio.wait_for(task, 20)  # before: waited on the lost acks forever (the bound, not a timing)
        assert isinstance(caught.value, Unavailable) and isinstance(caught.value, BusError)
        assert "published events" in str(caught.value)
        assert not b.js._publish_async_futures  # cancelled: their slots are free for the retry
        for _ in range(100):  # nats-py reconnects by itself
            if b.nc.is_connected:
                break
            await asyncio.sleep(0.1)
        await b.ensure_streams()
        await b.publish_many([host_facts(i, source="retry") for i in range(50)], timeout=10.0)
        assert await stream_messages(own_server[-1].url) >= 50
    finally:
        await b.close()


async def test_closing_a_bus_whose_server_died_stops_its_reconnect_loop(own_server) -> None:
    """Bus.close did nothing while nats-py was reconnecting: its reconnect loop ran on until asyncio.run's
    last cancellation, which that loop can swallow; CI found `podtax import` hung at exit after NATS died."""
    server = own_server[0]
    b = await Bus.connect(server.url, "tests/close", timeout=0.5)
    server.proc.kill()
    server.proc.wait()
    for _ in range(100):
        if b.nc.is_reconnecting:
            break
        await asyncio.sleep(0.05)
    assert b.nc.is_reconnecting
    await asyncio.wait_for(b.close(), 10)  # before: close never ended the reconnect loop
    assert b.nc.is_closed, "the client still reconnects after close"
    assert b.nc._reconnection_task is None or b.nc._reconnection_task.done()
