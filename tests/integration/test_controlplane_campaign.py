"""The control-plane benchmark through the real services: a volume-churn campaign on the Kubernetes
emulator and the simulated Nomad API, and a pod start-up campaign, run by the runner's executor,
parsed by the parser service, stored and compared by the analyzer (real nats-server, real DuckDB),
ending with the phase table: nomad/kubernetes per phase with a ratio and its CI."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from podtax import config, natsserver, subjects
from podtax.bus import Bus
from podtax.cli.main import main as cli

from tests.integration.harness import services, wait_for

NODE = "node-1"
RUNS = 6
CLASS = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
         "metadata": {"name": "sim-csi", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
         "provisioner": "sim.csi.podtax.io", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}
# injected (SIMULATED) latencies: Kubernetes provisions in ~100 ms, the Nomad plugin creates in ~20 ms
KUBE = {"nodes": [{"name": NODE, "capacity": {"cpu": "4", "memory": "8Gi"}}], "storageClasses": [CLASS],
        "provisioner": {"provisionLatency": {"distribution": "lognormal", "median": 0.1, "sigma": 0.2},
                        "deleteLatency": 0.01, "seed": 3}}
NOMAD = {"seed": 3, "plugins": [{"id": "hostpath", "provider": "hostpath.csi.podtax.io",
                                 "createLatency": {"distribution": "lognormal", "median": 0.02, "sigma": 0.2},
                                 "deleteLatency": 0.001}]}
VOLUMES = {"name": "cp-volumes", "nodes": [NODE], "environments": ["kubernetes", "nomad"],
           "tests": [{"test": "volume-churn", "params": {"count": 20, "concurrency": 10, "plugin_id": "hostpath"}}],
           "repetitions": {"min": RUNS, "max": RUNS}, "timeout": 60, "seed": 3}
PODS = {"name": "cp-pods", "nodes": [NODE], "environments": ["kubernetes"],
        "tests": [{"test": "pod-startup", "params": {"count": 10, "concurrency": 5}}],
        "repetitions": {"min": 3, "max": 3}, "timeout": 60, "seed": 3}


async def wait_for_node(nats_url: str) -> None:
    """Until the runner has seen NODE in the emulator's node list (the CLI checks nodes at submit)."""
    bus = await Bus.connect(nats_url, "test")
    try:
        kv = await bus.kv(subjects.RUNNER_BUCKET)
        for _ in range(300):
            if (await Bus.kv_json(kv, subjects.node_key(NODE)) or {}).get("kubernetes"):
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"the runner never saw {NODE}")
    finally:
        await bus.close()


async def submit(tmp_path: Path, doc: dict[str, Any]) -> None:
    path = tmp_path / f"{doc['name']}.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert await asyncio.to_thread(cli, ["campaign", "submit", str(path)]) == 0


async def test_volume_churn_on_both_backends_and_pod_startup(nats_url: str, tmp_path: Path, kubesim_factory: Any,
                                                             nomadsim_factory: Any, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    kube = kubesim_factory(KUBE, kubelet="simulated")
    nomad = nomadsim_factory(NOMAD)
    port = natsserver.free_port()
    api = f"http://127.0.0.1:{port}"
    async with services(nats_url, tmp_path) as s:
        await s.analyzer(port=port)
        await s.parser()
        from podtax_runner.service import serve

        await s.start("runner", serve, s.settings(config.RunnerSettings, runner_kubeconfig=kube.kubeconfig,
                                                  runner_kubernetes=True, runner_nomad_addr=nomad.url))
        await wait_for_node(nats_url)
        await submit(tmp_path, VOLUMES)
        await submit(tmp_path, PODS)
        done = "SELECT count(*) FROM runs WHERE campaign = ? AND status = 'ok'"
        await wait_for(lambda: s.query(done, ["cp-volumes"])[0][0] == 2 * RUNS
                       and s.query(done, ["cp-pods"])[0][0] == 3, 180, "every control-plane run's result")
        failed = s.query("SELECT run_id, failure_reason, failure_detail FROM runs WHERE status <> 'ok'")
        assert failed == []
        # per-object latencies of every run, for distributions
        per_env = dict(s.query("SELECT env, count(*) FROM phases WHERE campaign = 'cp-volumes' "
                               "AND phase = 'provisioned' GROUP BY env"))
        assert per_env == {"kubernetes": RUNS * 20, "nomad": RUNS * 20}
        async with httpx.AsyncClient(base_url=api, timeout=60) as http:
            table = (await http.get("/api/campaigns/cp-volumes/phase-table")).json()
            objects = (await http.get("/api/campaigns/cp-pods/phases", params={"phase": "ready"})).json()
        rows = {(r["phase"], r["statistic"]): r for r in table["rows"]}
        provisioned = rows[("provisioned", "p50")]
        assert (provisioned["baseline"], provisioned["candidate"]) == ("kubernetes", "nomad")
        assert (provisioned["n_baseline"], provisioned["n_candidate"]) == (RUNS, RUNS)
        assert provisioned["candidate_median"] < provisioned["baseline_median"], provisioned  # nomad creates faster
        if "BIMODAL" in provisioned["flags"]:
            # 6 runs a side: the gap rule (stats/modes) splits ~0.7% of unimodal sides into two modes, more when a
            # load burst slows 3 runs of one side, and the ratio is then withheld, as it should be (a CI run once)
            assert None is provisioned["ratio"] is provisioned["ci_low"] is provisioned["ci_high"], provisioned
        else:
            assert None not in (provisioned["ratio"], provisioned["ci_low"], provisioned["ci_high"]), provisioned
            assert provisioned["ci_low"] <= provisioned["ratio"] <= provisioned["ci_high"] < 1.0
        assert rows[("provisioned", "makespan")]["primary"]
        bound = rows[("bound", "p50")]
        assert bound["n_candidate"] == 0 and bound["ratio"] is None and bound["note"].startswith("Nomad volumes have")
        assert len(objects) == 3 * 10 and all(o["env"] == "kubernetes" for o in objects)
        capsys.readouterr()
        assert await asyncio.to_thread(cli, ["report", "cp-volumes", "--api", api]) == 0
        out = capsys.readouterr().out
        assert "Control-plane phases, side by side" in out and "nomad/kubernetes" in out
        assert "Nomad volumes have no Bound phase" in out
        print(out)
    assert kube.objects("persistentvolumeclaims", None) == [] and nomad.volumes() == []  # nothing left behind
