"""NATS stopped the moment a control-plane run's work is done, while the runner publishes its timeline, and started
again (same port, same store). The runner is the run's executor and has no outbox: the timeline is only in memory.
Before: the publish timed out (nats-py's 5 s ack wait), the runner logged 'control-plane run ... failed' with a
traceback and published an executor-error failure ('TimeoutError: nats: timeout') for it, and `campaign status` said
'0 done, 1 failed', while the analyzer stored the timeline as ok (nats-py had held the first publish and sent it on
reconnecting; beyond its 2 MiB buffer, or with the runner restarted, it was gone). Now the runner sends the timeline
again (the same event id: JetStream stores it once) until NATS takes it, however long (the run does not expire
meanwhile), and says so; the run is counted done. Real nats-server, runner, parser and analyzer, the CLI, the real
kubesim."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from podtax import natsserver
from podtax.cli.main import main as cli
from podtax_runner import service
from podtax_runner.controlplane import dispatch

from tests.controlplane.conftest import NODE, cluster, start_and_submit
from tests.integration.harness import Services, services, wait_for

CAMPAIGN = {"name": "cp-nats-down", "nodes": [NODE], "environments": ["kubernetes"],
            "tests": [{"test": "volume-churn", "params": {"count": 4, "concurrency": 2}}],
            "repetitions": {"min": 1, "max": 1}, "timeout": 20}
QUERY = "SELECT attempt, status, failure_reason FROM runs WHERE campaign = ? ORDER BY 1"


@dataclass
class Outage:
    """The services running a campaign whose run's work is done, NATS stopped since `stopped` (time.monotonic())."""

    s: Services
    server: natsserver.NatsServer
    log_file: Path
    stopped: float = 0.0
    again: list[natsserver.NatsServer] = field(default_factory=list)

    def restart(self) -> None:
        """NATS started again on its port and store."""
        self.again.append(natsserver.start(self.server.store_dir, port=self.server.port, log_file=self.log_file))


@contextlib.asynccontextmanager
async def nats_stopped_after_the_work(nats_server: natsserver.NatsServer, tmp_path: Path, kubesim_factory: Any,
                                      monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
                                      campaign: dict[str, Any], said: str,
                                      work: tuple[Any, str] = (dispatch, "execute"), kubelet: str = "none"
                                      ) -> AsyncIterator[Outage]:
    """`campaign` submitted to the analyzer, the parser and the runner (kubesim its cluster, `kubelet` its kubelet);
    NATS is stopped the moment the run's work is done (`work`, an object and its function's name, returned: a
    control-plane run's execute, a pod run's KubeExecutor._logs), before the runner publishes its report; yields once
    the runner logged a warning holding `said`. NATS started again in the block (Outage.restart) is stopped on
    leaving."""
    monkeypatch.setenv("PODTAX_NATS_URL", nats_server.url)
    sim = kubesim_factory(cluster(provision=0.02, delete=0.02), kubelet=kubelet, sim_duration=1.0)
    stopped: list[float] = []
    real = getattr(*work)

    def work_then_stop_nats(*args: Any, **kwargs: Any) -> Any:
        done = real(*args, **kwargs)
        if not stopped:
            nats_server.stop()
            stopped.append(time.monotonic())
        return done

    monkeypatch.setattr(*work, work_then_stop_nats)
    outage: Outage | None = None
    try:
        with caplog.at_level(logging.INFO):
            async with services(nats_server.url, tmp_path) as s:
                outage = Outage(s, nats_server, tmp_path / "nats-again.log")
                await start_and_submit(s, tmp_path, [campaign], runner_kubeconfig=sim.kubeconfig,
                                       runner_report_grace_s=1.0)
                await wait_for(lambda: stopped, 60, "the run's work done and NATS stopped")
                outage.stopped = stopped[0]
                await wait_for(lambda: any(said in m for m in runner_said(caplog)), 30,
                               f"the runner's warning of its publish ({said!r})")
                yield outage
    finally:
        for server in outage.again if outage else []:
            server.stop()


def runner_said(caplog: pytest.LogCaptureFixture, level: int = logging.WARNING) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("podtax.runner") and r.levelno >= level]


