"""Runner faults (issue 12 item 2) against a real nats-server and a real runner process:

- a save that fails (NATS gone) never leaves the node blocked: the run goes back to planned and is sent
  once NATS is back;
- a SIMULATED campaign survives a SIGKILL of the runner mid-way, is cancelled, and every planned run
  ends as exactly one result or one recorded failure (or is recorded cancelled): none twice, none lost;
- `podtax campaign submit` refuses what the runner cannot take, with the reason; `podtax campaign cancel`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import nats
import pytest
import yaml
from podtax import campaign, config, events, natsserver, subjects
from podtax.bus import Bus, ConsumerSpec, Permanent
from podtax.cli.main import main as cli
from podtax_runner import service, simulate
from podtax_runner.service import Runner
from podtax_runner.state import CampaignState

from tests.faults.drill import campaign_drill, campaign_spec, header, outcome_events, seed_nodes


async def planned_runner(bus: Bus, url: str, name: str, nodes: list[str], reps: int = 2,
                         spacing: str = "back-to-back") -> tuple[Runner, CampaignState]:
    """A runner (in this process) with a host-only campaign `name` of `reps` repetitions planned on `nodes`."""
    await bus.ensure_streams()
    await seed_nodes(bus, nodes)
    settings = config.load(config.RunnerSettings, nats_url=url, runner_kubernetes=False)
    runner = Runner(settings, bus, await bus.kv(subjects.RUNNER_BUCKET), None)
    spec = {**campaign_spec(name, nodes, reps, spacing=spacing), "environments": ["host"]}
    await runner.on_campaign(events.campaign_submitted(events.CampaignSubmitted(campaign=name, spec=spec)))
    return runner, runner.campaigns[name]


async def test_a_failing_save_releases_the_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log")
    bus = await Bus.connect(server.url, "test/runner")
    try:
        runner, state = await planned_runner(bus, server.url, "save", ["n1"])
        server.stop()  # the fault: the save before sending fails
        monkeypatch.setattr(service, "SAVE_TIMEOUT_S", 2.0)
        await runner.tick(events.now())
        assert state.in_flight("n1") is None and state.counts()["dispatched"] == 0, "the node is not blocked"
        server = natsserver.start(tmp_path / "js", server.port, log_file=tmp_path / "nats.log")
        for _ in range(100):
            await runner.tick(events.now())
            if state.in_flight("n1"):
                break
            await asyncio.sleep(0.2)
        running = state.in_flight("n1")
        assert running is not None, "sent once NATS is back"
        doc = await Bus.kv_json(await bus.kv(subjects.RUNNER_BUCKET), f"run.save.{running.run.run_id}")
        assert doc["status"] == "dispatched", "the run in flight is persisted"
    finally:
        await bus.close()
        server.stop()


async def test_a_no_report_failure_survives_nats_being_away_when_the_run_expires(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log")
    bus = await Bus.connect(server.url, "test/runner")
    try:
        runner, state = await planned_runner(bus, server.url, "away", ["n1"])
        await runner.tick()
        lost = state.in_flight("n1")
        assert lost is not None
        later = events.now() + timedelta(hours=1)  # past the run's timeout + grace

        async def room(due: Any) -> tuple[dict[str, str], bool]:  # NATS's room looked at just before it went away
            return {}, False  # (a look without answer holds the run: test_runner_no_expiry_without_room.py)

        monkeypatch.setattr(runner.room, "holding", room)
        server.stop()  # the fault: NATS is away when the run expires
        monkeypatch.setattr(service, "SAVE_TIMEOUT_S", 2.0)
        with contextlib.suppress(Exception):
            await runner.tick(later)
        assert state.runs[lost.run.run_id].status == "failed"
        server = natsserver.start(tmp_path / "js", server.port, log_file=tmp_path / "nats.log")
        for _ in range(100):
            with contextlib.suppress(Exception):
                await runner.tick(later)
                if not runner.unreported:
                    break
            await asyncio.sleep(0.2)
        nc = await nats.connect(server.url)
        try:
            outcomes = await outcome_events(nc, "away")
        finally:
            await nc.close()
        assert outcomes[(lost.run.run_id, "failure")] == 1, f"the no-report failure reached the bus once: {outcomes}"
        doc = await Bus.kv_json(await bus.kv(subjects.RUNNER_BUCKET), f"run.away.{lost.run.run_id}")
        assert doc["status"] == "failed" and doc["reason"] == "no-report", "and is saved"
    finally:
        await bus.close()
        server.stop()


async def test_a_tick_that_waited_for_the_lock_dates_its_runs_when_it_sends_them(nats_url: str) -> None:
    """Seen on a slow VM: planning a 100,000-run campaign held the lock for 15 s; the dispatch loop had
    read the clock before it waited, so the first 100 runs were dated 15 s in the past and the next tick
    failed them all as no-report (100 retries, then 100 late duplicate results)."""
    bus = await Bus.connect(nats_url, "test/runner")
    stop = asyncio.Event()
    try:
        runner, state = await planned_runner(bus, nats_url, "late", ["n1", "n2"])
        await runner.lock.acquire()  # a long save of another campaign
        loop = asyncio.create_task(runner.loop(stop))
        await asyncio.sleep(1.5)
        released = events.now()
        runner.lock.release()
        for _ in range(100):
            if state.in_flight("n1") and state.in_flight("n2"):
                break
            await asyncio.sleep(0.05)
        for node in ("n1", "n2"):
            running = state.in_flight(node)
            assert running is not None and running.dispatched_at is not None
            assert running.dispatched_at >= released, (
                f"dated {(released - running.dispatched_at).total_seconds():.2f} s before it was sent")
        stop.set()
        await loop
    finally:
        stop.set()
        await bus.close()


async def test_planning_a_campaign_does_not_hold_up_the_others(nats_url: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Planning and saving a big campaign takes long (15 s for 100,000 runs on a slow VM): meanwhile the
    outcomes of the campaigns already running are recorded and their nodes get their next runs."""
    bus = await Bus.connect(nats_url, "test/runner")
    try:
        runner, _ = await planned_runner(bus, nats_url, "first", ["n1"])
        await seed_nodes(bus, ["n2"])
        await runner.tick()
        running = runner.campaigns["first"].in_flight("n1")
        assert running is not None
        planning, go_on = threading.Event(), threading.Event()
        plain_new = CampaignState.new

        def slow_new(*args: object) -> CampaignState:
            planning.set()
            go_on.wait(30)
            return plain_new(*args)

        monkeypatch.setattr(CampaignState, "new", staticmethod(slow_new))
        second = {**campaign_spec("second", ["n2"], 2), "environments": ["host"]}
        submitted = asyncio.create_task(runner.on_campaign(events.campaign_submitted(
            events.CampaignSubmitted(campaign="second", spec=second))))
        try:
            assert await asyncio.to_thread(planning.wait, 10)
            await asyncio.wait_for(runner.on_outcomes([simulate.result(running.run)]), 5)
            await asyncio.wait_for(runner.tick(), 5)
            assert runner.campaigns["first"].counts()["done"] == 1, "the outcome was recorded during the planning"
            nxt = runner.campaigns["first"].in_flight("n1")
            assert nxt is not None and nxt.run.run_id != running.run.run_id, "the node got its next run"
        finally:
            go_on.set()
            await submitted
        assert runner.campaigns["second"].counts()["planned"] == 2
    finally:
        await bus.close()


