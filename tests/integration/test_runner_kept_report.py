"""A control-plane run's timeline that NATS refuses (the events stream full), the runner restarted before an admin
makes room. Before, the runner held the timeline in memory only: stopping, it gave it up ('the next runner resumes
the run and runs it again'), and the next runner did so: the run's work was done twice (its objects made and timed
again) and the first measurement was lost. Now the refused timeline is also kept in the runner's bucket until NATS
takes it: the next runner sends that copy, the run is not run again, and the copy goes once NATS took it.
Real nats-server, runner, parser, analyzer, CLI and kubesim."""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
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


@dataclass
class Restarted:
    """What a run whose timeline NATS refused went through: a runner crashed, the limit lifted, a runner started."""
    executed: int  # times the run's work was done
    kept: list[str]  # the runner's bucket's held.* keys before the crash
    why: str  # the campaign state's reason the run was held
    rows: list[Any]  # the analyzer's rows of the campaign (QUERY)
    status: str  # `podtax campaign status` once finished


async def refused_then_restarted(nats_server: natsserver.NatsServer, tmp_path: Path, kubesim_factory: Any,
                                 monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                 campaign: dict[str, Any], impose: Callable[[Bus], Awaitable[None]],
                                 lift: Callable[[Bus], Awaitable[None]], max_bytes: int | None = None) -> Restarted:
    """A control-plane run whose work is done, then `impose` makes NATS refuse its timeline; once the campaign's state
    says why, the runner crashes, `lift` lifts the limit (an admin) and a runner starts again. Real nats-server,
    runner, parser, analyzer, CLI and kubesim; the caller captures the logs (caplog)."""
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
    try:
        await bus.ensure_streams(**({} if max_bytes is None else {"max_bytes": max_bytes}))  # before the services
        kv = await bus.kv(subjects.RUNNER_BUCKET)
        async with services(nats_server.url, tmp_path) as s:
            settings = {"runner_kubeconfig": sim.kubeconfig, "runner_report_grace_s": 1.0}
            await start_and_submit(s, tmp_path, [campaign], **settings)
            await wait_for(lambda: executed, 60, "the run's work done")
            await impose(bus)
            limited.set()

            async def held() -> str:
                return str((await Bus.kv_json(kv, f"campaign.{campaign['name']}") or {}).get("held") or "")

            await wait_for_async(held, 60, "the campaign's state saying why the run is held")
            why = await held()
            kept = await Bus.kv_keys(kv, "held.")  # the timeline's copy, kept before the reason was
            await s.crash(next(t for t in s.tasks if t.get_name() == "runner"))
            await lift(bus)
            await s.start("runner", serve, s.settings(config.RunnerSettings, **settings))
            status = await finished_status(capsys, campaign["name"], 120)
            # the runner's account comes from the outcome event; the analyzer stores the same events on its
            # own, in batches: 'finished' may come first (rows were [] once, under load), so wait for the row
            await wait_for(lambda: s.query(QUERY, [campaign["name"]]), 60, "the run stored by the analyzer")
            await wait_for_async(lambda: kept_gone(kv), 30, "the kept copy removed")
            rows = s.query(QUERY, [campaign["name"]])
    finally:
        await bus.close()
    return Restarted(len(executed), kept, why, rows, status)


async def _fill(bus: Bus) -> None:
    assert await fill(bus) > 0


async def _make_room(bus: Bus) -> None:  # an admin makes room
    info = await bus.js.stream_info(subjects.STREAM)
    info.config.max_bytes = 10_000_000
    await bus.js.update_stream(info.config)


async def test_a_refused_timeline_outlives_a_runner_restart(
        nats_server: natsserver.NatsServer, tmp_path: Path, kubesim_factory: Any, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    with caplog.at_level(logging.INFO):
        r = await refused_then_restarted(nats_server, tmp_path, kubesim_factory, monkeypatch, capsys, CAMPAIGN,
                                         _fill, _make_room, max_bytes=200_000)
    assert r.executed == 1, f"the run's work was done {r.executed} times (its timeline lost at the restart)"
    assert len(r.kept) == 1 and r.kept[0].startswith(f"held.{CAMPAIGN['name']}."), r.kept
    assert r.rows == [(1, "ok", None)], f"one result for the run: {r.rows}"
    assert "1 done, 0 failed" in r.status, r.status
    said = runner_said(caplog)
    assert any("its copy is kept in the runner's bucket: the next runner sends it" in m for m in said), said
    assert any("its timeline, kept by an earlier runner, was sent again" in m for m in said), said


async def kept_gone(kv: Any) -> bool:
    return not await Bus.kv_keys(kv, "held.")
