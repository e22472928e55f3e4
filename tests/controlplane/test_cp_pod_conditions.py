"""pod-startup times each of the conditions kube-burner's podLatency reports (PodScheduled, Initialized,
PodReadyToStartContainers, ContainersReady, Ready) when the watch shows it: the real runner against kubesim, whose
kubelet sets them in a kubelet's order, each in an update of its own (Initialized when it admits the pod, before the
start delay; PodReadyToStartContainers in the update after, before it too)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from podtax.parsers import timeline as parser
from podtax_kubesim import resources as R
from podtax_runner.controlplane import dispatch

from tests.controlplane.conftest import cluster, spec

ORDER = ("PodScheduled", "Initialized", "PodReadyToStartContainers", "ContainersReady", "Ready")


def test_every_condition_is_timed_in_a_kubelets_order(kubesim_factory: Any, run_cp: Any) -> None:
    sim = kubesim_factory(cluster(), kubelet="simulated")
    sim.emulator.kubelet.start_delay = 0.12
    seen: dict[str, list[tuple[str, ...]]] = {}  # pod -> the True conditions of each of its events, in order

    def record(ev: Any) -> None:
        name = ev.obj["metadata"]["name"]
        if name.startswith("podtax-ps-") and ev.type != "DELETED":
            seen.setdefault(name, []).append(tuple(c["type"] for c in ev.obj["status"].get("conditions") or []
                                                   if c["status"] == "True" and c["type"] in ORDER))

    sim.emulator.store.listen(R.PODS, record)
    tl = run_cp(spec("pod-startup", count=30, concurrency=5), kube=sim)
    assert tl.errors() == 0 and len(seen) == 30
    for events in seen.values():  # each condition first appears in an event of its own, after those before it
        firsts = [next(i for i, conds in enumerate(events) if c in conds) for c in ORDER]
        assert firsts == sorted(set(firsts)), events
    for r in tl.objects.values():
        t = r.t
        assert t["request_sent"] <= t["scheduled"] <= t["initialized"] <= t["ready_to_start_containers"] \
            <= t["started"] <= t["containers_ready"] <= t["ready"] <= t["delete_requested"], t
        assert r.server["ready"].endswith("Z")  # Ready's lastTransitionTime, kept; not a latency
        # ContainersReady comes after the kubelet's start delay (its timer starts once the create came in)
        assert t["containers_ready"] - t["request_sent"] >= 0.12, t
    # each pod's line within what the runner allows an object when it refuses a count whose log may not fit NATS
    # (JSON inside JSON: its quotes escaped), less the 253 it allows a pod-startup line for the node's name (here 6
    # characters): the two conditions' lastTransitionTime took it to 578 bytes
    lines = tl.jsonl().splitlines()[1:-1]
    without_node = dispatch.object_bytes("pod-startup") - dispatch.NODE_NAME_BYTES
    assert max(len(json.dumps(line)) - 2 for line in lines) <= without_node, max(len(json.dumps(line)) - 2
                                                                                 for line in lines)
    metrics = parser.parse(tl.jsonl(), "pod-startup").values()
    for phase in ("scheduled", "initialized", "ready_to_start_containers", "started", "containers_ready", "ready"):
        for suffix in ("p50_ms", "p95_ms", "p99_ms", "max_ms", "min_ms", "avg_ms"):
            assert metrics[f"{phase}_{suffix}"] > 0
        latencies = [r.t[phase] - r.t["request_sent"] for r in tl.objects.values()]  # no pod given up
        assert metrics[f"{phase}_min_ms"] == min(latencies) * 1000, phase
        assert metrics[f"{phase}_avg_ms"] == pytest.approx(sum(latencies) / len(latencies) * 1000, rel=1e-12), phase
    assert metrics["initialized_p50_ms"] < metrics["containers_ready_p50_ms"] <= metrics["ready_p50_ms"]
