"""A batch handler whose dependency is down (bus.Unavailable: a full disk, DuckDB out of memory) has its
batch held and retried in place, however long the outage: no delivery is counted, nothing is
dead-lettered, nothing is redelivered behind its back (real nats-server).

Found by the full-disk fault scenario run for 60 s instead of 10: every valid result that arrived
while the disk was full was retried max_deliver times within 18 s of backoff and then dead-lettered."""

from __future__ import annotations

import asyncio

import pytest
from podtax import busconsume, events, metrics, subjects
from podtax.bus import Bus, ConsumerSpec, Unavailable

from tests.integration.harness import host_facts

N = 12


async def dead_letters(b: Bus) -> int:
    try:
        info = await b.js.stream_info(subjects.DLQ_STREAM)
    except Exception:  # noqa: BLE001 - no dead-letter stream: none
        return 0
    return info.state.messages


@pytest.mark.parametrize("unavailable_calls", [1, 6])
async def test_a_batch_is_held_while_its_dependency_is_down_and_none_is_dead_lettered(
        nats_url: str, monkeypatch: pytest.MonkeyPatch, unavailable_calls: int) -> None:
    monkeypatch.setattr(busconsume, "HOLD_BACKOFF_S", (0.3, 0.6))
    b = await Bus.connect(nats_url, "tests/hold")
    try:
        await b.ensure_streams()
        for i in range(N):
            await b.publish(host_facts(i))
        # max_deliver 2 and ack_wait 1 s: the outage (6 calls, ~2.7 s) outlasts both by far
        spec = ConsumerSpec("hold", [f"{subjects.HOST_FACTS}.>"], max_deliver=2, ack_wait_s=1.0, batch=N)
        stop = asyncio.Event()
        seen: list[list[str]] = []
        held: list[float] = []

        async def handler(batch: list[events.Event]) -> dict[str, str]:
            seen.append([e.id for e in batch])
            held.append(metrics.HELD.labels("hold")._value.get())
            if len(seen) <= unavailable_calls:
                raise Unavailable("the disk is full: free space")
            stop.set()
            return {}

        await asyncio.wait_for(b.consume_batches(spec, handler, stop), 30)
        for _ in range(50):  # acks are published without waiting: the server may count them a moment later
            info = await b.js.consumer_info(subjects.STREAM, "hold")
            if not info.num_ack_pending:
                break
            await asyncio.sleep(0.1)
        assert len(seen) == unavailable_calls + 1
        assert all(ids == seen[0] for ids in seen) and len(seen[0]) == N  # the same batch each time
        assert held[0] == 0 and all(h == N for h in held[1:])  # held while retried
        assert metrics.HELD.labels("hold")._value.get() == 0
        assert info.num_ack_pending == 0 and info.num_redelivered == 0  # acked once, never redelivered
        assert await dead_letters(b) == 0
    finally:
        await b.close()


async def test_a_held_batch_is_released_on_stop_for_the_next_consumer(nats_url: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(busconsume, "HOLD_BACKOFF_S", (30.0,))
    b = await Bus.connect(nats_url, "tests/hold")
    try:
        await b.ensure_streams()
        sent = host_facts(0)
        await b.publish(sent)
        spec = ConsumerSpec("hold-stop", [f"{subjects.HOST_FACTS}.>"], max_deliver=2, ack_wait_s=1.0)
        stop = asyncio.Event()

        async def down(batch: list[events.Event]) -> dict[str, str]:
            asyncio.get_running_loop().call_later(0.5, stop.set)
            raise Unavailable("DuckDB is out of memory")

        await asyncio.wait_for(b.consume_batches(spec, down, stop), 10)  # stops at once, not after 30 s
        got: list[str] = []

        async def up(batch: list[events.Event]) -> dict[str, str]:
            got.extend(e.id for e in batch)
            again.set()
            return {}

        again = asyncio.Event()
        await asyncio.wait_for(b.consume_batches(spec, up, again), 10)  # redelivered after ack_wait
        assert got == [sent.id]
        assert await dead_letters(b) == 0
    finally:
        await b.close()
