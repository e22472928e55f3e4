"""A control-plane run still executing in the runner is not expired as no-report: the runner is its executor, so its
report is coming, not lost. An audit (kubesim hangDeletes, timeout 100, PODTAX_RUNNER_REPORT_GRACE_S 5): the run's
own work ended in time, but its end-of-run cleanup (the hung DELETE sent once more, then 30 s waiting for the claim)
took it past timeout + grace; the runner failed it as no-report and started attempt 2 beside it on the same API, then
attempt 1's timeline came and was stored too: one planned run, two `ok` runs in the cell (and `campaign status`
said 2 failed). Through the real runner, parser and analyzer on a real nats-server, against the real kubesim."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from podtax.cli.main import main as cli
from podtax_runner.controlplane import cleanup, common, kubeapi

from tests.controlplane.conftest import NODE, cluster, start_and_submit
from tests.integration.harness import services, wait_for

CAMPAIGN = {"name": "cp-late", "nodes": [NODE], "environments": ["kubernetes"],
            "tests": [{"test": "volume-churn", "params": {"count": 6, "concurrency": 3}}],
            "repetitions": {"min": 1, "max": 1}, "timeout": 6}


async def test_a_run_past_its_timeout_in_cleanup_is_not_run_twice(nats_url: str, tmp_path: Path,
                                                                  kubesim_factory: Any,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(kubeapi, "TIMEOUT", (1.0, 1.0))  # the hung DELETE's read timeout (60 s in use)
    monkeypatch.setattr(common, "GIVE_UP_FLOOR_S", 1.0)
    monkeypatch.setattr(cleanup, "CLEANUP_WAIT_S", 12.0)  # the end-of-run cleanup waits for the claim that stays
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    sim = kubesim_factory({**cluster(provision=0.05, delete=0.05),
                           "faults": {"hangDeletes": ["persistentvolumeclaims/-0002"]}}, kubelet="simulated")
    async with services(nats_url, tmp_path) as s:
        await start_and_submit(s, tmp_path, [CAMPAIGN], runner_kubeconfig=sim.kubeconfig, runner_report_grace_s=0.5)
        query = "SELECT run_id, attempt, status, failure_reason FROM runs WHERE campaign = 'cp-late'"
        await wait_for(lambda: any(r[2] == "ok" for r in s.query(query)), 60, "the run's timeline stored")
        finished: list[str] = []

        async def status() -> None:
            capsys.readouterr()
            code = await asyncio.to_thread(cli, ["campaign", "status", "cp-late"])
            if "finished" in capsys.readouterr().out:
                finished.append(str(code))

        deadline = time.monotonic() + 120
        while not finished:  # the runner's own account: attempt 2, had it been started, is over by then
            assert time.monotonic() < deadline, "the campaign did not finish in 120 s"
            await status()
            await asyncio.sleep(0.5)  # wait_for(lambda: True, ...) returned at once: status ran back to back
        assert finished == ["0"], finished  # the runner counts it done: no attempt failed as no-report
        rows = s.query(query)
    assert [(attempt, status) for _, attempt, status, _ in rows] == [(1, "ok")], rows
