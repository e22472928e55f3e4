"""A single publish (Bus.publish, not pipelined: a host agent's report, a runner's request) made after the SIGTERM to
a NATS that hangs waited nats-py's 5 s for its ack, then raised a TimeoutError the caller took for a failure (a
handler's message nakked, its delivery counted): bench/bench_stop_single_publish.py measured SIGTERM -> exit 20.1 s,
15.6 s now. Now it goes through natsagain's stop race as a request does: STOP_GRACE_S more at most, then Stopped
(left for redelivery); a live server's ack still comes within the grace. Real nats-server, paused."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
from podtax import events, natsagain, natsserver, subjects
from podtax.bus import Bus

from tests.paused import pause


def _log(run_id: str) -> events.RawLogV1:
    now = events.now()
    return events.raw_log(events.RawLog(run=events.RunSpec(run_id=run_id, campaign="sp", node="n1", env="host",
                                                           test="sysbench-cpu", params={}),
                                        stdout="x", exit_code=0, started_at=now, ended_at=now), "test")


async def _publish_once_stopped(server: natsserver.NatsServer, hung: bool) -> int:
    """One event published with the service's stop event set (as bus.stop_on_signals sets it), nats-server paused
    first when `hung`: the stream's messages after it (live)."""
    bus = await Bus.connect(server.url, "test/stop-single")
    try:
        await bus.ensure_streams()
        stop = asyncio.Event()
        natsagain.watch_stop(stop)
        if hung:
            await asyncio.to_thread(pause, server.proc.pid)
        stop.set()
        try:
            await bus.publish(_log("single-1"))
        finally:
            if hung:
                os.kill(server.proc.pid, signal.SIGCONT)
        return (await bus.js.stream_info(subjects.STREAM)).state.messages
    finally:
        await bus.close()


def test_a_single_publish_to_a_server_that_hangs_ends_with_the_stop(nats_server: natsserver.NatsServer) -> None:
    with pytest.raises(natsagain.Stopped):  # before: nats.errors.TimeoutError, after 5 s
        asyncio.run(_publish_once_stopped(nats_server, hung=True))


def test_a_live_servers_ack_still_comes_after_the_stop(nats_server: natsserver.NatsServer) -> None:
    assert asyncio.run(_publish_once_stopped(nats_server, hung=False)) == 1
