"""A step of the host's wall clock (an NTP step, a VM resumed) larger than a run's timeout + grace: the run in flight
is not expired as no-report (and requested again while the first attempt may still run); a real expiry still is.
Before (clockjump.py), the run's deadline, wall-clock, had passed at the next tick: failed no-report, retried.
The clocks are injected (podtax.events.now, clockjump.monotonic); real nats-server, the real runner in this process."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from podtax import events
from podtax.bus import Bus
from podtax_runner import clockjump

from tests.integration.test_runner_faults import planned_runner


async def test_a_step_of_the_wall_clock_expires_no_run_and_a_real_expiry_still_does(
        nats_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    start, mono = events.now(), 1_000.0

    def at(wall: timedelta, elapsed: float) -> None:  # the wall clock `wall` after the start, `elapsed` s measured
        monkeypatch.setattr(events, "now", lambda: start + wall)
        monkeypatch.setattr(clockjump, "monotonic", lambda: mono + elapsed)

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
