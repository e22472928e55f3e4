"""An event is taken only from the subject its type and content give (real nats-server). Found by an
audit: the CLI's NATS user may publish raw logs (`podtax import`), and a result event it published on a
raw-log subject was stored by the analyzer without passing the parser; a score event there was acked by
both services, neither stored nor dead-lettered."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime

import pytest
from nats.js.errors import NotFoundError
from podtax import events, subjects
from podtax.bus import REASON_HEADER, Bus, ConsumerSpec

from tests.integration.harness import host_facts


def _result(node: str = "vm") -> events.ResultV1:
    t = datetime(2026, 1, 1, tzinfo=UTC)
    run = events.RunSpec(run_id="forged-1", campaign="c", node=node, env="host", test="sysbench-cpu",
                         params={"threads": 1}, sequence=0)
    res = events.Result(run=run, tool="sysbench", tool_version="1.0.20", parser_version="1",
                        metrics=[events.Metric(name="events_per_second", value=1.0, unit="events/s",
                                               higher_is_better=True)], started_at=t, ended_at=t)
    return events.result(res, "tests")


async def _dead_reasons(b: Bus) -> list[str]:
    sub = await b.js.pull_subscribe(f"{subjects.DLQ_PREFIX}.>", durable="probe", stream=subjects.DLQ_STREAM)
    msgs = await sub.fetch(10, timeout=2)
    return [(m.headers or {}).get(REASON_HEADER, "") for m in msgs]


CASES = [  # (what is published, on which subject)
    ("a result on a raw-log subject", _result(), "podtax.run.log.host.vm"),
    ("a run's result under another node", _result(node="n1"), "podtax.run.result.host.n2"),
    ("host facts of n1 under n2", host_facts(1), "podtax.host.facts.n2"),
]


@pytest.mark.parametrize("batches", [True, False])
async def test_misplaced_events_are_dead_lettered_and_placed_ones_handled(nats_url: str, batches: bool) -> None:
    b = await Bus.connect(nats_url, "tests/misplaced")
    try:
        await b.ensure_streams()
        for _, event, subject in CASES:
            await b.js.publish(subject, events.encode(event))
        good = host_facts(7)
        await b.publish(good)
        spec = ConsumerSpec("misplaced", ["podtax.>"], max_deliver=2, ack_wait_s=5.0, batch=10)
        stop, seen = asyncio.Event(), []

        async def one(event: events.Event) -> None:
            seen.append(event.id)
            stop.set()

        async def many(batch: list[events.Event]) -> dict[str, str]:
            seen.extend(e.id for e in batch)
            stop.set()
            return {}

        run = b.consume_batches(spec, many, stop) if batches else b.consume(spec, one, stop)
        await asyncio.wait_for(run, 20)
        assert seen == [good.id]
        reasons = await _dead_reasons(b)
        assert len(reasons) == len(CASES) and all(r.startswith("misplaced: ") for r in reasons)
        assert "podtax.run.result.v1 event belongs on podtax.run.result.host.vm, not on podtax.run.log.host.vm" \
            in reasons[0]
    finally:
        await b.close()


async def test_a_message_two_consumers_reject_is_dead_lettered_once(nats_url: str) -> None:
    """The parser and the analyzer both read raw logs: a schema-invalid one was dead-lettered twice."""
    b = await Bus.connect(nats_url, "tests/misplaced")
    try:
        await b.ensure_streams()
        await b.js.publish("podtax.run.log.host.vm", b'{"type": "podtax.run.log.v1", "data": {}}')
        await b.js.publish("podtax.run.log.host.vm", b"not json")

        async def handle(batch: list[events.Event]) -> dict[str, str]:
            return {}

        for name in ("reader-a", "reader-b"):
            stop = asyncio.Event()
            spec = ConsumerSpec(name, ["podtax.run.log.>"], max_deliver=2, ack_wait_s=5.0, batch=10)
            task = asyncio.create_task(b.consume_batches(spec, handle, stop))
            for _ in range(100):
                await asyncio.sleep(0.05)
                with contextlib.suppress(NotFoundError):  # not created yet
                    info = await b.js.consumer_info(subjects.STREAM, name)
                    if info.num_ack_pending == 0 and info.num_pending == 0 and info.delivered.stream_seq >= 2:
                        break
            stop.set()
            await asyncio.wait_for(task, 20)
        reasons = await _dead_reasons(b)
        assert len(reasons) == 2, reasons  # was 4: each message once per consumer
    finally:
        await b.close()
