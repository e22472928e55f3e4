"""`podtax campaign cancel` while a control-plane run is in flight, then the runner stops (a deploy, a crash) before
the stopped run has reported. Before, the next runner resumed the run in full (it did not look at the campaign's
cancellation): every object made again, its timeline published and stored `ok`, and `podtax campaign status` read
'1 done, 0 failed' beside 'finished (cancelled)' (review hR #1). Now the resumed run only removes what the earlier
attempt left and is recorded as cancelled. Real nats-server, kubesim, runner, parser, analyzer and CLI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import nats
import pytest
from podtax import config, subjects
from podtax.cli.main import main as cli
from podtax_runner.controlplane.kubeapi import Kube
from podtax_runner.service import serve

from tests.controlplane.conftest import NODE, cluster, logged_runs, ours, start_and_submit
from tests.integration.harness import services, wait_for

CAMPAIGN = {"name": "cp-cr", "nodes": [NODE], "environments": ["kubernetes"],
            "tests": [{"test": "volume-churn", "params": {"count": 40, "concurrency": 2}}],
            "repetitions": {"min": 1, "max": 1}, "timeout": 120}


async def cancelled_in_kv(nats_url: str) -> None:
    """Return as soon as the runner's state of the campaign says cancelled (before the stopped run reports)."""
    nc = await nats.connect(nats_url)
    try:
        kv = await nc.jetstream().key_value(subjects.RUNNER_BUCKET)
        for _ in range(4000):
            if json.loads((await kv.get("campaign.cp-cr")).value).get("cancelled_at"):
                return
            await asyncio.sleep(0.005)
        raise AssertionError("the runner never recorded the cancellation")
    finally:
        await nc.close()


def created(sim: Any) -> int:
    return int((Kube(sim.api_client()).scrape() or {}).get("POST persistentvolumeclaims 201", 0))


async def test_a_cancelled_run_is_not_resumed_by_the_next_runner(
        nats_url: str, tmp_path: Path, kubesim_factory: Any, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    # deletes slow (0.5 s, two refused 429 first): the stopped run is still cleaning up when the runner goes
    faults = {"failDeletes": [{"match": "persistentvolumeclaims/", "status": 429, "times": 2}]}
    sim = kubesim_factory({**cluster(provision=0.3, delete=0.5), "faults": faults}, kubelet="none")
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    nc, logs = await logged_runs(nats_url)
    async with services(nats_url, tmp_path) as s:
        await start_and_submit(s, tmp_path, [CAMPAIGN], runner_kubeconfig=sim.kubeconfig)
        runner = s.tasks[-1]
        await wait_for(lambda: len(ours(sim, "persistentvolumeclaims")) >= 4, 60, "the run under way")
        cancel = asyncio.create_task(asyncio.to_thread(cli, ["campaign", "cancel", "cp-cr"]))
        await cancelled_in_kv(nats_url)
        await s.crash(runner)
        assert await cancel == 0
        made = created(sim)
        await s.start("runner", serve, s.settings(config.RunnerSettings, runner_kubeconfig=sim.kubeconfig))
        query = "SELECT status, failure_reason FROM runs WHERE campaign = 'cp-cr'"
        await wait_for(lambda: s.query(query), 90, "the run stored")
        assert s.query(query) == [("failed", "cancelled")]
        capsys.readouterr()
        for _ in range(100):  # the runner records the outcome soon after the analyzer
            await asyncio.to_thread(cli, ["campaign", "status", "cp-cr"])
            out = capsys.readouterr().out
            if "finished (cancelled)" in out:
                break
            await asyncio.sleep(0.2)
        assert "finished (cancelled)" in out and "0 done, 0 failed, 1 cancelled" in out, out
    await nc.close()
    assert logs == []  # no timeline published
    assert created(sim) == made  # the resumed attempt made nothing
    assert not ours(sim, "persistentvolumeclaims") and not ours(sim, "persistentvolumes")