async def test_simulated_campaign_survives_a_runner_sigkill_and_is_cancelled(nats_url: str, tmp_path: Path) -> None:
    out = await campaign_drill(nats_url, tmp_path, nodes=10, reps=50, combos=2, kill_runner_at=0.2,
                               cancel_at=0.6, timeout=120)
    assert out["planned"] >= 2000 and out["killed_at_runs"] < 1200
    assert out["duplicates"] == 0 and out["lost"] == 0 and out["unplanned"] == 0 and out["in_flight"] == 0
    assert out["cancelled"] > 0, "pending runs were recorded as cancelled"
    assert out["results"] + out["failures"] + out["cancelled"] == out["planned"]


async def test_a_runner_down_longer_than_the_grace_does_not_fail_runs_whose_results_wait(
        nats_url: str, tmp_path: Path) -> None:
    """Runner down for 17 s, more than a run's timeout + grace (5 + 10 s in the drill): the results of the
    runs in flight wait in the stream. A restarted runner gives them a fresh grace before expiring them, so
    none is failed as no-report, retried, and then met again as a late duplicate (that bug gave 10 failures,
    10 duplicates and 410 results of 400 runs).

    A failure without a result is right, though: a SIGKILL between saving a run as in flight and publishing
    its simulated result leaves a run that never ran (CI once killed all 10 nodes' runs there). It is failed
    as no-report and run again, so each of the 400 runs still ends in exactly one result."""
    out = await campaign_drill(nats_url, tmp_path, nodes=10, reps=20, kill_runner_at=0.3, restart_after=17,
                               timeout=120)
    assert out["duplicates"] == 0 and out["results"] == 400, out
    assert out["failures"] <= 10 and out["planned"] == 400 + out["failures"], out  # one retry per failure
    assert out["lost"] == 0 and out["in_flight"] == 0 and out["unplanned"] == 0, out


