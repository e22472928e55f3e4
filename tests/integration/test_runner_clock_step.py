"""A step of the host's wall clock (an NTP step, a VM resumed) larger than a run's timeout + grace: the run in flight
is not expired as no-report (and requested again while the first attempt may still run); a real expiry still is.
Before (clockjump.py), the run's deadline, wall-clock, had passed at the next tick: failed no-report, retried.
A time recorded between the step and the next tick (a report, an outcome, the end of the restart's catch-up) is read
after the step is taken out, not moved a second time; the times moved are saved, so a runner restarted after the step
counts from them; the spacing between runs is moved too, and a restarted runner counts it from the restart at the
latest (after a backward step, before the restart or while it was down); saving the moved runs stops at the first
save that fails.
The clocks are injected (podtax.events.now, clockjump.monotonic); real nats-server, the real runner in this process."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from podtax import events, natsserver, subjects
from podtax.bus import Bus
from podtax_runner import clockjump, service
from podtax_runner.state import CampaignState

from tests.faults.drill import campaign_spec, seed_nodes
from tests.integration.test_runner_faults import planned_runner
from tests.integration.test_runner_host_resend import new_runner
from tests.paused import pause


class Clocks:
    """The wall clock and the monotonic one, injected: at(wall, elapsed) is `wall` after the start, `elapsed` s
    measured."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.start, self.mono, self.monkeypatch = events.now(), 1_000.0, monkeypatch

    def at(self, wall: timedelta, elapsed: float) -> datetime:
        self.monkeypatch.setattr(events, "now", lambda: self.start + wall)
        self.monkeypatch.setattr(clockjump, "monotonic", lambda: self.mono + elapsed)
        return self.start + wall


