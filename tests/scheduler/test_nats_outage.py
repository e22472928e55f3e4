"""NATS stopped and started again (same store, same port) under a running scheduler: binding goes on without it,
and the score watch resumes by itself (nats-py re-creates the ordered consumer after two missed heartbeats,
~10-20 s), so a score put after the restart steers the next pod."""

from __future__ import annotations

from typing import Any

import pytest
from podtax import natsserver

from tests.scheduler.conftest import put_scores
from tests.scheduler.sched_objects import pod, score


def node_of(sim: Any, name: str) -> str | None:
    return ((sim.get("pods", name, "default") or {}).get("spec") or {}).get("nodeName")


@pytest.mark.slow
def test_nats_gone_and_back(sim_factory: Any, scheduler_factory: Any, nats_server: Any) -> None:
    sim = sim_factory({"nodes": [{"name": n, "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
                                 for n in ("a", "b")]})
    put_scores(nats_server.url, [score("a", 100, 20), score("b", 200, 20)])
    bg = scheduler_factory(sim.kubeconfig)
    nats_server.stop()
    sim.create(pod("during"))
    assert sim.wait_for(lambda: node_of(sim, "during")) == "b"  # binding needs Kubernetes only
    again = natsserver.start(nats_server.store_dir, port=nats_server.port)
    try:
        before = bg.scheduler.store.updates
        put_scores(nats_server.url, [score("a", 400, 20)])
        sim.wait_for(lambda: bg.scheduler.store.updates > before, timeout=60)
        sim.create(pod("after"))
        assert sim.wait_for(lambda: node_of(sim, "after")) == "a"
    finally:
        again.stop()