def write(tmp: Path, doc: dict) -> Path:
    path = tmp / "c.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


async def test_submit_refuses_a_campaign_the_runner_cannot_take(nats_url: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    bus = await Bus.connect(nats_url, "test")
    await bus.ensure_streams()
    await seed_nodes(bus, ["n1", "n2"])
    await bus.close()
    spec = campaign_spec("huge", ["n1", "n2"], 10_000, combos=20)
    assert campaign.planned_runs(campaign.Campaign.model_validate(spec), 2) > campaign.MAX_RUNS
    assert await asyncio.to_thread(cli, ["campaign", "submit", str(write(tmp_path, spec))]) == 2
    err = capsys.readouterr().err
    assert f"{campaign.MAX_RUNS:,}" in err and "split it into several campaigns" in err
    assert "nothing was submitted" in err


async def test_cancel_cli(nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    assert await asyncio.to_thread(cli, ["campaign", "cancel", "ghost", "--wait", "0"]) == 1
    assert "no campaign named 'ghost'" in capsys.readouterr().err
    bus = await Bus.connect(nats_url, "test")
    await bus.ensure_streams()
    await seed_nodes(bus, ["n1"])
    settings = config.load(config.RunnerSettings, nats_url=nats_url, runner_kubernetes=False)
    runner = Runner(settings, bus, await bus.kv(subjects.RUNNER_BUCKET), None)  # planned, never dispatched
    spec = {**campaign_spec("stop", ["n1"], 5), "environments": ["host"]}
    await runner.on_campaign(events.campaign_submitted(events.CampaignSubmitted(campaign="stop", spec=spec)))
    stop = asyncio.Event()
    consumer = asyncio.create_task(bus.consume(ConsumerSpec("runner-cancels", [f"{subjects.CAMPAIGN_CANCELLED}.>"]),
                                               runner.on_cancel, stop))
    try:
        assert await asyncio.to_thread(cli, ["campaign", "cancel", "stop", "--wait", "20"]) == 0
        out = capsys.readouterr().out
        assert "campaign stop cancelled: 5 run(s) recorded as cancelled" in out
        h = await header(bus, "stop")
        assert h["cancelled_at"] and h["finished_at"] and h["progress"]["n1"]["cancelled"] == 5
        assert await asyncio.to_thread(cli, ["campaign", "status", "stop"]) == 0
        assert "finished (cancelled)" in capsys.readouterr().out
    finally:
        stop.set()
        await consumer
        await bus.close()


def _threads_all(spec: dict) -> dict:
    return {**spec, "tests": [{"test": "sysbench-cpu", "params": {"threads": "all"}}]}


@pytest.mark.parametrize("name,spec,says", [
    ("toolarge", campaign_spec("toolarge", [f"n{i}" for i in range(30)], 5000), "above the runner's limit"),
    # an audit: these went through 5 deliveries with tracebacks, and status said "no campaign named ..."
    ("ghostnode", campaign_spec("ghostnode", ["n1", "nowhere"], 2), "unknown node(s) nowhere"),
    ("badspec", {**campaign_spec("badspec", ["n1"], 2), "repetitions": {"min": 0, "max": 0}}, "repetitions"),
    ("bignode", _threads_all(campaign_spec("bignode", ["big"], 2)), "threads"),  # facts claim 100,000 threads
    ("hugechurn", {**campaign_spec("hugechurn", ["n1"], 2), "environments": ["kubernetes", "nomad"],  # each run failed
                   "tests": [{"test": "volume-churn", "params": {"count": 5000, "plugin_id": "p"}}]}, "lower count to"),
])
async def test_status_shows_the_runners_refusal(nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture, name: str, spec: dict,
                                                says: str) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    bus = await Bus.connect(nats_url, "test")
    await bus.ensure_streams()
    await seed_nodes(bus, [f"n{i}" for i in range(30)])
    await bus.kv_put_many(subjects.RUNNER_BUCKET, [(subjects.node_key("big"), json.dumps(
        {"node": "big", "hw_threads": 100_000, "host_agent": True, "kubernetes": True}).encode())])
    settings = config.load(config.RunnerSettings, nats_url=nats_url, runner_kubernetes=False)
    runner = Runner(settings, bus, await bus.kv(subjects.RUNNER_BUCKET), None)
    with pytest.raises(Permanent, match=re.escape(says)):
        await runner.on_campaign(events.campaign_submitted(events.CampaignSubmitted(campaign=name, spec=spec)))
    await bus.close()
    assert await asyncio.to_thread(cli, ["campaign", "status", name]) == 1
    err = capsys.readouterr().err
    assert f"the runner refused campaign '{name}'" in err and says in err


async def test_node_keys_are_listed_without_reading_every_run_key(nats_url: str) -> None:
    bus = await Bus.connect(nats_url, "test")
    try:
        kv = await bus.kv(subjects.RUNNER_BUCKET)
        assert await Bus.kv_keys(kv, "node.") == [], "an empty bucket lists nothing"
        await seed_nodes(bus, ["a", "b.example.com"])
        await bus.kv_put_many(subjects.RUNNER_BUCKET, [(f"run.c.r{i}", b"{}") for i in range(2000)])
        assert sorted(await Bus.kv_keys(kv, "node.")) == [subjects.node_key("a"), subjects.node_key("b.example.com")]
        assert len(await Bus.kv_keys(kv, "run.c.")) == 2000
    finally:
        await bus.close()


async def test_status_follow_keeps_to_its_timeout_and_says_why_it_stops(nats_url: str, monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture) -> None:
    """An audit: `status nosuch --follow --timeout 3` took 31 s, and `--follow --timeout 2` on a running
    campaign exited 1 saying nothing."""
    import time

    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    bus = await Bus.connect(nats_url, "test")
    try:
        await bus.ensure_streams()
        await planned_runner(bus, nats_url, "slow", ["n1"])  # planned, never dispatched: it stays running
        started = time.monotonic()
        assert await asyncio.to_thread(cli, ["campaign", "status", "nosuch", "--follow", "--timeout", "2"]) == 1
        assert time.monotonic() - started < 10 and "no campaign named 'nosuch'" in capsys.readouterr().err
        assert await asyncio.to_thread(cli, ["campaign", "status", "slow", "--follow", "--timeout", "1"]) == 1
        assert "gave up following after 1 s (--timeout); the campaign goes on" in capsys.readouterr().err
    finally:
        await bus.close()
