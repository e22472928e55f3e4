"""The real host agent (service.serve) of node NODE, stopped and started again with its stream replayed (its consumer
deleted, as `nats consumer rm`), the benchmarks it executes counted: what the replay tests share."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nats
import pytest
from podtax import config, events, subjects
from podtax.bus import Bus
from podtax_host_agent import service

NODE = "n1"
SUBMITTED = dt.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=dt.UTC)


def run_spec(run_id: str, submitted: dt.datetime = SUBMITTED) -> events.RunSpec:
    """A small sysbench-cpu run of NODE."""
    return events.RunSpec(run_id=run_id, campaign="c", node=NODE, env="host", test="sysbench-cpu",
                          params={"max_prime": 2000, "events": 20, "threads": 1}, timeout_s=60, submitted=submitted)


@pytest.fixture(name="executed")
def executed_fixture(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The run id of each benchmark the agent executes (the real service.run_template, counted), in order."""
    executed: list[str] = []
    real = service.run_template

    async def counted(run: events.RunSpec, *args: Any, **kwargs: Any) -> Any:
        executed.append(run.run_id)
        return await real(run, *args, **kwargs)

    monkeypatch.setattr(service, "run_template", counted)
    return executed


class ServedAgent:
    """service.serve(settings, bus, stop) as a task on its own connection."""

    def __init__(self, settings: config.HostAgentSettings, url: str, bus: Bus) -> None:
        self.settings, self.url, self.bus = settings, url, bus
        self.stop = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    def serve(self) -> None:
        self.task = asyncio.create_task(service.serve(self.settings, self.bus, self.stop))

    async def stopped(self, errors_ok: bool = False) -> None:
        """Stop it and wait for serve() to return (60 s at most); errors_ok: what it raised is not raised here."""
        self.stop.set()
        if self.task is not None:
            await asyncio.wait_for(asyncio.gather(self.task, return_exceptions=True) if errors_ok else self.task, 60)

    async def serve_replayed(self, runner: Bus) -> None:
        """Its consumer deleted (`nats consumer rm`), then served again on a new connection (the restart): the new
        consumer gives it the stream from its first message."""
        await runner.js.delete_consumer(subjects.STREAM, subjects.agent_consumer(self.settings.agent_node))
        await self.bus.close()
        self.stop = asyncio.Event()
        self.bus = await Bus.connect(self.url, "test/agent")
        self.serve()


@pytest.fixture(name="served_agent")
async def served_agent_fixture(nats_url: str, tmp_path: Path) -> AsyncIterator[tuple[Bus, ServedAgent, Any]]:
    """(the runner's connection, NODE's agent not served yet: work and state directories tmp_path/work and
    tmp_path/state, a plain nats-py connection to watch subjects), closed after the test."""
    settings = config.load(config.HostAgentSettings, nats_url=nats_url, agent_node=NODE,
                           agent_workdir=tmp_path / "work", agent_state_dir=tmp_path / "state")
    bus = await Bus.connect(nats_url, "test/runner")
    agent = ServedAgent(settings, nats_url, await Bus.connect(nats_url, "test/agent"))
    nc = await nats.connect(nats_url)
    yield bus, agent, nc
    await nc.close()
    await agent.bus.close()
    await bus.close()
