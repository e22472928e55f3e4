"""A restarted runner lets runs expire only once its outcome consumer has handled the backlog it found
(runner catchup.py), with a real nats-server: results of runs in flight wait in the stream, and a fixed
grace from the restart was not enough on a loaded machine (CI: 10 of 410 runs failed as no-report)."""

from __future__ import annotations

import asyncio

from podtax import events, subjects
from podtax.bus import Bus, ConsumerSpec
from podtax_runner.catchup import caught_up

from tests.integration.harness import host_facts


async def test_caught_up_waits_for_the_backlog_to_be_handled(nats_url: str) -> None:
    b = await Bus.connect(nats_url, "tests/catchup")
    try:
        await b.ensure_streams()
        stop = asyncio.Event()
        # no consumer yet: a first start has no backlog
        await asyncio.wait_for(caught_up(b.js, subjects.STREAM, "outcomes", stop), 5)
        spec = ConsumerSpec("outcomes", [f"{subjects.HOST_FACTS}.>"], batch=2)
        handled: list[str] = []
        gate = asyncio.Event()

        async def slow(batch: list[events.Event]) -> dict[str, str]:
            await gate.wait()  # the backlog is read only once the gate opens
            handled.extend(e.id for e in batch)
            if len(handled) == 5:
                stop.set()
            return {}

        consumer = asyncio.create_task(b.consume_batches(spec, slow, stop))
        for i in range(5):
            await b.publish(host_facts(i))
        waiting = asyncio.create_task(caught_up(b.js, subjects.STREAM, "outcomes", asyncio.Event()))
        await asyncio.sleep(2)
        assert not waiting.done() and handled == []  # the backlog is there, unread
        gate.set()
        await asyncio.wait_for(consumer, 10)
        await asyncio.wait_for(waiting, 10)  # returns once all five are handled and acked
        assert len(handled) == 5
    finally:
        await b.close()
