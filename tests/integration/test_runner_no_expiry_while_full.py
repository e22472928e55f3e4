"""A host run whose log cannot reach the runner because the events stream is full (discard new: the agent's publish
is refused, it keeps the log and sends it again). Before, the runner expired the run as no-report once its timeout +
grace passed, planned attempt 2, and the measured log of attempt 1, stored once there was room, was a second result
for one planned run. Now no run expires while the stream is full (the runner looks at its size every 5 s; the
campaign's state says why, `stalled`), and once it has room each run in flight gets its grace again from then.
Real nats-server; the runner's tick driven with its clock (no agent: the run's report never comes)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from podtax import events, subjects
from podtax.bus import Bus
from podtax_runner import service

from tests.integration.test_runner_own_events_refused import runner_of
from tests.integration.test_runner_stream_full_held import fill

SPEC = {"name": "no-expiry", "nodes": ["n1"], "environments": ["host"],
        "tests": [{"test": "sysbench-cpu", "params": {"max_prime": 2000, "events": 100, "threads": 1}}],
        "repetitions": {"min": 1, "max": 1}, "timeout": 30, "seed": 1}
GRACE_S = 5.0


async def test_no_run_expires_while_the_events_stream_is_full(nats_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    bus = await Bus.connect(nats_url, "test/runner")
    try:
        runner = await runner_of(bus, SPEC, runner_report_grace_s=GRACE_S)
        start = events.now()
        monkeypatch.setattr(service, "clock", lambda: 1_000.0)
        await runner.tick(start)  # the run's request sent
        state = runner.campaigns["no-expiry"]
        [run] = [s.run for s in state.runs.values() if s.status == "dispatched"]
        await fill(bus)
        monkeypatch.setattr(service, "clock", lambda: 2_000.0)
        late = start + timedelta(seconds=SPEC["timeout"] + GRACE_S + 60)
        await runner.tick(late)
        assert state.runs[run.run_id].status == "dispatched", state.runs[run.run_id]  # before: failed, no-report
        assert not runner.unreported
        header = await Bus.kv_json(runner.kv, "campaign.no-expiry")
        assert "the events stream PODTAX is full" in header["stalled"], header
        assert "PODTAX_NATS_STREAM_MAX_BYTES" in header["stalled"], header
        info = await bus.js.stream_info(subjects.STREAM)  # an admin raises the limit
        info.config.max_bytes = 10_000_000
        await bus.js.update_stream(info.config)
        monkeypatch.setattr(service, "clock", lambda: 3_000.0)
        roomy = late + timedelta(seconds=1)
        await runner.tick(roomy)
        assert state.runs[run.run_id].status == "dispatched"  # its grace again from the moment there is room
        assert "stalled" not in await Bus.kv_json(runner.kv, "campaign.no-expiry")
        await runner.tick(roomy + timedelta(seconds=GRACE_S + 1))
        assert state.runs[run.run_id].status == "failed" and state.runs[run.run_id].reason == "no-report"
    finally:
        await bus.close()
