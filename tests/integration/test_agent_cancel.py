"""`podtax campaign cancel` stops a host run in flight: the agent kills its process group and reports it failed with
reason cancelled (no log), and starts no run of that campaign afterwards. Real nats-server with the permissions
`podtax up` generates (each side logged in as its role), the real agent (serve) and a real stress-ng run of an hour."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from podtax import config, events, subjects
from podtax.bus import Bus, ConsumerSpec
from podtax_host_agent import guard, service

from tests.integration.secured import buses_fixture, secured_fixture  # noqa: F401 - fixtures

NODE = "n1"
HOUR = 3600


def _run(run_id: str, campaign: str = "c") -> events.RunSpec:
    return events.RunSpec(run_id=run_id, campaign=campaign, node=NODE, env="host", test="stress-ng-cpu",
                          params={"threads": 1, "method": "matrixprod", "timeout": HOUR}, timeout_s=HOUR)


async def _outcomes(watch, want: int, within_s: float) -> list[dict]:  # type: ignore[no-untyped-def]
    """Run logs and failures published, until `want` came or `within_s` passed."""
    got: list[dict] = []
    deadline = asyncio.get_running_loop().time() + within_s
    while len(got) < want and asyncio.get_running_loop().time() < deadline:
        try:
            msgs = await watch.fetch(1, timeout=1)
        except TimeoutError:
            continue
        for msg in msgs:
            await msg.ack()
            got.append(json.loads(msg.data))
    return got


async def _started(state: Path) -> dict:
    for _ in range(600):
        if (state / guard.RECORD).exists():
            return json.loads((state / guard.RECORD).read_text())
        await asyncio.sleep(0.1)
    raise AssertionError("the run never started")


async def test_a_cancelled_campaigns_host_run_is_stopped_and_none_starts_after(buses: dict[str, Bus],
                                                                               tmp_path: Path) -> None:
    runner, cli, agent_bus = buses["runner"], buses["cli"], buses["host_agent"]
    settings = config.load(config.HostAgentSettings, nats_url="nats://127.0.0.1:1", agent_node=NODE,
                           agent_workdir=tmp_path / "work", agent_state_dir=tmp_path / "state")
    watch = await runner._subscribe(ConsumerSpec("watch", [f"{subjects.RUN_LOG}.>", f"{subjects.RUN_FAILED}.>"]))
    stop = asyncio.Event()
    agent = asyncio.create_task(service.serve(settings, agent_bus, stop))
    pgid = 0
    try:
        await runner.publish(events.run_requested(_run("long-1"), "podtax/runner"))
        record = await _started(tmp_path / "state")
        pgid = record["pgid"]
        assert guard.group_members(pgid) and guard.marked(record["marker"])
        await asyncio.sleep(1)  # the tool runs
        await cli.publish(events.campaign_cancelled(events.CampaignCancelled(campaign="c")))

        outcomes = await _outcomes(watch, 1, 30)  # the run lasts an hour when it is not stopped
        assert outcomes, "nothing reported 30 s after the cancellation: the run went on"
        stopped = outcomes[0]
        assert stopped["type"] == "podtax.run.failed.v1", "no log of a run cut short"
        assert (stopped["data"]["run"]["run_id"], stopped["data"]["reason"]) == ("long-1", "cancelled")
        assert "stopped after" in stopped["data"]["detail"]
        assert guard.group_members(pgid) == [] and guard.marked(record["marker"]) == [], "every process of it is gone"
        assert not (tmp_path / "state" / guard.RECORD).exists()
        assert guard.last_reported(tmp_path / "state") == "long-1", "its redelivery is not run"
        assert list((tmp_path / "state" / "outbox").glob("*")) == [], "nothing half-stored"

        await runner.publish(events.run_requested(_run("after-1"), "podtax/runner"))  # one more of that campaign
        await runner.publish(events.run_requested(_run("other-1", "d").model_copy(
            update={"params": {"threads": 1, "method": "matrixprod", "ops": 50}}), "podtax/runner"))
        after, other = await _outcomes(watch, 2, 60)
        assert (after["type"], after["data"]["reason"]) == ("podtax.run.failed.v1", "cancelled")
        assert after["data"]["run"]["run_id"] == "after-1" and "not started" in after["data"]["detail"]
        assert (other["type"], other["data"]["run"]["run_id"]) == ("podtax.run.log.v1", "other-1"), "others run"
        assert other["data"]["exit_code"] == 0
    finally:
        if pgid and guard.group_members(pgid):  # before the fix: do not leave an hour of stress-ng behind
            os.killpg(pgid, 9)
        stop.set()
        await asyncio.wait_for(agent, 30)


async def test_an_agent_restarted_after_a_cancellation_still_starts_none_of_its_runs(nats_url: str,
                                                                                      tmp_path: Path) -> None:
    """The cancellation is acked once handled, so a restarted agent does not get it again: a request of that
    campaign it gets then (one not yet delivered, or the runner's resend) must still not start."""
    bus = await Bus.connect(nats_url, "test/agent")
    try:
        await bus.ensure_streams()
        watch = await bus._subscribe(ConsumerSpec("watch", [f"{subjects.RUN_LOG}.>", f"{subjects.RUN_FAILED}.>"]))
        settings = config.load(config.HostAgentSettings, nats_url=nats_url, agent_node=NODE,
                               agent_workdir=tmp_path / "work", agent_state_dir=tmp_path / "state")
        first = service.Agent(settings, bus)
        await first.on_cancel(events.campaign_cancelled(events.CampaignCancelled(campaign="c")))
        second = service.Agent(settings, bus)  # the restart
        await second.refresh_facts()
        short = _run("late-1").model_copy(update={"params": {"threads": 1, "method": "matrixprod", "ops": 50}})
        await second.handle(events.run_requested(short, "podtax/runner"))
        [refused] = await _outcomes(watch, 1, 10)
        assert (refused["type"], refused["data"]["reason"]) == ("podtax.run.failed.v1", "cancelled"), refused
        assert "not started" in refused["data"]["detail"]
    finally:
        await bus.close()
