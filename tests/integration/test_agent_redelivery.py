"""A host agent killed after it published a run's log but before it acked the request gets the request
again from JetStream when it restarts: it must not run the benchmark twice. Real nats-server, real
sysbench, two agents in turn on the same state directory (the restart)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nats
import pytest
from podtax import config, events, subjects
from podtax.bus import Bus
from podtax_host_agent import guard, measured, service
from podtax_host_agent.service import Agent

NODE = "n1"


def _setup(nats_url: str, tmp_path: Path, run_id: str) -> tuple[config.HostAgentSettings, events.RunSpec]:
    settings = config.load(config.HostAgentSettings, nats_url=nats_url, agent_node=NODE,
                           agent_workdir=tmp_path / "work", agent_state_dir=tmp_path / "state")
    return settings, events.RunSpec(run_id=run_id, campaign="c", node=NODE, env="host", test="sysbench-cpu",
                                    params={"max_prime": 2000, "events": 50, "threads": 1}, timeout_s=30)


async def test_a_restarted_agent_does_not_run_the_request_it_reported_again(nats_url: str, tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    bus = await Bus.connect(nats_url, "test/agent")
    nc = await nats.connect(nats_url)
    logs: list[str] = []

    async def on_log(msg: Any) -> None:
        logs.append(json.loads(msg.data)["data"]["run"]["run_id"])

    await nc.subscribe(f"{subjects.RUN_LOG}.>", cb=on_log)
    try:
        await bus.ensure_streams()
        settings, run = _setup(nats_url, tmp_path, "redelivered-1")
        request = events.run_requested(run, "test")
        first = Agent(settings, bus)
        await first.refresh_facts()
        await first.handle(request)
        await nc.flush()
        assert logs == ["redelivered-1"]
        assert guard.last_reported(tmp_path / "state") == measured.key(run)  # the run id and its submission

        second = Agent(settings, bus)  # the restart: the unacked request comes back
        await second.refresh_facts()
        await second.handle(request)
        other = run.model_copy(update={"run_id": "next-1"})
        await second.handle(events.run_requested(other, "test"))  # the next request runs as usual
        await nc.flush()
        assert logs == ["redelivered-1", "next-1"], "the reported run was not run again"
        assert guard.last_reported(tmp_path / "state") == measured.key(other)
        # the run noted before the start and those reported since, by their log's event id (measured.key)
        assert list(second.done) == ["redelivered-1.log", "next-1.log"]
        monkeypatch.setattr(service, "DONE_KEEP", 2)  # the memory of reported runs is bounded, oldest out
        await second.handle(events.run_requested(run.model_copy(update={"run_id": "last-1"}), "test"))
        assert list(second.done) == ["next-1.log", "last-1.log"]
    finally:
        await nc.close()
        await bus.close()


async def test_an_agent_killed_after_publishing_has_already_noted_the_run(nats_url: str, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed between publishing a run's log and removing its outbox copy (review hR2): the run was not yet noted
    as reported, so a restart past JetStream's duplicate window could run it again. It is noted first now."""
    bus = await Bus.connect(nats_url, "test/agent")
    try:
        await bus.ensure_streams()
        settings, run = _setup(nats_url, tmp_path, "killed-1")
        agent = Agent(settings, bus)
        await agent.refresh_facts()

        def killed(*_: object) -> None:
            raise SystemExit("killed")

        monkeypatch.setattr(service.outbox, "remove", killed)
        with pytest.raises(SystemExit):
            await agent.handle(events.run_requested(run, "test"))
        assert guard.last_reported(tmp_path / "state") == measured.key(run)
    finally:
        await bus.close()
