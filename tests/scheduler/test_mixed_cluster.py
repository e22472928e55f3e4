"""A mixed cluster as it really is (x86 servers and Raspberry Pis), planted through the real scheduler against the
Kubernetes emulator and a real nats-server: for each scenario, where the pod lands and what its Event says."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from podtax.events import now

from tests.scheduler.conftest import events_for, put_scores
from tests.scheduler.sched_objects import pod, score
from tests.scheduler.test_e2e import bound_node

X86 = {"arch": "amd64", "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"}}
PI = {"arch": "arm64", "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
      "labels": {"node.kubernetes.io/instance-type": "raspberry-pi-4"}}
CI = (0.97, 1.03)  # a 95% interval of +-3% around the median


def scored(node: str, value: float, n: int = 20, **kw: Any) -> Any:
    return score(node, value, n, ci=(value * CI[0], value * CI[1]), **kw)


def scheduled_message(sim: Any, name: str) -> str:
    ev = sim.wait_for(lambda: [e for e in events_for(sim, name) if e["reason"] == "Scheduled"])
    return str(ev[0]["message"])


def test_a_stale_fast_node_loses_to_a_fresh_slower_one(sim_factory: Any, scheduler_factory: Any,
                                                        nats_url: str) -> None:
    sim = sim_factory({"nodes": [{"name": "x86-old", **X86}, {"name": "x86-new", **X86}]})
    put_scores(nats_url, [scored("x86-old", 300, updated_at=now() - timedelta(days=9)), scored("x86-new", 100)])
    scheduler_factory(sim.kubeconfig)
    sim.create(pod("p"))
    assert bound_node(sim, "p") == "x86-new"
    message = scheduled_message(sim, "p")
    assert "1 node(s) have results older than the 168 h score TTL, ignored: x86-old" in message, message


def test_a_not_ready_fast_node_is_passed_over_and_named(sim_factory: Any, scheduler_factory: Any,
                                                         nats_url: str) -> None:
    sim = sim_factory({"nodes": [{"name": "x86-a", **X86}, {"name": "x86-b", **X86}]})
    sim.set_node_condition("x86-a", "Ready", "Unknown", reason="NodeStatusUnknown")
    put_scores(nats_url, [scored("x86-a", 300), scored("x86-b", 100)])
    scheduler_factory(sim.kubeconfig)
    sim.create(pod("p"))
    assert bound_node(sim, "p") == "x86-b"
    message = scheduled_message(sim, "p")
    assert "better measured but not feasible: x86-a (node(s) were not ready)" in message, message


def test_an_amd64_only_pod_skips_the_faster_pi(sim_factory: Any, scheduler_factory: Any, nats_url: str) -> None:
    sim = sim_factory({"nodes": [{"name": "rpi-1", **PI}, {"name": "x86-1", **X86}]})
    put_scores(nats_url, [scored("rpi-1", 300), scored("x86-1", 100)])
    scheduler_factory(sim.kubeconfig)
    sim.create(pod("p", node_selector={"kubernetes.io/arch": "amd64"}))
    assert bound_node(sim, "p") == "x86-1"
    message = scheduled_message(sim, "p")
    assert "better measured but not feasible: rpi-1 (node(s) didn't match the pod's architecture)" in message, message


def test_overlapping_intervals_leave_the_choice_to_resources(sim_factory: Any, scheduler_factory: Any,
                                                             nats_url: str) -> None:
    sim = sim_factory({"nodes": [{"name": "x86-a", **X86}, {"name": "x86-b", **X86}]})
    put_scores(nats_url, [scored("x86-a", 101), scored("x86-b", 100)])  # 1% apart, +-3% noise
    scheduler_factory(sim.kubeconfig)
    # x86-a is only 2 of 16 cores fuller: without the intervals its 1% (95.9 against 98.4 in total) would win;
    # with them both score 100 on the benchmark and LeastAllocated decides (99.5 against 98.4)
    sim.create(pod("busy", cpu="2", test=None, node_name="x86-a", phase="Running"))
    sim.create(pod("p", cpu="1"))
    assert bound_node(sim, "p") == "x86-b"
    assert "(median per run, 2 node(s) with evidence)" in scheduled_message(sim, "p")


@pytest.mark.parametrize(("runs", "a", "b", "want"), [
    (5, 101, 100, "x86-b"),  # 1% apart, no interval under 6 runs: within the default 5% band, resources decide
    (1, 104, 100, "x86-b"),  # one run each, 4% apart: never a win by noise
    (5, 106.5, 100, "x86-a"),  # 5 runs 6.5% apart: beyond 5 runs' band (5% / sqrt(5)); a flat 5% band tied them
    (3, 200, 100, "x86-a"),  # 2x apart: the faster wins though it is fuller
])
def test_scores_without_interval_decide_only_beyond_the_noise_band(runs: int, a: float, b: float, want: str,
                                                                   sim_factory: Any, scheduler_factory: Any,
                                                                   nats_url: str) -> None:
    sim = sim_factory({"nodes": [{"name": "x86-a", **X86}, {"name": "x86-b", **X86}]})
    put_scores(nats_url, [score("x86-a", a, runs), score("x86-b", b, runs)])  # as the analyzer publishes them
    scheduler_factory(sim.kubeconfig)
    # x86-a is 2 of 16 cores fuller: taken as exact, 5 runs 1% apart gave x86-a 98.4 in total against 96.9
    sim.create(pod("busy", cpu="2", test=None, node_name="x86-a", phase="Running"))
    sim.create(pod("p", cpu="1"))
    assert bound_node(sim, "p") == want
    assert "(median per run, 2 node(s) with evidence)" in scheduled_message(sim, "p")


def test_a_new_node_without_score_gets_pods_only_when_measured_nodes_are_full(sim_factory: Any,
                                                                              scheduler_factory: Any,
                                                                              nats_url: str) -> None:
    sim = sim_factory({"nodes": [{"name": "x86-a", **X86}, {"name": "rpi-new", **PI}]})
    put_scores(nats_url, [scored("x86-a", 100)])
    scheduler_factory(sim.kubeconfig)
    sim.create(pod("p1", cpu="14"))
    assert bound_node(sim, "p1") == "x86-a"
    sim.create(pod("p2", cpu="3"))
    assert bound_node(sim, "p2") == "rpi-new"
    message = scheduled_message(sim, "p2")
    assert "no usable evidence of sysbench-cpu events_per_second [threads=1]: resources decided; better measured " \
        "but not feasible: x86-a (Insufficient cpu)" in message, message


def test_a_burst_of_fifty_never_double_books_the_fastest(sim_factory: Any, scheduler_factory: Any,
                                                         nats_url: str) -> None:
    sim = sim_factory({"nodes": [{"name": "x86-fast", **X86}, {"name": "x86-slow", **X86},
                                 {"name": "rpi-1", **PI}]})
    put_scores(nats_url, [scored("x86-fast", 300), scored("x86-slow", 200), scored("rpi-1", 100)])
    scheduler_factory(sim.kubeconfig)
    sim.create(pod("existing", cpu="4", test=None, node_name="x86-fast", phase="Running"))
    for i in range(50):
        sim.create(pod(f"p{i:02d}", cpu="1"))
    def placed() -> dict[str, str]:
        bound = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in sim.objects("pods", "default")
                 if p["spec"].get("nodeName") and p["metadata"]["name"] != "existing"}
        return bound if len(bound) >= 32 else {}

    nodes = sim.wait_for(placed, timeout=60)
    # 12 cpus left on the fastest, 16 on the next, 4 on the Pi: 32 placed, 18 wait, explained, none lost
    assert Counter(nodes.values()) == {"x86-fast": 12, "x86-slow": 16, "rpi-1": 4}
    waiting = sorted(set(f"p{i:02d}" for i in range(50)) - set(nodes))
    assert len(waiting) == 18
    messages = sim.wait_for(lambda: (lambda m: m if len(m) == 18 else None)(
        {e["involvedObject"]["name"]: e["message"] for e in sim.objects("events", "default")
         if e["reason"] == "FailedScheduling" and e["involvedObject"]["name"] in waiting}), timeout=30)
    assert set(messages.values()) == {"0/3 nodes are available: 3 Insufficient cpu."}, messages


@pytest.mark.parametrize(("pi_value", "test", "expected"), [
    (None, None, "x86-1"),  # no benchmark: the Pi's free room does not outweigh its taint
    (101.0, "sysbench-cpu", "x86-1"),  # within noise of the x86 node: the taint decides
    (200.0, "sysbench-cpu", "rpi-1"),  # twice as fast: the measured speed decides
])
def test_a_pi_tainted_prefer_no_schedule_is_used_only_when_worth_it(pi_value: float | None, test: str | None,
                                                                     expected: str, sim_factory: Any,
                                                                     scheduler_factory: Any, nats_url: str) -> None:
    taint = {"key": "podtax.io/slow", "value": "pi", "effect": "PreferNoSchedule"}
    sim = sim_factory({"nodes": [{"name": "rpi-1", **PI, "taints": [taint]}, {"name": "x86-1", **X86}]})
    put_scores(nats_url, [scored("x86-1", 100)] + ([scored("rpi-1", pi_value)] if pi_value else []))
    scheduler_factory(sim.kubeconfig)
    sim.create(pod("busy", cpu="12", test=None, node_name="x86-1", phase="Running"))
    sim.create(pod("p", cpu="1", test=test))
    assert bound_node(sim, "p") == expected


def test_a_pod_asking_for_armv7l_lands_on_a_32_bit_pi(sim_factory: Any, scheduler_factory: Any) -> None:
    """uname -m of a 32-bit Raspberry Pi OS is armv7l, its kubelet labels the node kubernetes.io/arch=arm: before,
    a pod labelled podtax.io/arch=armv7l was refused by every node ('node(s) didn't match the pod's architecture')."""
    sim = sim_factory({"nodes": [{"name": "rpi3-32", **PI, "arch": "arm"}, {"name": "x86-1", **X86}]})
    scheduler_factory(sim.kubeconfig)
    sim.create(pod("p", labels={"podtax.io/arch": "armv7l"}))
    assert bound_node(sim, "p") == "rpi3-32"


@pytest.mark.parametrize(("nodes", "want", "warned"), [
    # each node's pod runs used its own native sysbench: the x86 server's x86_64 one, the Pi's aarch64 one
    ({"x86-1": (X86, "x86_64", 100), "rpi-1": (PI, "aarch64", 300)}, "rpi-1", None),
    # a 32-bit Raspberry Pi OS (its kubelet labels it arm) runs the armhf build natively
    ({"x86-1": (X86, "x86_64", 100), "rpi3-32": ({**PI, "arch": "arm"}, "arm", 300)}, "rpi3-32", None),
    # an armhf image on one 64-bit Pi, the arm64 one on another: other code on one kind of machine
    ({"x86-1": (X86, "x86_64", 100), "rpi-1": (PI, "aarch64", 300), "rpi-2": (PI, "arm", 100)}, "x86-1",
     "(arm64 nodes: aarch64 on rpi-1; arm on rpi-2)"),
], ids=["x86-and-pi-native", "x86-and-32-bit-pi-native", "armhf-beside-arm64-on-pis"])
def test_native_tool_builds_rank_a_mixed_cluster(nodes: dict[str, tuple[dict[str, Any], str, float]], want: str,
                                                 warned: str | None, sim_factory: Any, scheduler_factory: Any,
                                                 nats_url: str) -> None:
    """Scores name their runs' tool architectures (NodeScore.tool_archs). A native build on each node is that node's
    speed: the Pi, three times faster, takes the pod though the x86 server has four times its free room (resources
    alone pick x86-1), with no Warning. Only two builds on nodes of one kubernetes.io/arch leave the pod to resources,
    with a BenchmarkMixedArch Warning. Before, any two architectures did: every pod of this cluster went by
    resources with a Warning."""
    sim = sim_factory({"nodes": [{"name": name, **spec} for name, (spec, _, _) in nodes.items()]})
    put_scores(nats_url, [scored(name, value).model_copy(update={"tool_archs": [arch]})
                          for name, (_, arch, value) in nodes.items()])
    scheduler_factory(sim.kubeconfig)
    sim.create(pod("p", cpu="100m"))
    assert bound_node(sim, "p") == want
    message = scheduled_message(sim, "p")
    warnings = [(e["reason"], e["message"]) for e in events_for(sim, "p") if e["type"] == "Warning"]
    if warned is None:
        assert f"{len(nodes)} node(s) with evidence)" in message and warnings == [], (message, warnings)
        return
    said = ("the candidate nodes' benchmark scores come from tool executables built for different architectures on "
            f"nodes of one architecture {warned}, so their differences may be the code's, not the nodes'; placed by "
            "resources alone")
    assert said in message, message
    assert sim.wait_for(lambda: [w for w in [(e["reason"], e["message"]) for e in events_for(sim, "p")
                                             if e["type"] == "Warning"]]) == [("BenchmarkMixedArch", said)]
