"""A message handled while NATS went away and nats-py's outbound buffer for it filled (another task's publishes: a
campaign's save, tests/integration/test_runner_save_nats_away.py): Msg.ack and Msg.in_progress publish through
Client.publish, which raises OutboundBufferLimitError then. The heartbeat's in_progress ended the handler's wait as a
handler failure (its message nakked, the handler left running unwatched); the ack after a handler that succeeded raised
out of Bus.consume and ended the service with a traceback. Now both go through busmessages.settle: one line, the
message delivered again after ack_wait. A batch's acks (natsfetch.ack_all) are queued without that check: never
raised (guard). Real nats-server, killed during the handler."""

from __future__ import annotations

import asyncio
import logging

import pytest
from nats.errors import OutboundBufferLimitError
from podtax import events, natsserver, subjects
from podtax.bus import Bus, ConsumerSpec
from podtax.metrics import REGISTRY

from tests.paused import kill_nats

HEARTBEAT_S = 0.5  # ack_wait_s / 3: the handler's wait tells JetStream it is in progress this often


async def _nats_away_buffer_full(bus: Bus, server: natsserver.NatsServer) -> None:
    """nats-server killed, then nats-py's outbound buffer filled (core publishes while it reconnects, each size until
    refused, down to an empty one: as many small KV puts fill it, it then refuses an ack's empty publish too)."""
    await asyncio.to_thread(kill_nats, server)
    while bus.nc.is_connected:
        await asyncio.sleep(0.01)
    for size in [2**k for k in range(20, -1, -1)] + [0]:
        with pytest.raises(OutboundBufferLimitError):
            for _ in range(100):
                await bus.nc.publish("podtax.filler.x", b"x" * size)


async def _handled_while_away(server: natsserver.NatsServer, batches: bool, heartbeats: bool) -> bool:
    """One raw log handled by a consumer (one by one, or in batches) whose handler meets NATS away with the buffer
    full, waits past a heartbeat (`heartbeats`), then succeeds and stops the consumer: whether it ran to its end."""
    bus = await Bus.connect(server.url, "test/ack-away")
    stop, finished = asyncio.Event(), asyncio.Event()
    try:
        await bus.ensure_streams()
        now = events.now()
        await bus.publish(events.raw_log(events.RawLog(
            run=events.RunSpec(run_id="aw-1", campaign="aw", node="n1", env="host", test="sysbench-cpu", params={}),
            stdout="x", exit_code=0, started_at=now, ended_at=now), "test"))
        spec = ConsumerSpec("ack-away", [f"{subjects.RUN_LOG}.>"], ack_wait_s=3 * HEARTBEAT_S)

        async def work() -> None:
            await _nats_away_buffer_full(bus, server)
            if heartbeats:
                await asyncio.sleep(3 * HEARTBEAT_S)  # in_progress sent (tried) meanwhile
            finished.set()
            stop.set()

        async def handler(_event: events.Envelope) -> None:
            await work()

        async def batch_handler(_batch: list[events.Envelope]) -> dict[str, str]:
            await work()
            return {}

        if batches:
            await asyncio.wait_for(bus.consume_batches(spec, batch_handler, stop), 60)
        else:
            await asyncio.wait_for(bus.consume(spec, handler, stop), 60)
        return finished.is_set()
    finally:
        await bus.close()


def acked() -> float:
    """podtax_messages_handled{consumer="ack-away", outcome="ack"} so far (this process's registry)."""
    return REGISTRY.get_sample_value("podtax_messages_handled_total", {"consumer": "ack-away", "outcome": "ack"}) or 0


def test_an_ack_with_nats_away_and_the_buffer_full_is_one_line(nats_server: natsserver.NatsServer,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    before = acked()
    with caplog.at_level(logging.WARNING):  # before: OutboundBufferLimitError out of Bus.consume
        assert asyncio.run(_handled_while_away(nats_server, batches=False, heartbeats=False))
    assert "could not ack podtax.run.log" in caplog.text, caplog.text
    assert acked() == before  # not acked, so not counted acked (it was: the message comes again and is counted then)


def test_a_heartbeat_with_nats_away_and_the_buffer_full_is_one_line(nats_server: natsserver.NatsServer,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert asyncio.run(_handled_while_away(nats_server, batches=False, heartbeats=True))
    assert "could not tell in progress podtax.run.log" in caplog.text, caplog.text
    assert "handler failed" not in caplog.text, caplog.text  # before: its in_progress failed the handler (nakked)


def test_a_batch_with_nats_away_and_the_buffer_full_ends_cleanly(nats_server: natsserver.NatsServer,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert asyncio.run(_handled_while_away(nats_server, batches=True, heartbeats=False))
    assert "handler failed" not in caplog.text, caplog.text
