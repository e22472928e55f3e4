"""A control-plane run's timeline that NATS refuses (the events stream full), the runner restarted before an admin
makes room. Before, the runner held the timeline in memory only: stopping, it gave it up ('the next runner resumes
the run and runs it again'), and the next runner did so: the run's work was done twice (its objects made and timed
again) and the first measurement was lost. Now the refused timeline is also kept in the runner's bucket until NATS
takes it: the next runner sends that copy, the run is not run again, and the copy goes once NATS took it.
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
from tests.integration.test_runner_stream_full_held import fill, wait_for_async

CAMPAIGN = {"name": "cp-kept", "nodes": [NODE], "environments": ["kubernetes"],
            "tests": [{"test": "volume-churn", "params": {"count": 4, "concurrency": 2}}],
            "repetitions": {"min": 1, "max": 1}, "timeout": 20}


async def test_a_refused_timeline_outlives_a_runner_restart(
        nats_server: natsserver.NatsServer, tmp_path: Path, kubesim_factory: Any, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_server.url)
    sim = kubesim_factory(cluster(provision=0.02, delete=0.02), kubelet="none", sim_duration=1.0)
    executed, full = [], threading.Event()
    real = dispatch.execute

    def execute_then_wait_for_a_full_stream(*args: Any, **kwargs: Any) -> Any:  # in the executor's thread
        done = real(*args, **kwargs)
        executed.append(1)
        assert full.wait(60), "the test never filled the stream"
        return done

    monkeypatch.setattr(dispatch, "execute", execute_then_wait_for_a_full_stream)
    bus = await Bus.connect(nats_server.url, "test")
    kept: list[str] = []
    try:
        await bus.ensure_streams(max_bytes=200_000)  # made before the services: theirs find it
        kv = await bus.kv(subjects.RUNNER_BUCKET)
        with caplog.at_level(logging.INFO):
            async with services(nats_server.url, tmp_path) as s:
                settings = {"runner_kubeconfig": sim.kubeconfig, "runner_report_grace_s": 1.0}
                await start_and_submit(s, tmp_path, [CAMPAIGN], **settings)
                await wait_for(lambda: executed, 60, "the run's work done")
                assert await fill(bus) > 0
                full.set()

                async def held() -> bool:
                    return bool((await Bus.kv_json(kv, f"campaign.{CAMPAIGN['name']}") or {}).get("held"))

                await wait_for_async(held, 60, "the campaign's state saying why the run is held")
                kept = await Bus.kv_keys(kv, "held.")  # the timeline's copy, kept before the reason was
                await s.crash(next(t for t in s.tasks if t.get_name() == "runner"))
                info = await bus.js.stream_info(subjects.STREAM)  # an admin makes room
                info.config.max_bytes = 10_000_000
                await bus.js.update_stream(info.config)
                await s.start("runner", serve, s.settings(config.RunnerSettings, **settings))
                status = await finished_status(capsys, CAMPAIGN["name"], 120)
                # the runner's account comes from the outcome event; the analyzer stores the same events on its
                # own, in batches: 'finished' may come first (rows were [] once, under load), so wait for the row
                await wait_for(lambda: s.query(QUERY, [CAMPAIGN["name"]]), 60, "the run stored by the analyzer")
                await wait_for_async(lambda: kept_gone(kv), 30, "the kept copy removed")
                rows = s.query(QUERY, [CAMPAIGN["name"]])
    finally:
        await bus.close()
    assert len(executed) == 1, f"the run's work was done {len(executed)} times (its timeline lost at the restart)"
    assert len(kept) == 1 and kept[0].startswith(f"held.{CAMPAIGN['name']}."), kept
    assert rows == [(1, "ok", None)], f"one result for the run: {rows}"
    assert "1 done, 0 failed" in status, status
    said = runner_said(caplog)
    assert any("its copy is kept in the runner's bucket: the next runner sends it" in m for m in said), said
    assert any("its timeline, kept by an earlier runner, was sent again" in m for m in said), said


async def kept_gone(kv: Any) -> bool:
    return not await Bus.kv_keys(kv, "held.")