async def test_a_step_of_the_wall_clock_expires_no_run_and_a_real_expiry_still_does(
        nats_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    at = Clocks(monkeypatch).at
    bus = await Bus.connect(nats_url, "test/runner")
    try:
        runner, state = await planned_runner(bus, nats_url, "stepped", ["n1"])
        at(timedelta(0), 0.0)
        await runner.tick()
        flying = state.in_flight("n1")
        assert flying is not None
        due_s = flying.run.timeout_s + runner.settings.runner_report_grace_s
        at(timedelta(hours=2), 1.0)  # the clock stepped 2 h ahead in 1 s
        with caplog.at_level(logging.WARNING, "podtax.runner"):
            await runner.tick()
        assert state.runs[flying.run.run_id].status == "dispatched", "expired by the step"  # before: failed
        assert "the wall clock stepped +7199 s" in caplog.text, caplog.text
        at(timedelta(hours=2, seconds=due_s), 1.0 + due_s)  # its timeout + grace later, measured too
        await runner.tick()
        assert state.runs[flying.run.run_id].status == "failed", "a real expiry"
        assert state.runs[flying.run.run_id].reason == "no-report"
    finally:
        await bus.close()


@pytest.mark.parametrize("hours", [2, -2])
async def test_a_report_between_the_step_and_the_next_tick_is_not_moved_twice(
        nats_url: str, monkeypatch: pytest.MonkeyPatch, hours: int) -> None:
    """Before: reported_at (and the catch-up's resumed_at), read on the stepped clock, was moved again at the next
    tick: +2 h held the node 2 h too long; -2 h failed the run no-report and ran it again, its outcome on the way."""
    at = Clocks(monkeypatch).at
    bus = await Bus.connect(nats_url, "test/runner")
    try:
        runner, state = await planned_runner(bus, nats_url, f"twice{hours + 2}", ["n1"])
        at(timedelta(0), 0.0)
        await runner.tick()
        flying = state.in_flight("n1")
        assert flying is not None
        state.resumed_at, runner.caught_up = at(timedelta(0), 0.0), False  # as after a restart, catching up
        stepped = at(timedelta(hours=hours), 1.0)  # the clock stepped in 1 s
        assert await runner.on_reported(flying.run)
        await runner.catch_up(asyncio.Event())
        await runner.tick()
        s = state.runs[flying.run.run_id]
        assert s.reported_at == stepped, f"moved twice: {s.reported_at - stepped}"  # before: by `hours` h more
        assert state.resumed_at == stepped, f"moved twice: {state.resumed_at - stepped}"
        assert s.dispatched_at == flying.dispatched_at, "dispatched 1 s before the report"
        at(timedelta(hours=hours, seconds=30), 31.0)  # within the report's grace, measured
        await runner.tick()
        assert s.status == "dispatched", "expired while its outcome is on the way"  # before (-2 h): failed
    finally:
        await bus.close()


async def test_a_runner_restarted_after_a_step_counts_from_the_moved_times(
        nats_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, the moved times were only in memory: the runner restarted after a +2 h step read the run's dispatch
    time from before the step, and the run failed no-report once the restart's grace ended, still running."""
    at = Clocks(monkeypatch).at
    bus = await Bus.connect(nats_url, "test/runner")
    try:
        runner, state = await planned_runner(bus, nats_url, "restarted", ["n1"])
        at(timedelta(0), 0.0)
        await runner.tick()
        flying = state.in_flight("n1")
        assert flying is not None
        due_s = flying.run.timeout_s + runner.settings.runner_report_grace_s
        stepped = at(timedelta(hours=2), 1.0)
        await runner.tick()
        doc = await Bus.kv_json(await bus.kv(subjects.RUNNER_BUCKET), f"run.restarted.{flying.run.run_id}")
        assert datetime.fromisoformat(doc["dispatched_at"]) == stepped - timedelta(seconds=1), json.dumps(doc)
        at(timedelta(hours=2, seconds=2), 2.0)
        again = await new_runner(bus)  # restarted (a new process: no monotonic reading from before)
        at(timedelta(hours=2, seconds=due_s - 2), due_s - 2)  # past the restart's grace, before its own deadline
        await again.tick()
        assert again.campaigns["restarted"].runs[flying.run.run_id].status == "dispatched"  # before: failed
    finally:
        await bus.close()


async def test_the_spacing_between_runs_moves_with_a_step(nats_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, a -2 h step made the next run wait 2 h more than its spacing; an outcome recorded between a +2 h step
    and the next tick had its spacing moved twice (2 h too long)."""
    at = Clocks(monkeypatch).at
    bus = await Bus.connect(nats_url, "test/runner")
    try:
        runner, state = await planned_runner(bus, nats_url, "spaced", ["n1"], reps=3, spacing="30s")

        async def finished(s: timedelta, elapsed: float) -> None:  # the run in flight fails (an outcome) then
            flying = state.in_flight("n1")
            assert flying is not None
            at(s, elapsed)
            failure = events.RunFailed(run=flying.run, stage="agent", reason="test", detail="test")
            await runner.on_outcomes([events.run_failed(failure, "test")])

        at(timedelta(0), 0.0)
        await runner.tick()
        await finished(timedelta(seconds=10), 10.0)
        at(timedelta(hours=-2, seconds=20), 20.0)  # stepped 2 h back: 10 s since the outcome, measured
        await runner.tick()
        assert state.in_flight("n1") is None, "sent before its spacing"
        at(timedelta(hours=-2, seconds=45), 45.0)
        await runner.tick()
        assert state.in_flight("n1") is not None, "not sent 35 s after the outcome"  # before: 2 h later
        await finished(timedelta(seconds=50), 50.0)  # stepped 2 h ahead, the outcome before the next tick
        at(timedelta(seconds=60), 60.0)
        await runner.tick()
        assert state.in_flight("n1") is None, "sent before its spacing"
        at(timedelta(seconds=85), 85.0)
        await runner.tick()
        assert state.in_flight("n1") is not None, "not sent 35 s after the outcome"  # before: 2 h later
    finally:
        await bus.close()


@pytest.mark.parametrize("seen", [True, False])
async def test_a_runner_restarted_after_a_backward_step_spaces_runs_from_the_restart(
        nats_url: str, monkeypatch: pytest.MonkeyPatch, seen: bool) -> None:
    """Before, the restarted runner counted the spacing from the saved finished_at, 2 h in its future after a -2 h
    step (seen by the runner before the restart, or made while it was down): the node stalled for 2 h."""
    at = Clocks(monkeypatch).at
    bus = await Bus.connect(nats_url, "test/runner")
    try:
        name = f"back{int(seen)}"
        runner, state = await planned_runner(bus, nats_url, name, ["n1"], reps=3, spacing="30s")
        at(timedelta(0), 0.0)
        await runner.tick()
        flying = state.in_flight("n1")
        assert flying is not None
        at(timedelta(seconds=10), 10.0)
        failure = events.RunFailed(run=flying.run, stage="agent", reason="test", detail="test")
        await runner.on_outcomes([events.run_failed(failure, "test")])
        if seen:
            at(timedelta(hours=-2, seconds=20), 20.0)  # stepped 2 h back, seen by the runner
            await runner.tick()
        at(timedelta(hours=-2, seconds=25), 25.0)
        again = await new_runner(bus)  # restarted
        st = again.campaigns[name]
        at(timedelta(hours=-2, seconds=50), 50.0)
        await again.tick()
        assert st.in_flight("n1") is None, "sent before its spacing from the restart"
        at(timedelta(hours=-2, seconds=60), 60.0)  # 35 s after the restart
        await again.tick()
        assert st.in_flight("n1") is not None, "not sent 35 s after the restart"  # before: 2 h later
        assert st.runs[flying.run.run_id].finished_at == state.runs[flying.run.run_id].finished_at, "moved"
    finally:
        await bus.close()


async def test_saving_the_moved_runs_stops_at_the_first_failed_save(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Before, with NATS paused, each campaign moved by a step was tried in turn, each save waiting SAVE_TIMEOUT_S
    under the lock (2 campaigns: a report took 30 s to record), and the failure was logged without its type (a
    TimeoutError's message is empty): 'could not save the runs of a moved by the clock's step: '."""
    at = Clocks(monkeypatch).at
    server = natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log")
    bus = await Bus.connect(server.url, "test/runner")
    try:
        runner, _ = await planned_runner(bus, server.url, "a", ["n1"])
        await seed_nodes(bus, ["n2"])
        spec = {**campaign_spec("b", ["n2"], 2), "environments": ["host"]}
        await runner.on_campaign(events.campaign_submitted(events.CampaignSubmitted(campaign="b", spec=spec)))
        at(timedelta(0), 0.0)
        await runner.tick()
        assert runner.campaigns["a"].in_flight("n1") and runner.campaigns["b"].in_flight("n2")
        tried, save = [], runner.save

        async def counted(state: CampaignState) -> None:
            tried.append(state.name)
            await save(state)

        runner.save = counted  # type: ignore[method-assign]
        monkeypatch.setattr(service, "SAVE_TIMEOUT_S", 1.0)
        await asyncio.to_thread(pause, server.proc.pid)
        at(timedelta(hours=2), 1.0)
        with caplog.at_level(logging.WARNING, "podtax.runner"):
            await runner.now()
        assert tried == ["a"], tried  # before: ["a", "b"]
        assert "could not save the runs of a moved by the clock's step (TimeoutError: ): they and those of 1 " \
               "other campaigns go with each one's next save" in caplog.text, caplog.text
        assert any(k.startswith("run.b.") for k, _ in runner.campaigns["b"].dirty_documents()), "b's runs not dirty"
    finally:
        os.kill(server.proc.pid, signal.SIGCONT)
        await bus.close()
        server.stop()
