"""`podtax simulate` resolved no namespaceSelector: its cluster had no namespaces (the live scheduler watches them)
and its workload could give a class no namespace, labels or affinity. Now the workload file's `namespaces` (name ->
labels) and each class's `namespace`, `labels` and `affinity` make its pods, and the simulated cluster lists those
namespaces as the live scheduler's namespace informer does. A class whose required anti-affinity selects namespaces
labelled team=a is kept off the node of a pod in such a namespace, in the simulation as on the Kubernetes emulator
with the real scheduler service (the cross-check)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from podtax_scheduler.sim_policies import node_scores
from podtax_scheduler.simulate import Job, namespace_objects, place_sequence, pod_object
from podtax_scheduler.simulate_cli import build_workload, read_workload

from tests.scheduler.conftest import put_scores
from tests.scheduler.test_simulate import planted

WORKLOAD = """\
nodes: {cpu: "3", memory: 16Gi}
duration_s: 600
namespaces: {db: {team: a}, other: {team: b}}
classes:
  - {test: sysbench-cpu, params: threads=1, rate_per_s: 0.01, runtime_s: 60, requests: {cpu: "1", memory: 1Gi},
     namespace: db, labels: {app: db}}
  - test: sysbench-cpu
    params: threads=1
    rate_per_s: 0.01
    runtime_s: 60
    requests: {cpu: "1", memory: 1Gi}
    labels: {app: web}
    affinity:
      podAntiAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {matchLabels: {app: db}}
            namespaceSelector: {matchLabels: {team: a}}
            topologyKey: kubernetes.io/hostname
  - {test: sysbench-cpu, params: threads=1, rate_per_s: 0.01, runtime_s: 60, requests: {cpu: "1", memory: 1Gi},
     namespace: other, labels: {app: db}}
"""
ORDER = [0, 1, 2, 1]  # db (team a), web, a db pod in a team b namespace (no matter to web), web again


def _workload(tmp_path: Path) -> Any:
    (tmp_path / "w.yaml").write_text(WORKLOAD)
    speeds = planted({"n1": 1000.0, "n2": 1080.0, "n3": 1170.0, "n4": 900.0})
    return build_workload(read_workload(tmp_path / "w.yaml"), [speeds])


def test_a_namespace_selector_decides_the_same_in_the_simulation_and_the_live_scheduler(
        tmp_path: Path, sim_factory: Any, scheduler_factory: Any, nats_url: str) -> None:
    w = _workload(tmp_path)
    simulated = place_sequence(w, ORDER)
    # the fastest node n3 holds the db pod of a team=a namespace: web goes to the next fastest, twice (3 cpus)
    assert simulated == ["n3", "n2", "n3", "n2"], simulated
    sim = sim_factory({"nodes": [{"name": n, "capacity": {"cpu": "3", "memory": "16Gi", "pods": "110"}}
                                 for n in w.nodes]})
    for namespace in namespace_objects(w):  # those the simulation lists: db, other and sim (web's)
        sim.create(namespace)
    put_scores(nats_url, [s.model_copy(update={"cluster": "local"}) for s in node_scores(w)])
    scheduler_factory(sim.kubeconfig)
    live = []
    for i, c in enumerate(ORDER):
        body = pod_object(Job(i, c, 0.0, 0.5), w.classes[c])
        del body["metadata"]["uid"], body["status"]
        body["spec"]["containers"][0]["image"] = "busybox"
        ns = body["metadata"]["namespace"]
        sim.create(body, namespace=ns)
        live.append(sim.wait_for(lambda i=i, ns=ns: (sim.get("pods", f"job-{i}", ns) or {})
                                 .get("spec", {}).get("nodeName"), timeout=20))
    assert live == simulated


def _campaign_db(path: Path) -> Path:
    """A DuckDB file of campaign `ns`: 8 host and 8 pod sysbench-cpu runs on each of n1..n4 (n3 the fastest)."""
    from datetime import UTC, datetime, timedelta

    from podtax import events
    from podtax_analyzer.store import Store

    t0, out = datetime(2025, 3, 3, 8, tzinfo=UTC), []
    for k, (node, speed) in enumerate({"n1": 1000.0, "n2": 1080.0, "n3": 1170.0, "n4": 900.0}.items()):
        for env in ("host", "kubernetes"):
            for i in range(8):
                run = events.RunSpec(run_id=f"ns-{node}-{env}-{i}", campaign="ns", node=node, env=env,
                                     test="sysbench-cpu", params={"threads": 1}, attempt=1, timeout_s=600)
                start = t0 + timedelta(hours=k, minutes=6 * i + (3 if env == "host" else 0))
                res = events.Result(run=run, tool="sysbench", tool_version="sysbench 1.0.20", parser_version="1",
                                    metrics=[events.Metric(name="events_per_second", value=speed * (1 + 0.001 * i),
                                                           unit="events/s", higher_is_better=True)],
                                    started_at=start, ended_at=start + timedelta(seconds=10))
                out.append(events.result(res, "test"))
    store = Store(path)
    store.write_batch(out)
    store.close()
    return path


def test_the_simulate_command_reads_namespaces_labels_and_affinity(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from podtax_scheduler.simulate_cli import main

    (tmp_path / "w.yaml").write_text(WORKLOAD)
    db = _campaign_db(tmp_path / "podtax.duckdb")
    assert main(["--campaign", "ns", "--workload", str(tmp_path / "w.yaml"), "--db", str(db),
                 "--policies", "podtax", "--seeds", "2", "--json"]) == 0, capsys.readouterr().err
    out = json.loads(capsys.readouterr().out)
    assert out["nodes"] == 4 and set(out["policies"]) == {"podtax", "oracle"}
