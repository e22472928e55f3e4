"""`podtax campaign cancel` while a control-plane run is in flight. Before, the run went on to its end (at count 100,
concurrency 2 and 0.3 s a provision: over 15 s, every object made and deleted) and its result was stored, though the
campaign was cancelled; the CLI said only 'in flight will finish or time out'. Now the run stops before its next
object, deletes what it made, and is recorded as cancelled (the runner's progress: cancelled, not failed; the
analyzer's runs: failed with reason `cancelled`, no metrics), through the real runner, parser, analyzer, CLI and
kubesim."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from podtax.cli.main import main as cli
from podtax_runner.controlplane.kubeapi import Kube

from tests.controlplane.conftest import NODE, cluster, logged_runs, ours, start_and_submit
from tests.integration.harness import services, wait_for

COUNT = 100


@pytest.mark.parametrize("env", ["kubernetes", "nomad"])
async def test_cancel_stops_a_control_plane_run_and_records_it_cancelled(
        env: str, nats_url: str, tmp_path: Path, kubesim_factory: Any, nomadsim_factory: Any,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    sim = kubesim_factory(cluster(provision=0.3, delete=0.01), kubelet="none")
    nomad = nomadsim_factory({"plugins": [{"id": "hostpath", "createLatency": 0.3}]})
    campaign = {"name": "cp-cancel", "nodes": [NODE], "environments": [env],
                "tests": [{"test": "volume-churn", "params": {"count": COUNT, "concurrency": 2,
                                                              "plugin_id": "hostpath"}}],
                "repetitions": {"min": 1, "max": 1}, "timeout": 300}

    def under_way() -> bool:
        return len(ours(sim, "persistentvolumeclaims") if env == "kubernetes" else nomad.volumes()) >= 4

    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    nc, logs = await logged_runs(nats_url)
    async with services(nats_url, tmp_path) as s:
        await start_and_submit(s, tmp_path, [campaign], runner_kubeconfig=sim.kubeconfig, runner_nomad_addr=nomad.url)
        await wait_for(under_way, 60, "the run under way")
        capsys.readouterr()
        assert await asyncio.to_thread(cli, ["campaign", "cancel", "cp-cancel"]) == 0
        said = capsys.readouterr().out
        assert "a control-plane run (volume-churn, pod-startup) stops before its next object" in said, said
        query = "SELECT status, failure_reason, failure_detail FROM runs WHERE campaign = 'cp-cancel'"
        await wait_for(lambda: s.query(query), 60, "the cancelled run stored")
        (status, reason, detail), = s.query(query)
        assert (status, reason) == ("failed", "cancelled"), detail
        assert detail.startswith("campaign cp-cancel was cancelled while this run was in flight: the run was "
                                 "stopped before its next object"), detail
        assert not s.query("SELECT * FROM metrics m JOIN runs r USING (run_id) WHERE r.campaign = 'cp-cancel'")
        for _ in range(100):  # the runner records the run's outcome (the failure event) soon after the analyzer
            await asyncio.to_thread(cli, ["campaign", "status", "cp-cancel"])
            out = capsys.readouterr().out
            if "finished (cancelled)" in out:
                break
            await asyncio.sleep(0.2)
        assert "finished (cancelled)" in out and "0 done, 0 failed, 1 cancelled" in out, out  # not a failure
    await nc.close()
    assert logs == []  # no timeline published: not a result
    assert not ours(sim, "persistentvolumeclaims") and not ours(sim, "persistentvolumes") and nomad.volumes() == []
    if env == "nomad":  # its creates take 0.3 s each, 2 at a time: it stopped before the next, not at its end
        made = [c for c in nomad.controller_calls() if c.op == "create"]
        assert 4 <= len(made) < COUNT, len(made)
    else:  # its creates return at once; it stopped in the bind wait, each claim's provision 0.3 s
        assert (Kube(sim.api_client()).scrape() or {}).get("POST persistentvolumeclaims 201", 0) > 0
