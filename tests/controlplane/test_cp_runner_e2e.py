"""Campaigns of the control-plane templates through the whole pipeline against the emulators, with a
real nats-server: the runner dispatches each run to the control-plane executor (no Job, no host
agent), publishes the timeline as the raw log, the parser and analyzer store metrics and per-object
phases; kubernetes and nomad runs of a cell are interleaved; nothing is left behind."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import nats
import pytest
import yaml
from podtax import config, subjects
from podtax.cli.main import main as cli

from tests.controlplane.conftest import NODE, cluster, logged_runs, ours, start_and_submit
from tests.integration.harness import services, wait_for

VOLUMES = {"name": "cp-volumes", "nodes": [NODE], "environments": ["kubernetes", "nomad"],
           "tests": [{"test": "volume-churn", "params": {"count": 20, "concurrency": 5, "plugin_id": "hostpath"}}],
           "repetitions": {"min": 2, "max": 2}, "timeout": 60, "seed": 3}
PODS = {"name": "cp-pods", "nodes": [NODE], "environments": ["kubernetes"],
        "tests": [{"test": "pod-startup", "params": {"count": 5, "concurrency": 5}}],
        "repetitions": {"min": 2, "max": 2}, "timeout": 60, "seed": 3}
TOO_BIG = {"name": "cp-big", "nodes": [NODE], "environments": ["kubernetes"],  # its timeline would not fit NATS
           "tests": [{"test": "volume-churn", "params": {"count": 5000}}], "repetitions": {"min": 1, "max": 1}}


async def test_control_plane_campaigns_end_to_end(nats_url: str, tmp_path: Path, kubesim_factory: Any,
                                                  nomadsim_factory: Any, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture) -> None:
    sim = kubesim_factory(cluster(provision=0.02, delete=0.01), kubelet="simulated")
    nomad = nomadsim_factory({"plugins": [{"id": "hostpath", "createLatency": 0.01, "deleteLatency": 0.005}]})
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    nc = await nats.connect(nats_url)
    logs: list[dict[str, Any]] = []

    async def on_log(msg: Any) -> None:
        logs.append(json.loads(msg.data)["data"])

    await nc.subscribe(f"{subjects.RUN_LOG}.>", cb=on_log)
    async with services(nats_url, tmp_path) as s:
        await start_and_submit(s, tmp_path, [VOLUMES, PODS, TOO_BIG], runner_kubeconfig=sim.kubeconfig,
                               runner_nomad_addr=nomad.url)
        done = "SELECT count(*) FROM runs WHERE campaign IN ('cp-volumes', 'cp-pods')"
        await wait_for(lambda: s.query(done)[0][0] >= 6, 90, "6 control-plane runs stored")
        # refused as a campaign, before any run: its reason is where `podtax campaign status` looks
        capsys.readouterr()
        assert await asyncio.to_thread(cli, ["campaign", "status", "cp-big"]) == 1
        assert "the runner refused campaign 'cp-big'" in capsys.readouterr().err
        assert not s.query("SELECT * FROM runs WHERE campaign = 'cp-big'")
        rows = s.query("SELECT env, test, status, failure_reason FROM runs WHERE campaign <> 'cp-big'")
        assert all(r[2] == "ok" for r in rows), rows
        assert sorted((r[0], r[1]) for r in rows) == [("kubernetes", "pod-startup")] * 2 + [
            ("kubernetes", "volume-churn")] * 2 + [("nomad", "volume-churn")] * 2
        metric = "SELECT r.env, m.value FROM metrics m JOIN runs r USING (run_id) WHERE m.name = ?"
        assert {env for env, _ in s.query(metric, ["provisioned_makespan_s"])} == {"kubernetes", "nomad"}
        assert len(s.query(metric, ["ready_p50_ms"])) == 2
        # min and avg beside the percentiles (kube-burner's figures), each run's of the objects in its phases rows
        pooled = """SELECT m.value, p.value FROM metrics m JOIN (SELECT run_id, {f}(latency_s) * 1000 AS value
                    FROM phases WHERE phase = ? GROUP BY run_id) p USING (run_id) WHERE m.name = ?"""
        for phase, runs in (("provisioned", 4), ("pv_deleted", 4), ("ready", 2), ("containers_ready", 2)):
            for stat, f in (("min", "min"), ("avg", "avg")):
                pairs = s.query(pooled.format(f=f), [phase, f"{phase}_{stat}_ms"])
                assert len(pairs) == runs and all(v == pytest.approx(p, rel=1e-9) for v, p in pairs), pairs
        assert all(v <= 3.0 for _, v in s.query(metric, ["requests_per_object"]))  # it watched
    await nc.close()
    assert len(logs) == 6
    for raw in logs:
        header = json.loads(raw["stdout"].splitlines()[0])
        assert header["kind"] == "header" and header["backend"] == raw["run"]["env"] and header["simulated"]
    assert not ours(sim, "persistentvolumeclaims") and not ours(sim, "pods") and nomad.volumes() == []


async def test_runner_restart_mid_run_cleans_up_and_resumes(nats_url: str, tmp_path: Path, kubesim_factory: Any,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A runner stopped while a volume-churn run is in flight deletes what it created and records no
    failure; the next runner removes anything left by that attempt and runs it again, once."""
    sim = kubesim_factory(cluster(provision=0.3, delete=0.01), kubelet="none")
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    nc, logs = await logged_runs(nats_url)
    doc = {"name": "cp-restart", "nodes": [NODE], "environments": ["kubernetes"],
           "tests": [{"test": "volume-churn", "params": {"count": 60, "concurrency": 2}}],
           "repetitions": {"min": 1, "max": 1}, "timeout": 120}
    async with services(nats_url, tmp_path) as s:
        await s.analyzer()
        await s.parser()
        from podtax_runner.service import serve

        settings = s.settings(config.RunnerSettings, runner_kubeconfig=sim.kubeconfig)
        await s.start("runner", serve, settings)
        runner = s.tasks[-1]
        path = tmp_path / "restart.yaml"
        path.write_text(yaml.safe_dump(doc))
        for _ in range(50):
            if await asyncio.to_thread(cli, ["campaign", "submit", str(path)]) == 0:
                break
            await asyncio.sleep(0.2)
        await wait_for(lambda: len(ours(sim, "persistentvolumeclaims")) >= 5, 60, "the run under way")
        await s.crash(runner)
        assert not ours(sim, "persistentvolumeclaims")  # the stopped run removed its claims
        await s.start("runner", serve, settings)
        query = "SELECT status, failure_reason FROM runs WHERE campaign = 'cp-restart'"
        await wait_for(lambda: s.query(query), 90, "the resumed run stored")
        assert s.query(query) == [("ok", None)]
    await nc.close()
    assert len(logs) == 1  # one timeline: the resumed attempt's
    assert not ours(sim, "persistentvolumeclaims") and not ours(sim, "persistentvolumes")
