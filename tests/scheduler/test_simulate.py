"""The discrete-event simulation (planted speeds) and its cross-check against the real scheduler service
on the Kubernetes emulator."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from podtax_scheduler.sim_policies import node_scores
from podtax_scheduler.simulate import (
    JobClass,
    Measured,
    Workload,
    evaluate,
    place_sequence,
    run_once,
)

from tests.scheduler.conftest import put_scores


def planted(speeds: dict[str, float], runs: dict[str, int] | None = None, cv: float = 0.01) -> Measured:
    rng = np.random.default_rng(1)
    return Measured("sysbench-cpu", "threads=1", "events_per_second", "events/s", True,
                    {n: s * np.exp(rng.normal(0, cv, (runs or {}).get(n, 20))) for n, s in speeds.items()})


def workload(m: Measured, *, rate: float = 0.05, cpu: str = "4", duration: float = 1200.0,
             contention: float = 0.05) -> Workload:
    nodes = list(m.values)
    return Workload(nodes, {n: n for n in nodes}, {"cpu": cpu, "memory": "16Gi"}, duration, contention,
                    [JobClass("cpu", m, rate, 60.0, {"cpu": "1", "memory": "1Gi"})])


# one fast node, one a third slower with many more runs (the prototype's sum trap), two average ones
TRAP = planted({"fast": 1300.0, "slow": 1000.0, "mid-1": 1150.0, "mid-2": 1150.0},
               runs={"slow": 200, "fast": 10})


def test_the_same_seed_gives_the_same_numbers() -> None:
    w = workload(TRAP)
    for policy in ("default", "random", "prototype", "podtax", "oracle"):
        assert run_once(w, policy, 3) == run_once(w, policy, 3)
    assert run_once(w, "random", 3) != run_once(w, "random", 4)


def test_planted_truth_orders_the_policies() -> None:
    res = evaluate(workload(TRAP), ["default", "random", "prototype", "podtax"], range(6))
    mean = {p: r["mean_jct_s"][0] for p, r in res.items()}
    regret = {p: r["regret_pct"][0] for p, r in res.items()}
    assert regret["oracle"] == 0.0
    assert regret["podtax"] < regret["random"] and regret["podtax"] < regret["default"]
    assert regret["prototype"] > regret["podtax"]  # the sum picks the slow node with many runs
    assert mean["podtax"] < mean["default"] and mean["podtax"] < mean["prototype"]
    assert res["podtax"]["jct_vs_default"][2] < 1.0  # the whole interval below default


def test_within_noise_speeds_leave_placement_to_resources() -> None:
    # 0.1% apart with 1% noise: podtax should spread like the default policy, not pile onto one node
    m = planted({"a": 1000.0, "b": 1001.0, "c": 999.0})
    w = workload(m, rate=0.2, cpu="8")
    placed = place_sequence(w, [0] * 6)
    assert len(set(placed)) == 3


def test_within_noise_with_5_runs_and_no_interval_leaves_placement_to_resources() -> None:
    # 1% apart, 5 runs each (no interval from the analyzer): the first three pods go to three nodes, as with intervals
    m = planted({"a": 1010.0, "b": 1000.0, "c": 1000.0}, runs={"a": 5, "b": 5, "c": 5})
    assert all(s.ci_low is None for s in node_scores(workload(m)))
    placed = place_sequence(workload(m, rate=0.2, cpu="8"), [0] * 3)
    assert len(set(placed)) == 3, placed


def test_cross_check_simulated_podtax_equals_the_real_scheduler(sim_factory: Any, scheduler_factory: Any,
                                                                nats_url: str) -> None:
    m = planted({"n1": 1000.0, "n2": 1080.0, "n3": 1170.0, "n4": 900.0})
    w = workload(m, cpu="3")
    order = [0] * 10  # more pods than the fastest nodes hold: resources and speed both decide
    simulated = place_sequence(w, order)
    sim = sim_factory({"nodes": [{"name": n, "capacity": {"cpu": "3", "memory": "16Gi", "pods": "110"}}
                                 for n in w.nodes]})
    put_scores(nats_url, [s.model_copy(update={"cluster": "local"}) for s in node_scores(w)])
    scheduler_factory(sim.kubeconfig)
    real = []
    for i in range(len(order)):
        body = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"job-{i}", "namespace": "default", "labels": {"test": "sysbench-cpu"},
                             "annotations": {"podtax.io/params": "threads=1"}},
                "spec": {"schedulerName": "benchmark-scheduler", "containers": [
                    {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}
        sim.create(body)
        real.append(sim.wait_for(lambda i=i: (sim.get("pods", f"job-{i}", "default") or {})
                                 .get("spec", {}).get("nodeName"), timeout=20))
    assert real == simulated
    assert simulated[:3] == ["n3", "n3", "n3"] and None not in simulated


@pytest.mark.parametrize("policy", ["nope"])
def test_unknown_policy(policy: str) -> None:
    with pytest.raises(ValueError, match="unknown policy"):
        run_once(workload(TRAP), policy, 0)
