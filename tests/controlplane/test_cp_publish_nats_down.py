"""NATS stopped the moment a control-plane run's work is done, while the runner publishes its timeline, and started
again (same port, same store). The runner is the run's executor and has no outbox: the timeline is only in memory.
Before: the publish timed out (nats-py's 5 s ack wait), the runner logged 'control-plane run ... failed' with a
traceback and published an executor-error failure ('TimeoutError: nats: timeout') for it, and `campaign status` said
'0 done, 1 failed', while the analyzer stored the timeline as ok (nats-py had held the first publish and sent it on
reconnecting; beyond its 2 MiB buffer, or with the runner restarted, it was gone). Now the runner sends the timeline
again (the same event id: JetStream stores it once) until NATS takes it, within the time before the run would expire,
and says so; the run is counted done. Real nats-server, runner, parser and analyzer, the CLI, the real kubesim."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from podtax import natsserver
from podtax.cli.main import main as cli
from podtax_runner.controlplane import dispatch

from tests.controlplane.conftest import NODE, cluster, start_and_submit
from tests.integration.harness import services, wait_for

CAMPAIGN = {"name": "cp-nats-down", "nodes": [NODE], "environments": ["kubernetes"],
            "tests": [{"test": "volume-churn", "params": {"count": 4, "concurrency": 2}}],
            "repetitions": {"min": 1, "max": 1}, "timeout": 20}


async def test_a_timeline_published_while_nats_restarts_is_sent_again(
        nats_server: natsserver.NatsServer, tmp_path: Path, kubesim_factory: Any, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_server.url)
    sim = kubesim_factory(cluster(provision=0.02, delete=0.02), kubelet="none")
    stopped, real = threading.Event(), dispatch.execute

    def execute_then_stop_nats(*args: Any, **kwargs: Any) -> Any:
        timeline = real(*args, **kwargs)
        if not stopped.is_set():  # the run's work is done: NATS goes away before the runner publishes it
            nats_server.stop()
            stopped.set()
        return timeline

    monkeypatch.setattr(dispatch, "execute", execute_then_stop_nats)
    again: natsserver.NatsServer | None = None

    def publish_failed() -> bool:  # the runner said its publish failed (before: the run failed; now: sent again)
        return any(("publish" in r.getMessage() or "failed" in r.getMessage()) for r in caplog.records
                   if r.name.startswith("podtax.runner") and r.levelno >= logging.WARNING)

    try:
        with caplog.at_level(logging.INFO):
            async with services(nats_server.url, tmp_path) as s:
                await start_and_submit(s, tmp_path, [CAMPAIGN], runner_kubeconfig=sim.kubeconfig,
                                       runner_report_grace_s=1.0)
                await wait_for(stopped.is_set, 60, "the run's work done and NATS stopped")
                await wait_for(publish_failed, 30, "the runner's publish of the timeline failed")
                again = natsserver.start(nats_server.store_dir, port=nats_server.port,
                                         log_file=tmp_path / "nats-again.log")
                query = "SELECT attempt, status, failure_reason FROM runs WHERE campaign = 'cp-nats-down' ORDER BY 1"
                await wait_for(lambda: any(r[1] == "ok" for r in s.query(query)), 90, "a run stored")
                finished: list[tuple[int, str]] = []

                async def status() -> None:
                    capsys.readouterr()
                    code = await asyncio.to_thread(cli, ["campaign", "status", "cp-nats-down"])
                    out = capsys.readouterr().out
                    if "finished" in out:
                        finished.append((code, out))

                deadline = time.monotonic() + 60
                while not finished:  # the runner's own account of the run
                    assert time.monotonic() < deadline, "the campaign did not finish in 60 s"
                    await status()
                    await asyncio.sleep(0.5)
                rows = s.query(query)
        assert rows == [(1, "ok", None)], f"the timeline measured was stored, not lost and run again: {rows}"
        assert "1 done, 0 failed" in finished[0][1], finished  # not failed as 'executor-error: nats: timeout'
        said = [r.getMessage() for r in caplog.records
                if r.name.startswith("podtax.runner") and r.levelno >= logging.WARNING]
        assert any("could not publish its timeline" in m and "sending it again" in m for m in said), said
        assert not any("failed" in m for m in said), said
    finally:
        if again is not None:
            again.stop()
