"""The PodScheduled condition after a failed attempt, as kube-scheduler sets it (handleSchedulingFailure): False with
reason SchedulerError when the attempt failed (a bind the API refused), Unschedulable when no node fits; and no
patch when the pod already says so, nor a new attempt for the scheduler's own status update (kube-scheduler's
updatePod and its queue skip both). Real scheduler, kubesim, real nats-server."""

from __future__ import annotations

import logging
import time
from typing import Any

from kubernetes import client

from tests.scheduler.conftest import events_for
from tests.scheduler.sched_objects import pod

NODE = {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}


def status_patches(sim: Any, name: str = "") -> float:
    """PATCHes of pods/status the emulator answered 200 (kubesim's apiserver_request_total)."""
    total = 0.0
    for metric in sim.emulator.server.metrics.requests.collect():
        for s in metric.samples:
            if s.name.endswith("_total") and s.labels["verb"] == "PATCH" and s.labels["resource"] == "pods" \
                    and s.labels["subresource"] == "status" and s.labels["code"] == "200":
                total += s.value
    return total


def condition(sim: Any, name: str) -> dict[str, Any] | None:
    conds = (sim.get("pods", name, "default") or {}).get("status", {}).get("conditions") or []
    return next((c for c in conds if c["type"] == "PodScheduled"), None)


def test_a_failed_bind_sets_pod_scheduled_false_scheduler_error_once(sim_factory: Any,
                                                                      scheduler_factory: Any) -> None:
    # before: the condition was left unset (kubectl showed no reason) while every bind failed
    sim = sim_factory({"nodes": [{**NODE, "name": "a"}],
                       "faults": {"failCreates": [{"match": "bindings/", "status": 500, "times": 0}]}})
    bg = scheduler_factory(sim.kubeconfig)
    sim.create(pod("p", cpu="100m"))
    cond = sim.wait_for(lambda: (c := condition(sim, "p")) and c["status"] == "False" and c)
    assert cond["reason"] == "SchedulerError", cond
    assert cond["message"].startswith("binding to a failed: HTTP 500 Internal Server Error: "), cond
    sim.wait_for(lambda: [e for e in events_for(sim, "p") if e.get("count", 1) >= 3], timeout=20)  # 3 attempts
    assert status_patches(sim) == 1  # the same failure again: the pod says so already, no patch
    assert bg.scheduler.metrics.attempts.labels("error")._value.get() >= 3


def test_an_unschedulable_pod_is_not_retried_for_its_own_condition(sim_factory: Any,
                                                                    scheduler_factory: Any) -> None:
    # before: the condition's patch came back through the informer as a pod update, which made the unschedulable
    # pod active again: it was decided and patched again after every backoff (1, 2, 4 ... 10 s) with nothing changed
    sim = sim_factory({"nodes": [{**NODE, "name": "a"}]})
    bg = scheduler_factory(sim.kubeconfig)
    sim.create(pod("big", cpu="64"))
    cond = sim.wait_for(lambda: (c := condition(sim, "big")) and c)
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert cond["message"] == "0/1 nodes are available: 1 Insufficient cpu."
    time.sleep(2.5)  # before: tried again at 1 s and 3 s
    assert bg.scheduler.metrics.attempts.labels("unschedulable")._value.get() == 1
    assert status_patches(sim) == 1
    sim.set_node_taints("a", [{"key": "soft", "value": "x", "effect": "PreferNoSchedule"}])  # a node changed
    sim.wait_for(lambda: bg.scheduler.metrics.attempts.labels("unschedulable")._value.get() == 2)
    sim.wait_for(lambda: [e for e in events_for(sim, "big") if e.get("count", 1) >= 2])  # said again
    assert status_patches(sim) == 1  # with the same words: no patch


def test_a_pod_deleted_before_its_condition_is_set_is_not_a_warning(sim_factory: Any, scheduler_factory: Any,
                                                                    caplog: Any) -> None:
    # before: 'FailedScheduling report for default/big: HTTP 404 Not Found: pods "big" not found' and an error
    # counted, for a pod its owner deleted while it was Pending (a Job's pod, a scaled-down Deployment's)
    sim = sim_factory({"nodes": [{**NODE, "name": "a"}]})
    bg = scheduler_factory(sim.kubeconfig)
    kube, real = bg.scheduler.kube, bg.scheduler.kube.mark_not_scheduled
    core = client.CoreV1Api(sim.api_client())

    def deleted(namespace: str, name: str, reason: str, message: str) -> None:
        core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
        real(namespace, name, reason, message)  # a real 404

    kube.mark_not_scheduled = deleted
    with caplog.at_level(logging.INFO, logger="podtax.scheduler"):
        sim.create(pod("big", cpu="64"))
        sim.wait_for(lambda: bg.scheduler.metrics.attempts.labels("unschedulable")._value.get() == 1)
        sim.wait_for(lambda: sim.get("pods", "big", "default") is None)
        sim.wait_for(lambda: sum(bg.scheduler.queue.counts().values()) == 0)
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert bg.scheduler.metrics.errors.labels("event")._value.get() == 0
