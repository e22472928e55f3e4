"""A pod run's log NATS does not take (stopped once its Job is done) until past the moment the run would expire as
no-report. Before: KubeExecutor gave the log up at its first failed publish ('the runner runs it again once its
report is overdue'), the run expired as no-report and attempt 2 was planned and run: the analyzer's runs were
[(1, failed, no-report), (2, ...)] for one planned run, the measured log lost to a no-report, and nats-py's buffered
copy, flushed on reconnecting, may still land (a result for a run recorded failed replaces it: two results, as for
control-plane runs, tests/controlplane/test_cp_publish_nats_down.py). Now the log is held and sent again (the same
event id) until NATS takes it, the run does not expire meanwhile: one result, no attempt 2. Real nats-server (stopped
and started again on its port and store), runner, KubeExecutor, parser, analyzer, CLI, kubesim's simulated kubelet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from podtax import natsserver
from podtax_runner.kube import KubeExecutor

from tests.controlplane.conftest import NODE
from tests.controlplane.test_cp_publish_nats_down import (
    QUERY,
    finished_status,
    nats_stopped_after_the_work,
    recorded_ticks,
    runner_said,
)
from tests.integration.harness import wait_for

CAMPAIGN = {"name": "pod-nats-away", "nodes": [NODE], "environments": ["kubernetes"],
            "tests": [{"test": "sysbench-cpu", "params": {"max_prime": 2000, "events": 100, "threads": 1}}],
            "repetitions": {"min": 1, "max": 1}, "timeout": 20, "seed": 1,
            "pod": {"image": "ghcr.io/podtax/bench:0.1.0"}}


async def test_a_pod_runs_log_held_past_its_expiry_stores_one_result(
        nats_server: natsserver.NatsServer, tmp_path: Path, kubesim_factory: Any, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    ticks = recorded_ticks(monkeypatch)  # when each of the runner's ticks that ended began
    async with nats_stopped_after_the_work(nats_server, tmp_path, kubesim_factory, monkeypatch, caplog, CAMPAIGN,
                                           "publish", (KubeExecutor, "_logs"), "simulated") as outage:
        # the run was dispatched before its Job ended: due (timeout + grace) by then
        due = outage.stopped + CAMPAIGN["timeout"] + 1.0
        await wait_for(lambda: any(t > due for t in ticks), 120, "a tick of the runner with the run due")
        outage.restart()
        status = await finished_status(capsys, CAMPAIGN["name"], 120)
        rows = outage.s.query(QUERY, [CAMPAIGN["name"]])
    # the simulated kubelet's log is empty: the parser stores it as failed ('empty'), a result all the same
    assert [r[0] for r in rows] == [1], f"one result for the run, not run again: {rows}"
    assert "no-report" not in status, status
    said = runner_said(caplog)
    assert any("pod run" in m and "could not publish its log" in m and "held" in m for m in said), said
