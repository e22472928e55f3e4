"""natsfetch.fetch against a real nats-server: every message exactly once, in order, acked or
redelivered as JetStream says, an empty list on an idle consumer, and messages that arrive while a
request waits."""

from __future__ import annotations

import asyncio
import time

import nats
import pytest
from nats.errors import MsgAlreadyAckdError
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig
from podtax import natsfetch


async def _setup(url: str, ack_wait: float = 30.0) -> tuple[nats.NATS, nats.js.JetStreamContext, object]:
    nc = await nats.connect(url)
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name="F", subjects=["f.>"]))
    await js.add_consumer("F", ConsumerConfig(durable_name="c", ack_policy=AckPolicy.EXPLICIT, ack_wait=ack_wait))
    return nc, js, await js.pull_subscribe_bind(durable="c", stream="F")


async def _publish(js: nats.js.JetStreamContext, first: int, count: int) -> None:
    futures = [await js.publish_async(f"f.{i}", str(i).encode()) for i in range(first, first + count)]
    await asyncio.gather(*futures)


async def _ack_pending_settles(js: nats.js.JetStreamContext, want: int, within: float = 5.0) -> int:
    """The consumer's ack-pending count once it is `want`, or at `within` seconds. A flush (PING/PONG) only
    says the server read the acks: JetStream applies them on the consumer's own queue, so consumer info
    sent at once may still count them (seen: 2 pending right after acking 4 and 5, 0 a moment later)."""
    deadline = time.monotonic() + within
    while True:
        pending = (await js.consumer_info("F", "c")).num_ack_pending
        if pending == want or time.monotonic() > deadline:
            return pending
        await asyncio.sleep(0.02)


async def test_every_message_once_in_order_in_full_batches(nats_url: str) -> None:
    nc, js, sub = await _setup(nats_url)
    try:
        await _publish(js, 0, 1234)
        seen: list[int] = []
        sizes = []
        while len(seen) < 1234:
            msgs = await natsfetch.fetch(sub, 500, 1.0)
            assert msgs, "a consumer with messages must not come back empty"
            sizes.append(len(msgs))
            for m in msgs:
                seen.append(int(m.data))
                await m.ack()
        assert seen == list(range(1234))
        assert sizes == [500, 500, 234]
        assert await natsfetch.fetch(sub, 500, 0.3) == []  # idle: empty after the timeout, no error
        assert sub._sub._pending_size == 0  # the slow-consumer accounting is kept
    finally:
        await nc.close()


async def test_an_idle_fetch_gets_what_arrives_while_it_waits(nats_url: str) -> None:
    nc, js, sub = await _setup(nats_url)
    try:
        async def later() -> None:
            await asyncio.sleep(0.3)
            await _publish(js, 0, 3)

        started = time.monotonic()
        task = asyncio.create_task(later())
        msgs = await natsfetch.fetch(sub, 3, 5.0)
        await task
        assert [int(m.data) for m in msgs] == [0, 1, 2]
        assert time.monotonic() - started < 4.0  # returned once full, not at the timeout
        for m in msgs:
            await m.ack()
        assert await natsfetch.fetch(sub, 10, 0.3) == []
    finally:
        await nc.close()


async def test_unacked_and_nacked_messages_come_back(nats_url: str) -> None:
    nc, js, sub = await _setup(nats_url, ack_wait=1.0)
    try:
        await _publish(js, 0, 4)
        first = await natsfetch.fetch(sub, 10, 1.0)
        assert [int(m.data) for m in first] == [0, 1, 2, 3]
        assert [natsfetch.num_delivered(m) for m in first] == [1, 1, 1, 1]
        await first[0].ack()
        await first[1].nak()
        await first[2].term()
        # 3 is neither acked nor nacked: it comes back after ack_wait; 1 comes back at once; 0 and 2 never. A message
        # back once may come back again when its ack is later than ack_wait (a loaded CI host): counted once, by the
        # number of its first delivery back
        again: dict[int, int] = {}
        deadline = time.monotonic() + 10
        while set(again) != {1, 3} and time.monotonic() < deadline:
            for m in await natsfetch.fetch(sub, 10, 0.5):
                assert natsfetch.num_delivered(m) == m.metadata.num_delivered
                assert natsfetch.stream_seq(m) == m.metadata.sequence.stream
                again.setdefault(int(m.data), natsfetch.num_delivered(m))
                await m.ack()
        assert again == {1: 2, 3: 2}
    finally:
        await nc.close()


