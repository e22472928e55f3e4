"""deploy/k8s/scheduler.yaml grants exactly the API calls the scheduler makes: every request it sent to the emulator
(kubesim's apiserver_request_total, real verbs and resources) in a session that binds, explains a failure twice,
holds and releases its Lease, is allowed by its ClusterRole and Role, and nothing else is granted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.scheduler.conftest import events_for
from tests.scheduler.sched_objects import pod

MANIFEST = Path(__file__).resolve().parents[2] / "deploy" / "k8s" / "scheduler.yaml"
RBAC = {"LIST": "list", "WATCH": "watch", "GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch",
        "APPLY": "patch", "DELETE": "delete", "DELETECOLLECTION": "deletecollection"}


def granted() -> set[tuple[str, str, str]]:
    roles = [o for o in yaml.safe_load_all(MANIFEST.read_text()) if o and o["kind"] in ("ClusterRole", "Role")]
    return {(g, res, verb) for o in roles for r in o["rules"] for g in r["apiGroups"] for res in r["resources"]
            for verb in r["verbs"]}


def called(sim: Any) -> set[tuple[str, str, str]]:
    out = set()
    for metric in sim.emulator.server.metrics.requests.collect():
        for s in metric.samples:
            if s.name.endswith("_total") and s.value:
                res = s.labels["resource"] + (f"/{s.labels['subresource']}" if s.labels["subresource"] else "")
                out.add((s.labels["group"], res, RBAC[s.labels["verb"]]))
    return out


def test_the_manifest_grants_exactly_what_the_scheduler_calls(sim_factory: Any, scheduler_factory: Any) -> None:
    sim = sim_factory({"nodes": [{"name": "a", "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}],
                       "namespaces": ["podtax"]})
    bg = scheduler_factory(sim.kubeconfig, scheduler_leader_elect=True, scheduler_lease_namespace="podtax",
                           scheduler_retry_period_s=0.2)
    sim.create(pod("fits", cpu="100m"))
    sim.create(pod("big", cpu="64"))
    sim.wait_for(lambda: (sim.get("pods", "fits", "default") or {})["spec"].get("nodeName"))
    sim.wait_for(lambda: events_for(sim, "big"))
    sim.set_node_taints("a", [{"key": "soft", "value": "x", "effect": "PreferNoSchedule"}])  # tried again
    sim.wait_for(lambda: [e for e in events_for(sim, "big") if e.get("count", 1) >= 2], timeout=20)  # patched
    bg.stop()  # releases the Lease (an update)
    assert called(sim) == granted(), (sorted(called(sim) - granted()), sorted(granted() - called(sim)))
