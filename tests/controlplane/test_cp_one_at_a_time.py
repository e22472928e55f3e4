"""Control-plane runs time a cluster's API, not a node: two at once (a campaign naming two nodes, or two campaigns)
time each other's load. An audit: the runner kept runs apart per node only, so a volume-churn campaign on node-1 and
node-2 ran its runs two at a time against the one API server and Nomad, each run's latencies and server request
count holding the other's. Now one control-plane run is in flight at a time, runner-wide. Through the real runner,
parser and analyzer on a real nats-server, against the real kubesim with two nodes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane.conftest import CLASS, start_and_submit
from tests.integration.harness import services, wait_for

NODES = ["node-1", "node-2"]
CAMPAIGN = {"name": "cp-apart", "nodes": NODES, "environments": ["kubernetes"],
            "tests": [{"test": "volume-churn", "params": {"count": 6, "concurrency": 3}}],
            "repetitions": {"min": 2, "max": 2}, "timeout": 60}


async def test_control_plane_runs_never_overlap(nats_url: str, tmp_path: Path, kubesim_factory: Any,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    sim = kubesim_factory({"nodes": [{"name": n, "capacity": {"cpu": "4", "memory": "8Gi"}} for n in NODES],
                           "storageClasses": [CLASS],
                           "provisioner": {"provisionLatency": 0.3, "deleteLatency": 0.2, "seed": 7}},
                          kubelet="simulated")
    async with services(nats_url, tmp_path) as s:
        await start_and_submit(s, tmp_path, [CAMPAIGN], runner_kubeconfig=sim.kubeconfig)
        query = "SELECT node, stdout FROM raw_logs WHERE campaign = 'cp-apart'"
        await wait_for(lambda: len(s.query(query)) == 4, 90, "4 control-plane runs stored")
        logs = s.query(query)
    assert {node for node, _ in logs} == set(NODES)
    spans = []
    for _, stdout in logs:
        lines = [json.loads(line) for line in stdout.splitlines()]
        start = lines[0]["t0_unix"]
        spans.append((start, start + lines[-1]["wall_s"]))
    spans.sort()
    overlaps = [(a, b) for a, b in zip(spans, spans[1:], strict=False) if b[0] < a[1]]
    assert not overlaps, spans
