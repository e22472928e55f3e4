"""Prometheus metrics on every service's health port: messaging metrics from the bus for every
consumer, and what each service adds (agent runs, parse outcomes, DuckDB write latency)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
from podtax import events, natsserver
from podtax.bus import Bus
from podtax.service import serve_health
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.harness import services, wait_for
from tests.integration.test_pipeline import NODE, spec


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(found: dict, name: str, **labels: str) -> float:
    return sum(v for (n, ls), v in found.items() if n == name and set(labels.items()) <= set(ls))


# what the run adds to each counter at least; each service counts after what the test sees (the analyzer after
# its commit, which shows the run's row; the agent after its log's publish)
GROWN = [(1, "podtax_agent_runs_total", {"test": "sysbench-cpu", "outcome": "ok"}),
         (1, "podtax_agent_run_duration_seconds_count", {"test": "sysbench-cpu"}),
         (1, "podtax_parser_outcomes_total", {"outcome": "result"}),
         (1, "podtax_analyzer_write_duration_seconds_count", {}),
         (3, "podtax_analyzer_events_stored_total", {}),  # the log, the result, the host facts
         (1, "podtax_messages_handled_total", {"consumer": "parser", "outcome": "ack"}),
         (1, "podtax_events_published_total", {"type": "podtax.run.result.v1"})]


async def test_metrics_endpoint_counts_a_run_through_every_service(nats_url: str, tmp_path: Path) -> None:
    async with services(nats_url, tmp_path) as s:
        await s.analyzer()
        await s.parser()
        await s.agent(node=NODE)
        bus = await Bus.connect(nats_url, "test")
        port = natsserver.free_port()
        server = await serve_health(port, bus, "127.0.0.1")
        async with httpx.AsyncClient() as http:
            before = samples((await http.get(f"http://127.0.0.1:{port}/metrics")).text)

            def grew(after: dict, name: str, **labels: str) -> float:
                return value(after, name, **labels) - value(before, name, **labels)

            await bus.publish(events.run_requested(spec("metrics-1"), "test"))
            await wait_for(lambda: s.query("SELECT count(*) FROM runs WHERE run_id='metrics-1'")[0][0] == 1, 60,
                           "the stored run")
            deadline = time.monotonic() + 30  # the counters move after the row is seen: read until they have
            while True:
                resp = await http.get(f"http://127.0.0.1:{port}/metrics")
                after = samples(resp.text)
                if all(grew(after, name, **labels) >= least for least, name, labels in GROWN) \
                        or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.1)
            health = await http.get(f"http://127.0.0.1:{port}/healthz")
        server.close()
        await bus.close()
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/plain")
    assert health.status_code == 200
    assert grew(after, "podtax_agent_runs_total", test="sysbench-cpu", outcome="ok") == 1
    assert grew(after, "podtax_agent_run_duration_seconds_count", test="sysbench-cpu") == 1
    for least, name, labels in GROWN:
        assert grew(after, name, **labels) >= least, (name, labels)
    assert ("podtax_consumer_pending_messages", (("consumer", "parser"),)) in after
