"""The walking skeleton, end to end with real parts: run requested -> host agent (real sysbench)
-> raw log -> parser -> result -> analyzer -> DuckDB row; idempotency; dead letters; refusals."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

import httpx
import nats
from podtax import events, subjects
from podtax.bus import Bus

from tests.integration.harness import services, wait_for

NODE = "node-1.lab"


def spec(run_id: str, **kw: object) -> events.RunSpec:
    base: dict = {"run_id": run_id, "campaign": "skeleton", "node": NODE, "env": "host", "test": "sysbench-cpu",
                  "params": {"threads": 1, "max_prime": 2000, "events": 200, "time": 10}, "timeout_s": 60}
    return events.RunSpec(**{**base, **kw})


async def test_run_requested_to_duckdb_row_with_real_sysbench(nats_url: str, tmp_path: Path) -> None:
    async with services(nats_url, tmp_path) as s:
        await s.analyzer()
        await s.parser()
        await s.agent(node=NODE)
        bus = await Bus.connect(nats_url, "test")
        await bus.publish(events.run_requested(spec("run-1"), "test"))
        row = await wait_for(lambda: s.query("SELECT status, tool, tool_version, node FROM runs WHERE run_id='run-1'"),
                             60, "the result row")
        assert row[0] == ("ok", "sysbench", "1.0.20", NODE) or row[0][:2] == ("ok", "sysbench")
        metrics = dict(s.query("SELECT name, value FROM metrics WHERE run_id='run-1'"))
        assert metrics["events_per_second"] > 0
        assert metrics["events"] == 200
        raw = s.query("SELECT stdout, stderr, exit_code FROM raw_logs WHERE run_id='run-1'")
        assert "events per second" in raw[0][0] and "#podtax phase=before" in raw[0][1] and raw[0][2] == 0
        facts = s.query("SELECT node, hw_threads FROM host_facts")
        assert facts and facts[0][0] == NODE
        await bus.close()


async def test_duplicates_and_redeliveries_create_one_row(nats_url: str, tmp_path: Path) -> None:
    log_text = (Path(__file__).parents[1] / "corpus/debian12-x86_64/sysbench-cpu-prime100000-1t.log").read_text()
    async with services(nats_url, tmp_path) as s:
        await s.analyzer()
        await s.parser()
        bus = await Bus.connect(nats_url, "test")
        now = events.now()
        raw = events.RawLog(run=spec("dup-1", params={"threads": 1, "max_prime": 100000, "events": 200, "time": 0}),
                            stdout=log_text, exit_code=0, started_at=now, ended_at=now)
        first = events.raw_log(raw, "test")
        await bus.publish(first)
        await bus.publish(first)  # same Nats-Msg-Id: JetStream drops it
        await bus.publish(events.raw_log(raw, "test"))  # a new event id for the same run: the analyzer drops it
        await wait_for(lambda: s.query("SELECT count(*) FROM runs WHERE run_id='dup-1'")[0][0] == 1, 30, "the row")
        await asyncio.sleep(1.5)
        assert s.query("SELECT count(*) FROM runs")[0][0] == 1
        assert s.query("SELECT count(*) FROM raw_logs")[0][0] == 1
        assert s.query("SELECT count(*) FROM metrics WHERE run_id='dup-1'")[0][0] >= 4
        await bus.close()


async def test_schema_invalid_message_lands_in_dead_letter_stream(nats_url: str, tmp_path: Path) -> None:
    async with services(nats_url, tmp_path) as s:
        await s.analyzer()
        nc = await nats.connect(nats_url)
        js = nc.jetstream()
        await js.publish("podtax.run.result.host.x", b'{"type": "podtax.run.result.v1", "data": {"oops": 1}}')
        await js.publish("podtax.run.result.host.x", b"\xff not json at all")
        sub = await js.pull_subscribe(f"{subjects.DLQ_PREFIX}.>", durable="dlq-reader", stream=subjects.DLQ_STREAM)
        msgs = []
        for _ in range(40):
            with contextlib.suppress(nats.errors.TimeoutError):
                msgs += await sub.fetch(2, timeout=0.5)
            if len(msgs) >= 2:
                break
        reasons = sorted(m.headers["Podtax-Dead-Reason"] for m in msgs)
        assert len(reasons) == 2
        assert all(r.startswith("schema-invalid") for r in reasons)
        assert msgs[0].headers["Podtax-Original-Subject"] == "podtax.run.result.host.x"
        assert s.query("SELECT count(*) FROM runs")[0][0] == 0
        await nc.close()


async def test_agent_refuses_unknown_template_and_bad_params(nats_url: str, tmp_path: Path) -> None:
    async with services(nats_url, tmp_path) as s:
        await s.analyzer()
        await s.agent(node=NODE)
        bus = await Bus.connect(nats_url, "test")
        await bus.publish(events.run_requested(spec("bad-1", test="rm-rf"), "test"))
        await bus.publish(events.run_requested(spec("bad-2", params={"threads": 100000}), "test"))
        await bus.publish(events.run_requested(spec("bad-3", params={"threads": 1, "cmd": "sh -c id"}), "test"))
        rows = await wait_for(lambda: (r := s.query(
            "SELECT run_id, failure_stage, failure_reason, failure_detail FROM runs ORDER BY run_id")) and len(r) == 3
            and r, 30, "three failures")
        assert [r[:3] for r in rows] == [("bad-1", "agent", "unknown-template"), ("bad-2", "agent", "invalid-params"),
                                        ("bad-3", "agent", "invalid-params")]
        assert "threads" in rows[1][3] and "cmd" in rows[2][3]
        await bus.close()


async def test_api_serves_runs_and_results(nats_url: str, tmp_path: Path) -> None:
    from podtax import natsserver

    port = natsserver.free_port()
    log_text = (Path(__file__).parents[1] / "corpus/debian12-x86_64/sysbench-cpu-prime100000-2t.log").read_text()
    async with services(nats_url, tmp_path) as s:
        await s.analyzer(port=port)
        await s.parser()
        bus = await Bus.connect(nats_url, "test")
        now = events.now()
        await bus.publish(events.raw_log(events.RawLog(
            run=spec("api-1", params={"threads": 2, "max_prime": 100000, "events": 400, "time": 0}),
            stdout=log_text, exit_code=0, started_at=now, ended_at=now), "test"))
        await wait_for(lambda: s.query("SELECT 1 FROM runs WHERE run_id='api-1'"), 30, "the row")
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            assert (await http.get("/healthz")).json()["status"] == "ok"
            runs = (await http.get("/api/runs", params={"campaign": "skeleton"})).json()
            assert [r["run_id"] for r in runs] == ["api-1"]
            results = (await http.get("/api/results")).json()
            names = {m["name"] for m in results[0]["metrics"]}
            assert "events_per_second" in names
            assert json.dumps(results)  # serialisable
            assert (await http.get("/openapi.json")).status_code == 200
        await bus.close()
