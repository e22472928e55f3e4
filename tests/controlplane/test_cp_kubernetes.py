"""volume-churn and pod-startup against the Kubernetes emulator with known injected latencies:
measured per-phase percentiles match the injected distributions; the harness watched (O(1)
requests per volume); `observe: poll` shows its extra load in the emulator's /metrics."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.controlplane.conftest import (
    NODE,
    anchor,
    assert_injected,
    cluster,
    leftovers,
    lognormal,
    ours,
    spec,
)


def test_volume_phases_match_injected_latency(kubesim_process: Any, run_cp: Any) -> None:
    sim = kubesim_process(cluster(provision=lognormal(0.3, 0.3), delete=lognormal(0.2, 0.3)))
    tl = run_cp(spec("volume-churn", count=150, concurrency=10), kube=sim)
    lines = [json.loads(line) for line in tl.jsonl().splitlines()]
    assert lines[0]["kind"] == "header" and lines[0]["backend"] == "kubernetes" and lines[0]["simulated"] is True
    assert lines[-1]["kind"] == "summary" and lines[-1]["errors"] == 0 and lines[-1]["left_behind"] == 0
    objects = lines[1:-1]
    assert len(objects) == 150
    for o in objects:  # every phase of the contract, in causal order
        t = o["t"]  # (the create's answer and the watch events reach different threads: no order among them)
        assert t["request_sent"] <= min(t["api_accepted"], t["pv_created"], t["bound"])
        assert t["bound"] <= t["delete_requested"] <= t["gone"] and t["delete_requested"] <= t["pv_gone"]
        assert o["server"]["created"].endswith("Z")
    # the anchor: the create and delete round trips and delete -> claim DELETED
    overhead = anchor(tl, ("request_sent", "api_accepted"), ("delete_requested", "delete_accepted"),
                      ("delete_requested", "gone"))
    # provisioned (the emulator's timer starts when it took the create: create sent -> PV ADDED) and the PV's
    # deletion (when it took the delete), each with its injected median
    assert_injected(tl, "request_sent", "api_accepted", "pv_created", 0.3, overhead)
    assert_injected(tl, "delete_requested", "delete_accepted", "pv_gone", 0.2, overhead)
    # it watched: one create and one delete per volume, a constant number of list/watch requests, no GETs
    req = lines[-1]["requests"]
    assert req["create"] == 150 and req["delete"] == 150 and req["get"] == 0  # the namespace's: set-up
    assert req["list"] + req["watch"] <= 6
    assert sum(req.values()) / 150 < 2.1
    assert leftovers(sim.kubeconfig) == []


def test_consumer_pods_run_then_everything_goes(kubesim_factory: Any, run_cp: Any) -> None:
    sim = kubesim_factory(cluster(provision=0.02, delete=0.01), kubelet="simulated")
    tl = run_cp(spec("volume-churn", count=20, concurrency=10, consumer=True), kube=sim)
    # (bound and consumer_running come from two watch streams: no order between them is guaranteed)
    assert all(r.t["api_accepted"] <= r.t["consumer_running"] < r.t["delete_requested"] for r in tl.objects.values())
    assert not ours(sim, "pods") and not ours(sim, "persistentvolumeclaims") and not ours(sim, "persistentvolumes")


def _get_delta(tl: Any, resource: str) -> float:
    before, after = tl.apiserver["before"], tl.apiserver["after"]
    keys = {k for k in (*before, *after) if k.split(" ")[:2] == ["GET", resource]}
    return sum(after.get(k, 0) - before.get(k, 0) for k in keys)


def test_polling_loads_the_api_server_and_watching_does_not(kubesim_factory: Any, run_cp: Any) -> None:
    sim = kubesim_factory(cluster(provision=0.2, delete=0.05), kubelet="none")
    watched = run_cp(spec("volume-churn", count=40, concurrency=40, rep=1), kube=sim)
    polled = run_cp(spec("volume-churn", count=40, concurrency=40, observe="poll", poll_interval_s=0.05, rep=2),
                    kube=sim)
    if watched.apiserver is None:
        pytest.skip("this emulator build does not serve /metrics")
    assert watched.requests["get"] == 0 and _get_delta(watched, "persistentvolumeclaims") == 0
    assert polled.requests["get"] > 2 * 40  # several GETs per volume: the seed's method
    assert _get_delta(polled, "persistentvolumeclaims") >= polled.requests["get"] / 2
    assert all("bound" in r.t and "pv_gone" in r.t for r in polled.objects.values())


class _Lognormal:
    """A start delay drawn per pod. TEST INJECTION: the emulator's kubelet reads its start delay with
    float(), so this object hands it a fresh lognormal sample each time (the kubesim API has no
    per-pod distribution knob)."""

    def __init__(self, median: float, sigma: float, seed: int = 3) -> None:
        import math
        import random

        self.rng, self.mu, self.sigma = random.Random(seed), math.log(median), sigma

    def __float__(self) -> float:
        return self.rng.lognormvariate(self.mu, self.sigma)


def test_pod_startup_phases_match_injected_start_delay(kubesim_factory: Any, run_cp: Any) -> None:
    sim = kubesim_factory(cluster(), kubelet="simulated")
    sim.emulator.kubelet.start_delay = _Lognormal(0.12, 0.3)
    tl = run_cp(spec("pod-startup", count=100, concurrency=5), kube=sim)
    assert tl.errors() == 0 and tl.left_behind == 0
    for r in tl.objects.values():
        t = r.t
        assert t["request_sent"] <= t["scheduled"] <= t["started"] <= t["ready"] <= t["delete_requested"] <= t["gone"]
        assert r.server["node"] == NODE  # pinned to the run's node
    # the kubelet's start delay begins when the emulator's scheduler binds the pod, after the create came
    # in (request_sent is the earliest it can have begun) and before the pod's PodScheduled watch event
    # (scheduled: the API's answer that it has begun). The anchor, no latency injected: the create round
    # trip, create -> PodScheduled event and delete -> DELETED (the simulated kubelet stops a pod at once)
    overhead = anchor(tl, ("request_sent", "api_accepted"), ("request_sent", "scheduled"), ("delete_requested", "gone"))
    assert_injected(tl, "request_sent", "scheduled", "started", 0.12, overhead)
    assert tl.requests["create"] == 100 and tl.requests["get"] == 0  # the namespace's create is set-up
    assert ours(sim, "pods") == []


def test_a_create_whose_answer_was_lost_leaves_no_claim(kubesim_factory: Any, run_cp: Any,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit's proxy answered 500 after the API server had stored the 3rd claim (the retry then got 409):
    the claim stayed Bound, uncounted, left_behind 0. The lost answer is simulated around the real client:
    the emulator stores the claim, then the runner is told 500."""
    from kubernetes.client.exceptions import ApiException
    from podtax_runner.controlplane.kubeapi import Kube

    real, seen = Kube.call, []

    def lossy(self: Any, verb: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        out = real(self, verb, fn, *args, **kwargs)
        if getattr(fn, "__name__", "") == "create_namespaced_persistent_volume_claim":
            seen.append(1)
            if len(seen) == 3:
                raise ApiException(status=500, reason="Internal Server Error")
        return out

    monkeypatch.setattr(Kube, "call", lossy)
    sim = kubesim_factory(cluster(provision=0.01, delete=0.01), kubelet="none")
    tl = run_cp(spec("volume-churn", count=5, concurrency=1), kube=sim)
    assert tl.errors() == 1 and tl.left_behind == 0
    assert ours(sim, "persistentvolumeclaims") == [] and ours(sim, "persistentvolumes") == []


@pytest.mark.parametrize("storage_class,says", [
    ("nowhere", "storage class nowhere does not exist (classes: keep, late, sim-fast)"),
    ("late", "binds a claim only once a pod uses it (WaitForFirstConsumer): set consumer: true"),
    ("keep", "keeps its volumes (reclaimPolicy Retain)"),
])
def test_a_storage_class_the_run_would_only_time_out_on_is_refused_at_once(kubesim_factory: Any, run_cp: Any,
                                                                            storage_class: str, says: str) -> None:
    """An audit: each of these ended in "the run did not finish within ..." after the whole timeout (900 s in
    examples/campaigns/volumes.yaml), and Retain left every PV Released."""
    import time

    from podtax_runner.controlplane.common import Aborted

    doc = cluster()
    doc["storageClasses"] = [*doc["storageClasses"],
                             {**CLASS_BASE, "metadata": {"name": "late"}, "volumeBindingMode": "WaitForFirstConsumer"},
                             {**CLASS_BASE, "metadata": {"name": "keep"}, "reclaimPolicy": "Retain"}]
    sim = kubesim_factory(doc, kubelet="none")
    started = time.monotonic()
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", count=3, storage_class=storage_class, timeout=30), kube=sim)
    assert info.value.reason == "bad-storage-class" and says in info.value.detail
    assert time.monotonic() - started < 10 and ours(sim, "persistentvolumeclaims") == []


CLASS_BASE = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "provisioner": "sim.csi.podtax.io",
              "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}
