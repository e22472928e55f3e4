"""A pod with spec.schedulingGates is not ready to be scheduled (Kueue and other admission controllers hold pods so):
kube-scheduler leaves it alone until the gates are removed, and the API server refuses its binding with a 409.
Before, the scheduler bound it at once, took that 409 for 'bound by someone else', logged so and counted a conflict.
Real scheduler, kubesim (which refuses the binding as the API server does), real nats-server."""

from __future__ import annotations

import logging
import time
from typing import Any

from kubernetes import client

from tests.scheduler.conftest import events_for, put_scores
from tests.scheduler.sched_objects import pod, score

NODE = {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}


def test_a_gated_pod_waits_for_its_gates_then_is_placed(sim_factory: Any, scheduler_factory: Any, nats_url: str,
                                                        caplog: Any) -> None:
    sim = sim_factory({"nodes": [{**NODE, "name": n} for n in ("slow", "fast")]})
    put_scores(nats_url, [score("slow", 100, 20), score("fast", 300, 20)])
    with caplog.at_level(logging.INFO, logger="podtax.scheduler"):
        bg = scheduler_factory(sim.kubeconfig)
        gated = pod("g", cpu="100m")
        gated["spec"]["schedulingGates"] = [{"name": "example.com/admission"}]
        sim.create(gated)
        sim.create(pod("plain", cpu="100m"))  # one taken after it: the gated one had its turn by then
        sim.wait_for(lambda: (sim.get("pods", "plain", "default") or {})["spec"].get("nodeName"))
        time.sleep(0.5)
        assert not (sim.get("pods", "g", "default") or {})["spec"].get("nodeName")
        assert events_for(sim, "g") == []
        client.CoreV1Api(sim.api_client()).patch_namespaced_pod("g", "default", {"spec": {"schedulingGates": None}})
        node = sim.wait_for(lambda: (sim.get("pods", "g", "default") or {})["spec"].get("nodeName"))
    assert node == "fast"
    said = sim.wait_for(lambda: events_for(sim, "g"))  # written by the event recorder, after the bind
    assert [e["reason"] for e in said] == ["Scheduled"]
    assert bg.scheduler.metrics.conflicts._value.get() == 0
    assert not [r for r in caplog.records if "default/g" in r.getMessage()], caplog.text
