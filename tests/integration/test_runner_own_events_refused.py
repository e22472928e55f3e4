"""The runner's own events refused by a full events stream (a host run's request, a simulated result, a no-report
failure). Before, each tick (4 a second) tried again and logged the refusal again ('could not publish simulated
results of ...; released their nodes'), one ERROR line per tick for as long as the stream stayed full, and the
campaign's state said nothing. Now the refusal is said once a minute at most (the same reason), written in the state
of the campaigns it was for (`stalled`, printed by `podtax campaign status`) and cleared once NATS takes the runner's
events again. Real nats-server; the runner in simulated execution."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from podtax import config, events, subjects
from podtax.bus import Bus
from podtax.cli.main import main as cli
from podtax_runner import fullness, service
from podtax_runner.service import Runner

from tests.integration.test_runner_stream_full_held import fill

SPEC = {"name": "own-refused", "nodes": ["n1"], "environments": ["host"],
        "tests": [{"test": "sysbench-cpu", "params": {"max_prime": 2000, "events": 100, "threads": 1}}],
        "repetitions": {"min": 3, "max": 3}, "timeout": 60, "seed": 1}


async def runner_of(bus: Bus, spec: dict[str, Any], *more: dict[str, Any], streams: dict[str, Any] | None = None,
                    **settings: Any) -> Runner:
    """Streams of 100,000 bytes (or `streams`: ensure_streams' limits), and a runner (RunnerSettings `settings`, no
    Kubernetes) with the nodes of the campaigns known and the campaigns `spec` and `more` (host runs) submitted."""
    await bus.ensure_streams(**(streams or {"max_bytes": 100_000}))
    url = bus.nc.connected_url.geturl() if bus.nc.connected_url else ""
    runner = Runner(config.load(config.RunnerSettings, nats_url=url, **settings), bus,
                    await bus.kv(subjects.RUNNER_BUCKET), None)
    for node in sorted({n for c in (spec, *more) for n in c["nodes"]}):
        await runner.merge_node(node, {"node": node, "hw_threads": 2, "host_agent": True})
    for c in (spec, *more):
        await runner.on_campaign(events.campaign_submitted(events.CampaignSubmitted(campaign=c["name"], spec=c)))
    return runner


async def test_a_refusal_of_the_runners_own_events_is_said_once_and_shown_in_the_campaign(
        nats_url: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(service, "clock", lambda: 1_000.0)  # every tick within the same minute
    bus = await Bus.connect(nats_url, "test/runner")
    try:
        runner = await runner_of(bus, SPEC, runner_simulate=True)
        await fill(bus)
        with caplog.at_level(logging.INFO):
            for _ in range(20):
                await runner.tick()
        said = [r.getMessage() for r in caplog.records if r.name == "podtax.runner" and r.levelno >= logging.ERROR]
        # before: one a tick; the stream's fullness, seen by the runner's look at it, is said once too (fullness.py)
        assert len(said) == 2 and "the events stream PODTAX is full" in said[0], said
        assert said[1].startswith("could not publish simulated results of own-refused; released their nodes: "
                                  "Unacked: JetStream refused the events: its stream is full"), said
        header = await Bus.kv_json(runner.kv, "campaign.own-refused")
        assert header["stalled"].startswith("NATS refuses the runner's events: JetStream refused the events: its "
                                            "stream is full"), header
        monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
        capsys.readouterr()
        await asyncio.to_thread(cli, ["campaign", "status", "own-refused"])
        assert "stalled: NATS refuses the runner's events: JetStream refused the events: its stream is full" in \
            " ".join(capsys.readouterr().err.split())
        info = await bus.js.stream_info(subjects.STREAM)  # an admin raises the limit
        info.config.max_bytes = 10_000_000
        await bus.js.update_stream(info.config)
        monkeypatch.setattr(service, "clock", lambda: 2_000.0)  # the stream's size is looked at again
        await runner.tick()
        await runner.tick()
        assert "stalled" not in await Bus.kv_json(runner.kv, "campaign.own-refused")
    finally:
        await bus.close()


@pytest.mark.parametrize("simulate", [False, True], ids=["host-request", "simulated-results"])
async def test_a_sealed_stream_refusing_the_runners_own_events_is_said_with_its_fix(
        simulate: bool, nats_url: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """JetStream's refusals that are no want of room (here: the events stream sealed, 10109) of a host run's request
    (Bus.publish: a raw APIError) or of simulated results (publish_many: Unacked). Before, said as 'BadRequestError:
    nats: BadRequestError: code=400 err_code=10109 description='invalid operation on sealed stream'' or 'JetStream
    refused the events (invalid operation on sealed stream)': no fix named."""
    monkeypatch.setattr(service, "clock", lambda: 1_000.0)  # every tick within the same minute
    bus = await Bus.connect(nats_url, "test/runner")
    try:
        runner = await runner_of(bus, SPEC, runner_simulate=simulate)
        info = await bus.js.stream_info(subjects.STREAM)
        info.config.sealed = True
        await bus.js.update_stream(info.config)
        with caplog.at_level(logging.INFO):
            for _ in range(5):
                await runner.tick()
    finally:
        await bus.close()
    said = [r.getMessage() for r in caplog.records if r.name == "podtax.runner" and r.levelno >= logging.ERROR]
    assert len(said) == 1, said
    assert f"the events stream {subjects.STREAM} is sealed (invalid operation on sealed stream, JetStream error " \
        "10109): it takes nothing more, and cannot be unsealed; a NATS admin replaces it" in said[0], said


async def test_a_stream_max_msg_size_is_said_in_the_campaigns_state(
        nats_url: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review rO (a host run under a stream max_msg_size, the real agent): the benchmark ran twice and the campaign
    ended 'failed: no-report', nothing saying that NATS refused its log. The runner's look at the events stream
    (fullness.Room, every 5 s) now says the limit once and writes it in the campaign's `stalled`."""
    monkeypatch.setattr(fullness, "PROBE_EVERY_S", 0.0)  # every tick looks
    bus = await Bus.connect(nats_url, "test/runner")
    try:
        runner = await runner_of(bus, SPEC)
        runner.caught_up = True
        info = await bus.js.stream_info(subjects.STREAM)
        info.config.max_msg_size = 1500
        await bus.js.update_stream(info.config)
        with caplog.at_level(logging.INFO):
            await runner.tick()
        says = ("the events stream PODTAX has a max_msg_size of 1,500 bytes (podtax sets none): a report above it is "
                "refused, and its run expires as no-report and runs again; lift it as a NATS admin (`nats stream edit "
                "PODTAX --max-msg-size -1`)")
        doc = await Bus.kv_json(runner.kv, f"campaign.{SPEC['name']}") or {}
        assert doc.get("stalled") == says, doc.get("stalled")
        assert caplog.text.count(says) == 1, caplog.text
        info.config.max_msg_size = bus.nc.max_payload * 8  # above what the server takes: it refuses nothing
        await bus.js.update_stream(info.config)
        await runner.tick()
        doc = await Bus.kv_json(runner.kv, f"campaign.{SPEC['name']}") or {}
        assert doc.get("stalled") is None, doc.get("stalled")
    finally:
        await bus.close()
