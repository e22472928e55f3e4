"""Hostile or broken scores on the bus, and a failing decision: the scheduler places the pod anyway or says why."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from podtax import subjects
from podtax.bus import Bus

from tests.scheduler.conftest import events_for, put_scores
from tests.scheduler.sched_objects import pod, score

NODE = {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}


def three(sim_factory: Any) -> Any:
    return sim_factory({"nodes": [{**NODE, "name": n} for n in ("fast", "mid", "slow")]})


def bound_node(sim: Any, name: str, timeout: float = 10) -> str:
    return sim.wait_for(lambda: (sim.get("pods", name, "default") or {}).get("spec", {}).get("nodeName"),
                        timeout=timeout)


def put_raw(nats_url: str, key: str, value: bytes) -> None:
    async def main() -> None:
        bus = await Bus.connect(nats_url, "test")
        try:
            await (await bus.kv(subjects.SCORES_BUCKET)).put(key, value)
        finally:
            await bus.close()

    asyncio.run(main())


def test_a_huge_score_places_the_pod(sim_factory: Any, scheduler_factory: Any, nats_url: str) -> None:
    # 20 x 1e308 overflowed to inf, inf/inf gave NaN scores, and the pod was popped and never bound or told
    sim = three(sim_factory)
    put_scores(nats_url, [score("fast", 300, 20), score("mid", 200, 20), score("slow", 1e308, 20)])
    bg = scheduler_factory(sim.kubeconfig)
    sim.create(pod("p1", cpu="100m"))
    assert bound_node(sim, "p1") == "slow"  # a finite value is taken at its word
    assert bg.scheduler.metrics.errors.labels("algorithm")._value.get() == 0


def test_a_duration_near_zero_is_no_evidence(sim_factory: Any, scheduler_factory: Any, nats_url: str) -> None:
    # lower is better: its speed 1/5e-324 is inf, which gave NaN scores as above
    sim = three(sim_factory)
    put_scores(nats_url, [score(n, v, 20, higher_is_better=False) for n, v in
                          (("fast", 100), ("mid", 200), ("slow", 5e-324))])
    bg = scheduler_factory(sim.kubeconfig)
    sim.create(pod("p", cpu="100m"))
    assert bound_node(sim, "p") == "fast"
    assert bg.scheduler.metrics.errors.labels("algorithm")._value.get() == 0


def test_nan_and_garbage_on_the_bus_are_ignored_and_said(sim_factory: Any, scheduler_factory: Any, nats_url: str,
                                                         caplog: Any) -> None:
    sim = three(sim_factory)
    put_scores(nats_url, [score("fast", 300, 20), score("mid", 200, 20)])
    nan = score("slow", 1.0, 20).model_dump_json().replace('"median":1.0', '"median":NaN').encode()
    put_raw(nats_url, subjects.score_key("local", "kubernetes", "slow", "sysbench-cpu", "events_per_second",
                                         "threads=1"), nan)
    put_raw(nats_url, subjects.score_key("local", "kubernetes", "mid", "sysbench-cpu", "other", "x"), b"\xff" * 4096)
    with caplog.at_level(logging.WARNING, logger="podtax.scheduler.scores"):
        scheduler_factory(sim.kubeconfig)
        sim.create(pod("p", cpu="100m"))
        assert bound_node(sim, "p") == "fast"
    said = [r.getMessage() for r in caplog.records if r.name == "podtax.scheduler.scores"]
    assert any("ignoring invalid score" in m and "finite number" in m for m in said), said
    assert len(said) == 2


def test_a_run_count_beyond_a_float_is_refused(sim_factory: Any, scheduler_factory: Any, nats_url: str,
                                               caplog: Any) -> None:
    # n is any JSON integer: 10**400 runs failed float conversion in every decision of the test, for every pod
    sim = three(sim_factory)
    put_scores(nats_url, [score("fast", 100, 20)])
    raw = score("slow", 200, 20).model_dump_json().replace('"n":20', '"n":' + "9" * 400).encode()
    put_raw(nats_url, subjects.score_key("local", "kubernetes", "slow", "sysbench-cpu", "events_per_second",
                                         "threads=1"), raw)
    with caplog.at_level(logging.WARNING, logger="podtax.scheduler.scores"):
        scheduler_factory(sim.kubeconfig)
        sim.create(pod("p", cpu="100m"))
        assert bound_node(sim, "p") == "fast"
    said = [r.getMessage() for r in caplog.records if r.name == "podtax.scheduler.scores"]
    assert len(said) == 1 and said[0].startswith("ignoring invalid score at local.kubernetes.slow.sysbench-cpu.")
    assert said[0].endswith(": its run count is above 1000000000"), said


def test_a_failing_decision_is_told_and_retried(sim_factory: Any, scheduler_factory: Any, nats_url: str,
                                                monkeypatch: Any) -> None:
    # before: the exception left the pod popped for ever, with no Event: pending without a word
    sim = three(sim_factory)
    bg = scheduler_factory(sim.kubeconfig)
    plugin = bg.scheduler.plugins[0]
    real = plugin.score

    def broken(*args: Any) -> Any:
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(plugin, "score", broken)
    sim.create(pod("p", cpu="100m"))
    ev = sim.wait_for(lambda: [e for e in events_for(sim, "p") if e["reason"] == "FailedScheduling"])
    assert ev[0]["type"] == "Warning" and "ZeroDivisionError: planted" in ev[0]["message"]
    monkeypatch.setattr(plugin, "score", real)
    assert bound_node(sim, "p", timeout=15) in ("fast", "mid", "slow")
