"""A host agent's consumer deleted (`nats consumer rm PODTAX host-agent-<node>`) and the agent started again: the
consumer it makes again starts from the stream's first message, so every run request of its node still in the stream
is given to it again. Before, the agent measured again every one of them but the last it reported (hours of a real
campaign, and the new logs compete with the stored ones). Now it remembers, in its state directory, every run (and
submission) it measured: a replayed request of one is acked unrun, and a request not yet measured still runs, as does
the same run id of another submission. Real nats-server, the real agent (serve), real sysbench runs."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from pathlib import Path
from typing import Any

import nats
import pytest
from podtax import config, events, subjects
from podtax.bus import Bus
from podtax_host_agent import service

from tests.integration.harness import wait_for

NODE = "n1"
SUBMITTED = dt.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=dt.UTC)


def _run(run_id: str, submitted: dt.datetime = SUBMITTED) -> events.RunSpec:
    return events.RunSpec(run_id=run_id, campaign="c", node=NODE, env="host", test="sysbench-cpu",
                          params={"max_prime": 2000, "events": 20, "threads": 1}, timeout_s=60, submitted=submitted)


async def test_a_replayed_stream_runs_only_what_was_not_measured(nats_url: str, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    executed: list[str] = []  # each benchmark the agent executes (the real run_template, counted)
    real = service.run_template

    async def counted(run: events.RunSpec, *args: Any, **kwargs: Any) -> Any:
        executed.append(run.run_id)
        return await real(run, *args, **kwargs)

    monkeypatch.setattr(service, "run_template", counted)
    settings = config.load(config.HostAgentSettings, nats_url=nats_url, agent_node=NODE,
                           agent_workdir=tmp_path / "work", agent_state_dir=tmp_path / "state")
    bus = await Bus.connect(nats_url, "test/runner")
    agent_bus = await Bus.connect(nats_url, "test/agent")
    nc = await nats.connect(nats_url)
    logs: list[str] = []

    async def on_log(msg: Any) -> None:
        logs.append(json.loads(msg.data)["data"]["run"]["run_id"])

    await nc.subscribe(f"{subjects.RUN_LOG}.>", cb=on_log)
    stop = asyncio.Event()
    agent: asyncio.Task[None] | None = None
    try:
        await bus.ensure_streams()
        agent = asyncio.create_task(service.serve(settings, agent_bus, stop))
        for run_id in ("r-1", "r-2", "r-3"):
            await bus.publish(events.run_requested(_run(run_id), "podtax/runner"))
        await wait_for(lambda: len(logs) == 3, 120, "the three runs measured")
        stop.set()
        await asyncio.wait_for(agent, 60)
        assert executed == ["r-1", "r-2", "r-3"]

        await bus.publish(events.run_requested(_run("r-4"), "podtax/runner"))  # pending while the agent is away
        durable = subjects.agent_consumer(NODE)
        await bus.js.delete_consumer(subjects.STREAM, durable)  # `nats consumer rm`

        await agent_bus.close()
        stop = asyncio.Event()
        agent_bus = await Bus.connect(nats_url, "test/agent")
        agent = asyncio.create_task(service.serve(settings, agent_bus, stop))  # the restart: the stream replayed
        await wait_for(lambda: "r-4" in logs, 120, "the pending request measured")  # after r-1..r-3 (stream order)
        assert executed == ["r-1", "r-2", "r-3", "r-4"], "a run already measured was measured again"

        again = _run("r-1", SUBMITTED + dt.timedelta(seconds=1))  # the campaign submitted again: its own run
        await bus.publish(events.run_requested(again, "podtax/runner"))
        await wait_for(lambda: len(executed) == 5, 120, "the same run id of another submission measured")
        assert executed[-1] == "r-1"
    finally:
        stop.set()
        if agent is not None:
            await asyncio.wait_for(agent, 60)
        await nc.close()
        await agent_bus.close()
        await bus.close()