def recorded_ticks(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """When each of the runner's ticks that ended began (time.monotonic()), appended as they end."""
    ticks: list[float] = []
    real_tick = service.Runner.tick

    async def tick(self: service.Runner, *args: Any, **kwargs: Any) -> None:
        began = time.monotonic()
        try:
            await real_tick(self, *args, **kwargs)
        finally:
            ticks.append(began)

    monkeypatch.setattr(service.Runner, "tick", tick)
    return ticks


async def finished_status(capsys: pytest.CaptureFixture[str], campaign: str, timeout_s: float) -> str:
    """`podtax campaign status <campaign>`'s output once it says the campaign finished."""
    deadline = time.monotonic() + timeout_s
    while True:
        capsys.readouterr()
        await asyncio.to_thread(cli, ["campaign", "status", campaign])
        out = capsys.readouterr().out
        if "finished" in out:
            return out
        assert time.monotonic() < deadline, f"the campaign did not finish in {timeout_s:.0f} s: {out}"
        await asyncio.sleep(0.5)


async def test_a_timeline_published_while_nats_restarts_is_sent_again(
        nats_server: natsserver.NatsServer, tmp_path: Path, kubesim_factory: Any, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    async with nats_stopped_after_the_work(nats_server, tmp_path, kubesim_factory, monkeypatch, caplog, CAMPAIGN,
                                           "publish") as outage:  # its first try failed: sent again
        outage.restart()
        await wait_for(lambda: any(r[1] == "ok" for r in outage.s.query(QUERY, ["cp-nats-down"])), 90, "a run stored")
        status = await finished_status(capsys, "cp-nats-down", 60)  # the runner's own account of the run
        rows = outage.s.query(QUERY, ["cp-nats-down"])
    assert rows == [(1, "ok", None)], f"the timeline measured was stored, not lost and run again: {rows}"
    assert "1 done, 0 failed" in status, status  # not failed as 'executor-error: nats: timeout'
    said = runner_said(caplog)
    assert any("could not publish its timeline" in m and "sending it again" in m for m in said), said
    assert not any("failed" in m for m in said), said


async def test_an_outage_past_the_runs_expiry_stores_one_result(
        nats_server: natsserver.NatsServer, tmp_path: Path, kubesim_factory: Any, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    """NATS away past the moment the run would expire as no-report (its timeout + grace: a tick then finds it due).
    Before (review r4 of 686c54e): the runner gave the timeline up at its deadline (EXECUTING_S, shortened here, put it
    before the first try's end) and said what it measured was lost, the run expired as no-report and was planned
    again, and nats-py flushed the copies it had buffered on reconnecting: the analyzer stored attempt 1's timeline
    and attempt 2's result, two results for one planned run, and 'lost' was false. Now the runner holds the timeline
    until NATS takes it and the run does not expire meanwhile: one result, no attempt 2."""
    monkeypatch.setattr(dispatch, "EXECUTING_S", 0.0)  # the publish's deadline (before) passed at its first failure
    ticks = recorded_ticks(monkeypatch)
    campaign = {**CAMPAIGN, "name": "cp-nats-away"}
    async with nats_stopped_after_the_work(nats_server, tmp_path, kubesim_factory, monkeypatch, caplog, campaign,
                                           "publish") as outage:
        # the run was dispatched before its work ended: due (timeout + grace) by then, and past the first try
        due = max(outage.stopped + campaign["timeout"] + 1.0, time.monotonic())
        await wait_for(lambda: any(t > due for t in ticks), 120, "a tick of the runner with the run due")
        outage.restart()
        status = await finished_status(capsys, "cp-nats-away", 120)
        # 'finished' is the runner's word; the analyzer stores the same events on its own, in batches
        await wait_for(lambda: outage.s.query(QUERY, ["cp-nats-away"]) != [], 60, "the analyzer stored the result")
        rows = outage.s.query(QUERY, ["cp-nats-away"])
    assert rows == [(1, "ok", None)], f"one result for the run, not run again: {rows}"
    assert "1 done, 0 failed" in status, status
    said = runner_said(caplog)
    assert any("could not publish its timeline" in m and "held" in m for m in said), said
    assert not any("not published" in m or "lost" in m for m in said), said


async def test_a_runner_stopping_with_a_timeline_held_says_it(
        nats_server: natsserver.NatsServer, tmp_path: Path, kubesim_factory: Any, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """The runner stops while it holds a timeline NATS has not taken. Before: close() left the task sending it again
    and the runner ended without a word of it (the event loop's end cancelled it). Now by the time the runner has
    stopped it said, in an error, that the timeline was not published and that the next runner runs the run again."""
    async with nats_stopped_after_the_work(nats_server, tmp_path, kubesim_factory, monkeypatch, caplog,
                                           {**CAMPAIGN, "name": "cp-nats-stop"}, "sending it again") as outage:
        runner = next(t for t in outage.s.tasks if t.get_name() == "runner")
        outage.s.stop.set()
        await wait_for(runner.done, 60, "the runner stopped")
        errors = runner_said(caplog, logging.ERROR)
        outage.restart()  # the other services close with NATS there
    assert any("its timeline was not published" in m and "the next runner resumes the run and runs it again" in m
               for m in errors), errors
