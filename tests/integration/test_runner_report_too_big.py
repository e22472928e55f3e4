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
import threading
from pathlib import Path
from typing import Any

import pytest
from podtax import config, natsserver, subjects
from podtax.bus import Bus
from podtax_runner.controlplane import dispatch
from podtax_runner.service import serve

from tests.controlplane.conftest import NODE, cluster, start_and_submit
from tests.controlplane.test_cp_publish_nats_down import QUERY, finished_status, runner_said
from tests.integration.harness import services, wait_for
from tests.integration.test_runner_kept_report import kept_gone
from tests.integration.test_runner_stream_full_held import wait_for_async

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
    monkeypatch.setenv("PODTAX_NATS_URL", nats_server.url)
    sim = kubesim_factory(cluster(provision=0.02, delete=0.02), kubelet="none", sim_duration=1.0)
    executed, limited = [], threading.Event()
    real = dispatch.execute

    def execute_then_wait_for_the_limit(*args: Any, **kwargs: Any) -> Any:  # in the executor's thread
        done = real(*args, **kwargs)
        executed.append(1)
        assert limited.wait(60), "the test never set the limit"
        return done

    monkeypatch.setattr(dispatch, "execute", execute_then_wait_for_the_limit)
    bus = await Bus.connect(nats_server.url, "test")
    kept: list[str] = []
    try:
        await bus.ensure_streams()
        kv = await bus.kv(subjects.RUNNER_BUCKET)
        with caplog.at_level(logging.INFO):
            async with services(nats_server.url, tmp_path) as s:
                settings = {"runner_kubeconfig": sim.kubeconfig, "runner_report_grace_s": 1.0}
                await start_and_submit(s, tmp_path, [CAMPAIGN], **settings)
                await wait_for(lambda: executed, 60, "the run's work done")
                await set_max_msg_size(bus, LIMIT)
                limited.set()

                async def held() -> str:
                    return str((await Bus.kv_json(kv, f"campaign.{CAMPAIGN['name']}") or {}).get("held") or "")

                await wait_for_async(held, 60, "the campaign's state saying why the run is held")
                why = await held()
                kept = await Bus.kv_keys(kv, "held.")
                await s.crash(next(t for t in s.tasks if t.get_name() == "runner"))
                await set_max_msg_size(bus, -1)  # an admin lifts the limit
                await s.start("runner", serve, s.settings(config.RunnerSettings, **settings))
                status = await finished_status(capsys, CAMPAIGN["name"], 120)
                await wait_for(lambda: s.query(QUERY, [CAMPAIGN["name"]]), 60, "the run stored by the analyzer")
                await wait_for_async(lambda: kept_gone(kv), 30, "the kept copy removed")
                rows = s.query(QUERY, [CAMPAIGN["name"]])
    finally:
        await bus.close()
    said = runner_said(caplog)
    assert not any("NATS stopped or restarting?" in m for m in said), said
    errors = [m for m in runner_said(caplog, logging.ERROR) if "NATS refuses its timeline" in m]
    assert errors and "above the events stream PODTAX's max_msg_size" in errors[0], said
    assert "nats stream edit PODTAX --max-msg-size" in errors[0], errors[0]
    assert "max_msg_size" in why, why
    assert len(executed) == 1, f"the run's work was done {len(executed)} times (its timeline lost at the restart)"
    assert len(kept) == 1 and kept[0].startswith(f"held.{CAMPAIGN['name']}."), kept
    assert rows == [(1, "ok", None)], f"one result for the run: {rows}"
    assert "1 done, 0 failed" in status, status
    assert any("its timeline, kept by an earlier runner, was sent again" in m for m in said), said
