"""Fault scenario "poison batch": one bad event among valid ones must not take them to the DLQ.

41 results reach the analyzer in one batch: 40 valid, 1 forged as raw JSON with `NaN` as a metric
value (bypassing the producer's model checks) and 1 that passes every schema check but cannot be
stored (a u64 cgroup counter beyond DuckDB's BIGINT). Expected: the 40 valid results stored once
each; the 2 bad ones, and only they, in PODTAX_DLQ, each with its own reason.

For the `make faults` suite: ``run() -> dict(planned, results, failures, duplicates, lost)``
starts its own nats-server in a temporary directory. ``scenario(nats_url, tmp)`` is the same
against a running server (the pytest test uses it with the `nats_url` fixture).
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from pathlib import Path
from typing import Any

import nats
from podtax import events, natsserver, subjects
from podtax.bus import REASON_HEADER, Bus

from tests.integration.harness import services, wait_for

VALID = 40
SOURCE = "faults/poison"


def result(run_id: str, **provenance: int) -> events.ResultV1:
    run = events.RunSpec(run_id=run_id, campaign="poison", node="n1", env="host", test="sysbench-cpu",
                         params={"threads": 1, "max_prime": 2000, "events": 100})
    now = events.now()
    res = events.Result(run=run, tool="sysbench", tool_version="sysbench 1.0.20", parser_version="1",
                        metrics=[events.Metric(name="events_per_second", value=1.5, unit="events/s",
                                               higher_is_better=True)],
                        started_at=now, ended_at=now, provenance=events.Provenance(**provenance))
    return events.result(res, SOURCE, event_id=f"{run_id}.result")


async def dead_letters(nats_url: str, want: int, timeout: float = 30.0) -> list[nats.aio.msg.Msg]:
    nc = await nats.connect(nats_url)
    try:
        sub = await nc.jetstream().pull_subscribe(f"{subjects.DLQ_PREFIX}.>", stream=subjects.DLQ_STREAM)
        msgs: list[nats.aio.msg.Msg] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while len(msgs) < want and loop.time() < deadline:
            with contextlib.suppress(nats.errors.TimeoutError, TimeoutError):
                msgs += await sub.fetch(want - len(msgs), timeout=0.5)
        with contextlib.suppress(nats.errors.TimeoutError, TimeoutError):  # anything beyond what was expected
            msgs += await sub.fetch(10, timeout=1.0)
        return msgs
    finally:
        await nc.close()


async def scenario(nats_url: str, tmp: Path) -> dict[str, Any]:
    valid = [result(f"ok-{i}") for i in range(VALID)]
    nan = result("nan-1")
    forged = events.encode(nan).replace(b'"value":1.5', b'"value":NaN')
    assert b"NaN" in forged
    unstorable = result("u64-1", nr_throttled_before=0, nr_throttled_after=2**64)
    bus = await Bus.connect(nats_url, SOURCE)
    await bus.ensure_streams()
    await bus.publish_many(valid[:20])
    await bus.js.publish(nan.subject, forged, headers={"Nats-Msg-Id": nan.id})
    await bus.publish(unstorable)
    await bus.publish_many(valid[20:])
    await bus.close()
    async with services(nats_url, tmp) as s:
        await s.analyzer(analyzer_batch=100)  # every message fits one batch
        count = "SELECT count(*), count(DISTINCT run_id) FROM runs WHERE run_id LIKE 'ok-%'"
        await wait_for(lambda: (s.query(count) or [(0,)])[0][0] >= VALID, 60, f"{VALID} valid results stored")
        dlq = await dead_letters(nats_url, 2)
        stored, distinct = s.query(count)[0]
        bad_stored = s.query("SELECT count(*) FROM runs WHERE run_id NOT LIKE 'ok-%'")[0][0]
    dead_ids = sorted(events.decode(m.data).id if b"NaN" not in m.data else "nan-1.result" for m in dlq)
    valid_dead = [i for i in dead_ids if i.startswith("ok-")]
    ok = distinct == VALID and stored == distinct and not valid_dead and bad_stored == 0 and len(dlq) == 2
    return {"ok": ok, "planned": VALID + 2, "results": distinct, "failures": len(dlq), "duplicates": stored - distinct,
            "lost": VALID - distinct + (2 - len(dlq) - bad_stored), "dead_ids": dead_ids,
            "valid_in_dlq": len(valid_dead), "reasons": sorted(m.headers[REASON_HEADER] for m in dlq),
            "bad_stored": bad_stored}


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="podtax-fault-") as tmp:
        server = natsserver.start(Path(tmp) / "jetstream", log_file=Path(tmp) / "nats.log")
        try:
            return asyncio.run(scenario(server.url, Path(tmp)))
        finally:
            server.stop()


if __name__ == "__main__":
    print(run())
