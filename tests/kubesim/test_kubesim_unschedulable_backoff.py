"""kubesim's default-scheduler backs off per scheduling attempt, as kube-scheduler 1.30 (the version kubesim says it
is) does: calculateBackoffDuration of pInfo.Attempts, Unschedulable attempts counted with refused bindings, from the
failed attempt's end. Before, only refused bindings counted: a pod created beside its Immediate claim ('pod has unbound
immediate PersistentVolumeClaims') was bound the moment the claim was, where kube-scheduler moves it to its backoff
queue until a backoff after that attempt; and a refused binding after an Unschedulable attempt waited 1 s, not 2.
The scheduler's initial backoff is set to 30 s here (retry_seconds; 1 s by default), so that the claim, provisioned in
milliseconds, is bound well inside it on a loaded host. Real kubernetes client."""

from __future__ import annotations

import asyncio

from kubernetes import client
from podtax_kubesim import resources as R
from podtax_kubesim.testing import Sim

NS = "default"
FIRST_S = 30.0  # the scheduler's initial backoff in these tests
CLASS = {"metadata": {"name": "fast", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
         "provisioner": "sim.csi.podtax.io", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}
UNBOUND = "0/1 nodes are available: 1 pod has unbound immediate PersistentVolumeClaims."


def _pod(name: str, claim: str | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "i"}]}
    if claim:
        spec["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]
    return {"metadata": {"name": name}, "spec": spec}


def _scheduled_said(core: client.CoreV1Api, name: str) -> str | None:
    pod = core.read_namespaced_pod(name, NS)
    return next((c.message for c in pod.status.conditions or [] if c.type == "PodScheduled"), None)


def _slow_start(sim: Sim) -> None:
    sim.call(lambda: setattr(sim.emulator.scheduler, "retry_seconds", FIRST_S))


def test_a_pod_unschedulable_for_its_immediate_claim_waits_out_its_backoff_once_the_claim_binds(
        kubesim_factory) -> None:  # type: ignore[no-untyped-def]
    sim: Sim = kubesim_factory({"nodes": [{"name": "n1"}], "storageClasses": [CLASS],
                                "provisioner": {"provisionLatency": 0.2, "deleteLatency": 0}})
    _slow_start(sim)
    scheduler, key = sim.emulator.scheduler, (NS, "p")
    core = client.CoreV1Api(sim.api_client())
    core.create_namespaced_persistent_volume_claim(NS, {"metadata": {"name": "c"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    core.create_namespaced_pod(NS, _pod("p", "c"))
    assert sim.wait_for(lambda: _scheduled_said(core, "p")) == UNBOUND  # its first attempt
    sim.wait_for(lambda: core.read_namespaced_persistent_volume_claim("c", NS).status.phase == "Bound", timeout=30)

    def state() -> tuple[bool, str | None, bool]:
        """Once the claim is Bound: the pod not bound, waiting out its first backoff (at most FIRST_S from now)."""
        timer = scheduler.backing_off.get(key)
        due = timer.when() - asyncio.get_running_loop().time() if timer else -1.0
        pod = sim.emulator.store.get(R.PODS, NS, "p")
        return timer is not None, pod["spec"].get("nodeName"), 0 < due <= FIRST_S

    assert sim.call(state) == (True, None, True)  # before: (False, 'n1', False), bound as the claim was


def test_a_binding_refused_after_an_unschedulable_attempt_backs_off_for_its_second_attempt(
        kubesim_factory) -> None:  # type: ignore[no-untyped-def]
    sim: Sim = kubesim_factory({"nodes": [{"name": "n1", "unschedulable": True}],
                                "faults": {"failCreates": [{"match": "bindings/p", "status": 500, "times": 0}]}})
    scheduler, key = sim.emulator.scheduler, (NS, "p")
    core = client.CoreV1Api(sim.api_client())
    core.create_namespaced_pod(NS, _pod("p"))
    sim.wait_for(lambda: "were unschedulable" in (_scheduled_said(core, "p") or ""))
    core.patch_node("n1", {"spec": {"unschedulable": False}})
    sim.wait_for(lambda: sim.call(lambda: scheduler.delays.get(key)), timeout=30)
    # attempt 1 Unschedulable, attempt 2 refused: 2 s (kube-scheduler 1.30), not the 1 s of a first refusal
    assert sim.call(lambda: scheduler.delays[key][0]) == 2.0
