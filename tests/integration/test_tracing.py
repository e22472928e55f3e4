"""One trace per run: dispatch (the root), the host agent's execution, parse and store share the
run's trace id; the root links to the campaign submission's span. An in-memory exporter records
every span of the in-process services (a real nats-server, real sysbench, a real DuckDB file)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from podtax import telemetry
from podtax.bus import Bus
from podtax.cli.main import main as cli

from tests.integration.harness import node_known, services, wait_for

NODE = "trace-node"


@pytest.fixture(scope="module")
def spans() -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if isinstance(provider, TracerProvider):  # another test of this process set one: give it podtax's ids
        provider.id_generator = telemetry._RunIdGenerator()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        telemetry.setup_tracing("test", processor=SimpleSpanProcessor(exporter))
    return exporter


def test_service_name_is_not_prefixed_twice() -> None:
    assert telemetry.service_name("scheduler") == "podtax-scheduler"
    assert telemetry.service_name("podtax-scheduler") == "podtax-scheduler"


def test_run_ids_are_stable_and_distinct() -> None:
    assert telemetry.run_ids("c-1") == telemetry.run_ids("c-1")
    assert telemetry.run_ids("c-1") != telemetry.run_ids("c-2")
    assert all(i > 0 for i in telemetry.run_ids("c-1"))


def test_a_run_event_outside_any_span_carries_no_header_consumers_derive_it() -> None:
    from podtax import events

    now = events.now()
    run = events.RunSpec(run_id="hdr-1", campaign="c", node="n", env="host", test="sysbench-cpu", params={})
    log = events.raw_log(events.RawLog(run=run, stdout="x", exit_code=0, started_at=now, ended_at=now), "t")
    assert telemetry.inject_for({"Nats-Msg-Id": log.id}, log) == {"Nats-Msg-Id": log.id}
    scoped = telemetry.run_context("other-run")
    with telemetry.run_scope({"hdr-1": scoped}):  # a batch consumer's per-message span: it travels
        headers = telemetry.inject_for({}, log)
    parent = trace.get_current_span(telemetry.extract(headers)).get_span_context()
    assert parent.trace_id == telemetry.run_ids("other-run")[0]


def _store_spans_ended(exporter: InMemorySpanExporter, run_ids: list[str]) -> bool:
    """Whether every run's trace holds a finished store span (the analyzer's, for its run.result)."""
    traces = {telemetry.run_ids(run_id)[0] for run_id in run_ids}
    stored = {sp.context.trace_id for sp in exporter.get_finished_spans() if "run.result" in sp.name}
    return traces <= stored


async def test_a_run_is_one_trace_from_dispatch_to_store(nats_url: str, tmp_path: Path, spans: InMemorySpanExporter,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    campaign = tmp_path / "traced.yaml"
    campaign.write_text(yaml.safe_dump({
        "name": "traced", "nodes": [NODE], "environments": ["host"],
        "tests": [{"test": "sysbench-cpu", "params": {"threads": 1, "max_prime": 2000, "events": 200, "time": 5}}],
        "repetitions": {"min": 2, "max": 2}, "timeout": 60}))
    async with services(nats_url, tmp_path) as s:
        await s.analyzer()
        await s.parser()
        await s.agent(node=NODE)
        await s.runner()
        bus = await Bus.connect(nats_url, "test")
        try:
            await node_known(bus, NODE)  # the runner recorded the node: a campaign naming it is accepted
        finally:
            await bus.close()
        assert await asyncio.to_thread(cli, ["campaign", "submit", str(campaign)]) == 0
        await wait_for(lambda: s.query("SELECT count(*) FROM runs WHERE campaign='traced'")[0][0] == 2, 90,
                       "two stored runs")
        run_ids = [r[0] for r in s.query("SELECT run_id FROM runs WHERE campaign='traced'")]
        # the analyzer ends a run's store span once its batch is committed: the rows can be read a moment before
        await wait_for(lambda: _store_spans_ended(spans, run_ids), 30, "the runs' store spans to end")
    finished = spans.get_finished_spans()
    submit = [sp for sp in finished if sp.name == "campaign submit traced"]
    assert len(submit) == 1
    for run_id in run_ids:
        trace_id, root_span_id = telemetry.run_ids(run_id)
        in_trace = [sp for sp in finished if sp.context.trace_id == trace_id]
        names = " | ".join(sorted(sp.name for sp in in_trace))
        roots = [sp for sp in in_trace if sp.parent is None]
        assert len(roots) == 1 and roots[0].context.span_id == root_span_id, names
        assert roots[0].name.startswith("run sysbench-cpu host")
        assert any(link.context.trace_id == submit[0].context.trace_id for link in roots[0].links), \
            "the run's root links to the submission's trace"
        assert any("run.requested" in sp.name for sp in in_trace), f"no execution span: {names}"
        assert any("run.log" in sp.name for sp in in_trace), f"no parse/archive span: {names}"
        assert any("run.result" in sp.name for sp in in_trace), f"no store span: {names}"
        ids = {sp.context.span_id for sp in in_trace}
        assert all(sp.parent is None or sp.parent.span_id in ids for sp in in_trace), f"a broken parent: {names}"
