"""Why not the best-measured node (audit hE, scheduler): a pod whose scores favour node a, when a lacked the cpu
or was cordoned, went to b with "Successfully assigned default/p to b; ranked by sysbench-cpu ... (1 node(s)
with evidence)": nothing said a measured better and why it was not a candidate. Now the Scheduled Event and
PlacementMade name the better-measured nodes that were not feasible, each with its filter's reason. The
scheduler against the Kubernetes emulator and a real nats-server."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scheduler.conftest import events_for, put_scores
from tests.scheduler.sched_objects import pod, score
from tests.scheduler.test_e2e import bound_node

SMALL = {"capacity": {"cpu": "1", "memory": "8Gi", "pods": "110"}}
BIG = {"capacity": {"cpu": "8", "memory": "8Gi", "pods": "110"}}


@pytest.mark.parametrize(("cordon", "reason"), [(False, "Insufficient cpu"), (True, "node(s) were unschedulable")])
def test_the_event_says_why_the_best_measured_node_was_passed_over(cordon: bool, reason: str, sim_factory: Any,
                                                                   scheduler_factory: Any, nats_url: str) -> None:
    sim = sim_factory({"nodes": [{"name": "a", **(BIG if cordon else SMALL)}, {"name": "b", **BIG},
                                 {"name": "c", **SMALL}]})
    if cordon:
        sim.cordon("a")
    put_scores(nats_url, [score("a", 300, 12), score("b", 100, 12), score("c", 50, 12)])
    scheduler_factory(sim.kubeconfig)
    sim.create(pod("p", cpu="2"))
    assert bound_node(sim, "p") == "b"
    ev = sim.wait_for(lambda: [e for e in events_for(sim, "p") if e["reason"] == "Scheduled"])
    message = ev[0]["message"]
    assert f"; better measured but not feasible: a ({reason})" in message, message
    assert "c (" not in message  # c measured worse than b: not worth naming
