"""A runner killed between recording a host run in flight (saved first, so a restart never sends it twice) and
sending its request left the run unsent: the next runner waited for it, and it failed no-report after its timeout
+ grace (a CI: tests/e2e/test_campaign.py::test_runner_killed_mid_campaign_resumes_without_running_twice, one
run 'no result within 60 s + grace', 120 s late). The next runner now sends the request again under the same event
id: the run is requested once, whether or not the killed runner had sent it. Real nats-server, the real Runner."""

from __future__ import annotations

import asyncio
import json

import pytest
from nats.js.errors import NotFoundError
from podtax import config, events, subjects
from podtax.bus import Bus
from podtax_runner.service import Runner

from tests.faults.drill import seed_nodes

NODE = "n1"
SPEC = {"name": "hostresend", "nodes": [NODE], "environments": ["host"],
        "tests": [{"test": "sysbench-cpu", "params": {"max_prime": 2000, "events": 100, "threads": 1}}],
        "repetitions": {"min": 2, "max": 2}, "timeout": 60, "seed": 1}
SUBJECT = subjects.join(subjects.RUN_REQUESTED, "host", NODE)


async def new_runner(bus: Bus) -> Runner:
    """A runner as `serve` builds it after a restart: state loaded from KV, runs in flight resumed."""
    settings = config.load(config.RunnerSettings, nats_url=bus.nc.connected_url.geturl(), runner_kubernetes=False)
    runner = Runner(settings, bus, await bus.kv(subjects.RUNNER_BUCKET), None)
    await runner.load()
    return runner


async def requested(bus: Bus) -> list[str]:
    """The run ids of the host requests on the stream for NODE (the last one; none: [])."""
    try:
        msg = await bus.js.get_last_msg(subjects.STREAM, SUBJECT)
    except NotFoundError:
        return []
    return [json.loads(msg.data)["data"]["run"]["run_id"]]


async def test_a_host_run_saved_in_flight_but_never_sent_is_sent_by_the_next_runner(
        nats_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    bus = await Bus.connect(nats_url, "test/runner")
    try:
        await bus.ensure_streams()
        await seed_nodes(bus, [NODE])
        first = await new_runner(bus)
        await first.on_campaign(events.campaign_submitted(events.CampaignSubmitted(campaign=SPEC["name"], spec=SPEC)))

        async def killed(*_: object) -> None:  # the runner dies after the save, before the request goes out
            raise asyncio.CancelledError

        monkeypatch.setattr(first, "_dispatch", killed)
        with pytest.raises(asyncio.CancelledError):
            await first.tick()
        (run_id,) = [r["run"]["run_id"] for _, v in await first._values("run.hostresend.*")
                     if (r := json.loads(v)).get("status") == "dispatched"]
        assert await requested(bus) == []
        monkeypatch.undo()

        await new_runner(bus)
        assert await requested(bus) == [run_id]  # before: never requested, failed no-report 120 s later
        await new_runner(bus)  # restarted again: the same request, not a second one
        info = await bus.js.stream_info(subjects.STREAM, subjects_filter=SUBJECT)
        assert info.state.subjects == {SUBJECT: 1}, info.state.subjects
    finally:
        await bus.close()
