"""A control-plane run's timeline larger than the events stream's max_msg_size (an admin's limit on one message,
below the server's max_payload, which lets the publish through): JetStream answers 'message size exceeds maximum
allowed' (error 10054). Before, the runner's outbox took that answer for NATS away: 'could not publish its timeline
(APIError: ...): NATS stopped or restarting?' every 10 s for ever, nothing in the campaign's state, and no copy kept:
the runner stopped, the next one ran the run again (its work done twice, the first measurement lost). Now it is a
refusal: an error naming the limit and the fix (raise max_msg_size), why written in the campaign's state, the timeline
kept in the runner's bucket; the next runner sends that copy once an admin raised the limit, the run not run again.
Real nats-server, runner, parser, analyzer, CLI and kubesim."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from podtax import natsserver, subjects
from podtax.bus import Bus

from tests.controlplane.conftest import NODE
from tests.controlplane.test_cp_publish_nats_down import runner_said
from tests.integration.test_runner_kept_report import refused_then_restarted

CAMPAIGN = {"name": "cp-too-big", "nodes": [NODE], "environments": ["kubernetes"],
            "tests": [{"test": "volume-churn", "params": {"count": 4, "concurrency": 2}}],
            "repetitions": {"min": 1, "max": 1}, "timeout": 20}
LIMIT = 1_000  # bytes: the stream's max_msg_size, below the timeline of 4 objects


async def set_max_msg_size(bus: Bus, size: int) -> None:
    info = await bus.js.stream_info(subjects.STREAM)
    info.config.max_msg_size = size
    await bus.js.update_stream(info.config)


async def test_a_timeline_above_the_streams_max_msg_size_is_a_refusal_kept_for_the_next_runner(
        nats_server: natsserver.NatsServer, tmp_path: Path, kubesim_factory: Any, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    async def limit(bus: Bus) -> None:
        await set_max_msg_size(bus, LIMIT)

    async def lift(bus: Bus) -> None:  # an admin lifts the limit
        await set_max_msg_size(bus, -1)

    with caplog.at_level(logging.INFO):
        r = await refused_then_restarted(nats_server, tmp_path, kubesim_factory, monkeypatch, capsys, CAMPAIGN,
                                         limit, lift)
    why, kept, rows, status, executed = r.why, r.kept, r.rows, r.status, r.executed
    said = runner_said(caplog)
    assert not any("NATS stopped or restarting?" in m for m in said), said
    errors = [m for m in runner_said(caplog, logging.ERROR) if "NATS refuses its timeline" in m]
    assert errors and "above the events stream PODTAX's max_msg_size" in errors[0], said
    assert "nats stream edit PODTAX --max-msg-size" in errors[0], errors[0]
    assert "max_msg_size" in why, why
    assert executed == 1, f"the run's work was done {executed} times (its timeline lost at the restart)"
    assert len(kept) == 1 and kept[0].startswith(f"held.{CAMPAIGN['name']}."), kept
    assert rows == [(1, "ok", None)], f"one result for the run: {rows}"
    assert "1 done, 0 failed" in status, status
    assert any("its timeline, kept by an earlier runner, was sent again" in m for m in said), said
