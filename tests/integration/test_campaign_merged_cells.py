"""`threads: [1, all]` on a 1-thread node (a real nats-server, the runner in this process, the real CLI):
the two combinations are one cell there, planned once; status counts exactly the runs planned and shows
the warning, and cancel leaves nothing "left" (the campaign stayed "1 left, running" for ever before)."""

from __future__ import annotations

import asyncio
import json

import pytest
from podtax import config, events, subjects
from podtax.bus import Bus, ConsumerSpec
from podtax.cli.main import main as cli
from podtax_runner.service import Runner

from tests.faults.drill import header

SPEC = {"name": "one-cpu", "nodes": ["vm"], "environments": ["host"],
        "tests": [{"test": "sysbench-cpu", "params": {"events": 100}, "matrix": {"threads": [1, "all"]}}],
        "repetitions": {"min": 2, "max": 2}, "timeout": 5}


async def test_cells_equal_once_all_is_resolved_plan_once_and_cancel_to_the_end(
        nats_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    bus = await Bus.connect(nats_url, "test")
    await bus.ensure_streams()
    await bus.kv(subjects.RUNNER_BUCKET)
    await bus.kv_put_many(subjects.RUNNER_BUCKET, [(subjects.node_key("vm"), json.dumps(
        {"node": "vm", "hw_threads": 1, "host_agent": True, "kubernetes": True}).encode())])
    settings = config.load(config.RunnerSettings, nats_url=nats_url, runner_kubernetes=False)
    runner = Runner(settings, bus, await bus.kv(subjects.RUNNER_BUCKET), None)  # planned, never dispatched
    await runner.on_campaign(events.campaign_submitted(events.CampaignSubmitted(campaign="one-cpu", spec=SPEC)))
    stop = asyncio.Event()
    consumer = asyncio.create_task(bus.consume(ConsumerSpec("runner-cancels", [f"{subjects.CAMPAIGN_CANCELLED}.>"]),
                                               runner.on_cancel, stop))
    try:
        h = await header(bus, "one-cpu")
        assert h is not None and h["runs"] == 2 and h["progress"]["vm"]["planned"] == 2  # 1 cell x 2 reps x host
        assert await asyncio.to_thread(cli, ["campaign", "status", "one-cpu"]) == 0
        out, err = capsys.readouterr()
        assert "0 done, 0 failed, 2 left" in out
        assert "warning: vm: sysbench-cpu events=100 threads=all is the same cell as events=100 threads=1 there " \
               "(1 hardware threads): planned once" in err
        assert await asyncio.to_thread(cli, ["campaign", "cancel", "one-cpu", "--wait", "20"]) == 0
        assert "2 run(s) recorded as cancelled; 0 still in flight" in capsys.readouterr().out
        assert await asyncio.to_thread(cli, ["campaign", "status", "one-cpu"]) == 0
        out = capsys.readouterr().out
        assert "0 left" in out and "campaign one-cpu: finished (cancelled)" in out
    finally:
        stop.set()
        await consumer
        await bus.close()
