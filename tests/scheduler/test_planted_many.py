"""Planted speeds, many pods at once: 200 pods on three measured nodes all placed, each once, fastest first."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.scheduler.conftest import put_scores
from tests.scheduler.sched_objects import pod, score


def test_two_hundred_pods_fill_the_fastest_then_the_next(sim_factory: Any, scheduler_factory: Any,
                                                          nats_url: str) -> None:
    sim = sim_factory({"nodes": [{"name": n, "capacity": {"cpu": "64", "memory": "256Gi", "pods": "110"}}
                                 for n in ("fast", "mid", "slow")]})
    put_scores(nats_url, [score("fast", 300, 20), score("mid", 200, 20), score("slow", 100, 20)])
    bg = scheduler_factory(sim.kubeconfig)
    for i in range(200):
        sim.create(pod(f"p{i:03d}", cpu="10m"))

    def placed() -> dict[str, str]:
        nodes = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in sim.objects("pods", "default")}
        return nodes if all(nodes.values()) and len(nodes) == 200 else {}

    nodes = sim.wait_for(placed, timeout=60)
    assert Counter(nodes.values()) == {"fast": 110, "mid": 90}  # the pods limit of the fastest, then the next
    sim.wait_for(lambda: bg.scheduler.metrics.bindings._value.get() >= 200)  # moves after each binding's answer
    assert bg.scheduler.metrics.bindings._value.get() == 200
    assert bg.scheduler.metrics.conflicts._value.get() == 0
    assert sum(bg.scheduler.queue.counts().values()) == 0

    def scheduled_events() -> set[str]:
        events = sim.objects("events", "default")
        named = {e["involvedObject"]["name"] for e in events if e.get("reason") == "Scheduled"}
        return named if len(named) == 200 else set()

    # every pod gets its Scheduled Event (those over the events' budget wait for their turn; before, 83 of 200
    # were dropped in this burst)
    assert sim.wait_for(scheduled_events, timeout=30) == set(nodes)
