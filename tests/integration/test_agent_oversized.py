"""A run request whose test name or parameters are huge (600 KB, still under NATS's 1 MiB) was taken by the host
agent, whose refusal then quoted it: the run failed event exceeded max_payload, each of 5 deliveries ended in a
BusError traceback telling to lower the output cap, and the runner never heard why (audit hG). Names and
parameters on the bus are bounded now: such a request is dead-lettered at once as schema-invalid, naming the
field. Real nats-server, the real Agent consuming its subject."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from podtax import config, events, subjects
from podtax.bus import Bus
from podtax.busconsume import REASON_HEADER
from podtax_host_agent.service import Agent

NODE = "n1"


def _request(run_id: str, **run: object) -> bytes:
    spec = {"run_id": run_id, "campaign": "c", "node": NODE, "env": "host", "test": "sysbench-cpu", "params": {},
            **run}
    return json.dumps({"id": f"{run_id}.req", "type": "podtax.run.requested.v1", "source": "test",
                       "time": events.now().isoformat(), "subject": f"{subjects.RUN_REQUESTED}.host.{NODE}",
                       "data": {"run": spec}}).encode()


@pytest.mark.parametrize(("run", "field"), [({"test": "x" * 600_000}, "test"),
                                            ({"params": {"k" * 500_000: 1}}, "params"),
                                            ({"test": "hdparm", "params": {"device": "d" * 600_000}}, "params")])
async def test_a_huge_request_is_dead_lettered_at_once_naming_the_field(nats_url: str, tmp_path: Path,
                                                                        run: dict, field: str) -> None:
    bus = await Bus.connect(nats_url, "test/agent")
    try:
        await bus.ensure_streams()
        settings = config.load(config.HostAgentSettings, nats_url=nats_url, agent_node=NODE,
                               agent_workdir=tmp_path / "work", agent_state_dir=tmp_path / "state")
        agent = Agent(settings, bus)
        await agent.refresh_facts()
        await bus.js.publish(f"{subjects.RUN_REQUESTED}.host.{NODE}", _request("huge-1", **run))
        dead = await bus.js.pull_subscribe(f"{subjects.DLQ_PREFIX}.>", durable="test-dlq", stream=subjects.DLQ_STREAM)
        stop = asyncio.Event()
        consumer = asyncio.create_task(bus.consume(agent.consumer(), agent.handle, stop))
        try:
            (msg,) = await dead.fetch(1, timeout=120)
        finally:
            stop.set()
            await consumer
        reason = msg.headers[REASON_HEADER]
        assert reason.startswith("schema-invalid") and f"run.{field}" in reason, reason
        failed = await bus.js.stream_info(subjects.STREAM, subjects_filter=f"{subjects.RUN_FAILED}.>")
        assert not failed.state.subjects, "no refusal was published"
    finally:
        await bus.close()
