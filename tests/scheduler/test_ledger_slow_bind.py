"""The ledger holds a pod until its bind is done (audit hG, session 51): it dropped every pod 60 s after its decision
(ASSUMED_TTL_S), bound or not, so a pod whose bind waited that long (16 binders busy with slow API calls in a burst, an
API server under load) freed its node's room while still on its way, and the next pod was put there too: two 3-cpu
pods on a 4-cpu node. kube-scheduler no longer expires its assumed pods (kubernetes#106361: expiry raced with slow
binds). The real scheduler against the Kubernetes emulator and a real
nats-server; its one binder is kept busy by a task that waits (standing in for a slow bind ahead in the queue)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.scheduler.conftest import put_scores
from tests.scheduler.sched_objects import pod, score

WAIT_S = 65  # longer than the 60 s the ledger kept a pod


def node_of(sim: Any, name: str) -> str | None:
    return ((sim.get("pods", name, "default") or {}).get("spec") or {}).get("nodeName")


@pytest.mark.slow
def test_a_pod_whose_bind_waits_keeps_its_room(sim_factory: Any, scheduler_factory: Any, nats_url: str) -> None:
    sim = sim_factory({"nodes": [{"name": "fast", "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
                                 {"name": "slow", "capacity": {"cpu": "16", "memory": "8Gi", "pods": "110"}}]})
    put_scores(nats_url, [score("fast", 300, 20), score("slow", 100, 20)])
    bg = scheduler_factory(sim.kubeconfig, scheduler_binders=1)
    state = bg.scheduler.state
    busy = threading.Event()
    bg.scheduler.pool.submit(busy.wait, 120)  # the only binder is taken: binds wait in the queue
    try:
        first = sim.create(pod("first", cpu="3"))
        sim.wait_for(lambda: first["metadata"]["uid"] in state.assumed)
        assert state.pod_node[first["metadata"]["uid"]] == "fast"
        time.sleep(WAIT_S)  # its bind still waits
        second = sim.create(pod("second", cpu="3"))
        sim.wait_for(lambda: second["metadata"]["uid"] in state.assumed)
    finally:
        busy.set()
    assert sim.wait_for(lambda: node_of(sim, "first")) == "fast"
    assert sim.wait_for(lambda: node_of(sim, "second")) == "slow"  # was "fast": 6 cpus bound on a 4-cpu node
