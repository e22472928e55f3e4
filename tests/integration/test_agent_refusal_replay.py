"""A run the host agent refused (here: its work directory writable by all; `run failed` published, the runner records
the run failed) and its request given again by a consumer made again (deleted: the stream replayed from its first
message) once the cause is gone (the mode fixed, weeks later). Before, refusals were not noted in <state>/measured:
the replayed request was run, and its late result superseded the failure the analyzer had recorded (review r1 of
50f4f4d0, session 50). Now a refusal, once published, is noted as a measured run is: its request is acked unrun. A
refusal NATS did not take (no stream: nothing published) is not noted, so its redelivery is answered again. Real
nats-server, the real agent (serve, handle), real sysbench."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from podtax import config, events, subjects
from podtax.bus import Bus
from podtax_host_agent import measured, service

from tests.integration.harness import wait_for
from tests.integration.served_agent import NODE, ServedAgent, executed_fixture, served_agent_fixture  # noqa: F401
from tests.integration.served_agent import run_spec as _run


async def test_a_refused_run_is_not_run_when_the_stream_is_replayed(served_agent: tuple[Bus, ServedAgent, Any],
                                                                    tmp_path: Path, executed: list[str]) -> None:
    bus, agent, nc = served_agent
    work = tmp_path / "work"  # the agent's (served_agent)
    seen: list[str] = []  # "<log|failed> <run id>", in the order published

    async def on_msg(msg: Any) -> None:
        kind = "log" if msg.subject.startswith(subjects.RUN_LOG) else "failed"
        seen.append(f"{kind} {json.loads(msg.data)['data']['run']['run_id']}")

    await nc.subscribe(f"{subjects.RUN_LOG}.>", cb=on_msg)
    await nc.subscribe(f"{subjects.RUN_FAILED}.>", cb=on_msg)
    try:
        await bus.ensure_streams()
        work.mkdir(mode=0o700)
        work.chmod(0o777)  # unsafe: the request is refused
        agent.serve()
        await bus.publish(events.run_requested(_run("r-1"), "podtax/runner"))
        await wait_for(lambda: len(seen) == 1, 60, "the refusal")
        await agent.stopped()
        assert seen == ["failed r-1"] and executed == []

        work.chmod(0o700)  # fixed by the operator
        await bus.publish(events.run_requested(_run("r-2"), "podtax/runner"))  # pending while the agent is away
        await agent.serve_replayed(bus)  # the restart: the stream replayed
        await wait_for(lambda: "log r-2" in seen, 120, "the pending request measured")  # after r-1 (stream order)
        assert executed == ["r-2"], f"the run refused was run when its request came back: {seen}"
        assert seen == ["failed r-1", "log r-2"]
    finally:
        await agent.stopped(errors_ok=True)


async def test_a_refusal_not_published_is_not_noted(nats_url: str, tmp_path: Path) -> None:
    state = tmp_path / "state"
    settings = config.load(config.HostAgentSettings, nats_url=nats_url, agent_node=NODE,
                           agent_workdir=tmp_path / "work", agent_state_dir=state)
    bus = await Bus.connect(nats_url, "test/agent")
    try:
        agent = service.Agent(settings, bus)  # its host facts never collected: every run refused, tool missing
        request = events.run_requested(_run("r-1"), "podtax/runner")
        with pytest.raises(Exception):  # noqa: B017, PT011 - no stream takes the refusal (nats-py: no responders)
            await agent.handle(request)
        assert agent.measured == {} and measured.load(state) == {}, "a refusal NATS did not take was noted"
        await bus.ensure_streams()
        await agent.handle(request)  # published now: noted
        assert list(measured.load(state)) == [measured.key(_run("r-1"))]
        assert list(agent.measured) == [measured.key(_run("r-1"))]
    finally:
        await bus.close()