async def test_a_stale_status_left_in_the_queue_is_not_returned(nats_url: str) -> None:
    nc, js, sub = await _setup(nats_url)
    try:
        assert await natsfetch.fetch(sub, 5, 0.2) == []  # leaves the request's 408 behind at most
        await asyncio.sleep(0.3)
        await _publish(js, 0, 2)
        got: list[int] = []
        for _ in range(5):
            got += [int(m.data) for m in await natsfetch.fetch(sub, 5, 0.5)]
            if len(got) == 2:
                break
        assert got == [0, 1]
    finally:
        await nc.close()


def test_num_delivered_reads_both_reply_subject_layouts() -> None:
    from nats.aio.msg import Msg

    v1 = Msg(None, reply="$JS.ACK.S.c.3.10.7.1700000000000000000.0")  # type: ignore[arg-type]
    v2 = Msg(None, reply="$JS.ACK.dom.acchash.S.c.5.10.7.1700000000000000000.0.rnd")  # type: ignore[arg-type]
    assert natsfetch.num_delivered(v1) == v1.metadata.num_delivered == 3
    assert natsfetch.num_delivered(v2) == v2.metadata.num_delivered == 5
    assert natsfetch.stream_seq(v1) == v1.metadata.sequence.stream == 10  # review r8: busconsume's highest given
    assert natsfetch.stream_seq(v2) == v2.metadata.sequence.stream == 10  # without building msg.metadata


async def test_linger_returns_a_short_batch_soon_after_its_first_message(nats_url: str) -> None:
    nc, js, sub = await _setup(nats_url)
    try:
        second = asyncio.Event()  # set as the second publish goes out

        async def later() -> None:
            await asyncio.sleep(0.2)
            await _publish(js, 0, 3)  # 3 of a batch of 500: without linger, the fetch waits 5 s
            await asyncio.sleep(1.0)
            second.set()
            await _publish(js, 3, 2)  # after the first fetch returned, into the request it left open

        task = asyncio.create_task(later())
        first = await natsfetch.fetch(sub, 500, 5.0, linger=0.05)
        # the linger ended the wait before the second publish (without it: 5 s, all five); a loaded host may have
        # handed over fewer than the 3 first messages within the linger
        assert not second.is_set(), "the linger did not end the wait"
        assert 1 <= len(first) <= 3 and [int(m.data) for m in first] == list(range(len(first)))
        await task
        got = [int(m.data) for m in first]
        deadline = time.monotonic() + 10
        while len(got) < 5 and time.monotonic() < deadline:
            for m in await natsfetch.fetch(sub, 500, 0.5, linger=0.05):
                got.append(int(m.data))
                await m.ack()
        for m in first:
            await m.ack()
        assert got == [0, 1, 2, 3, 4]  # nothing lost or doubled by the request left open
        assert await natsfetch.fetch(sub, 500, 0.3, linger=0.05) == []
    finally:
        await nc.close()


async def test_ack_all_acks_every_message_of_a_batch_and_refuses_a_second_ack(nats_url: str) -> None:
    nc, js, sub = await _setup(nats_url, ack_wait=1.0)
    try:
        await _publish(js, 0, 6)
        first = await natsfetch.fetch(sub, 10, 1.0)
        assert [int(m.data) for m in first] == [0, 1, 2, 3, 4, 5]
        await natsfetch.ack_all(first[:4])  # 4 and 5 are not acked: only they come back after ack_wait
        with pytest.raises(MsgAlreadyAckdError):
            await natsfetch.ack_all([first[4], first[0]])  # refused before anything is sent: 4 stays unacked
        await natsfetch.ack_all([])
        assert await _ack_pending_settles(js, 2) == 2  # 4 stays unacked: only 4 and 5 come back below
        again: list[int] = []
        deadline = time.monotonic() + 10
        while sorted(again) != [4, 5] and time.monotonic() < deadline:
            msgs = await natsfetch.fetch(sub, 10, 0.5)
            again += [int(m.data) for m in msgs]
            await natsfetch.ack_all(msgs)
        assert sorted(again) == [4, 5]
        assert await _ack_pending_settles(js, 0) == 0
    finally:
        await nc.close()
