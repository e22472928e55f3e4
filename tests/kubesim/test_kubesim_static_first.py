"""A claim binds a matching Available PV before anything is provisioned, whatever its class's provisioner, as the PV
controller does (pv_controller.go syncUnboundClaim: findBestMatchForClaim, provisionClaim only when none matched) and,
for a WaitForFirstConsumer class, kube-scheduler's volume binder once a pod using it has a node (it matches on that
node before it provisions). kubesim provisioned every claim of a dynamic class (review r2): a podtax claim binding a PV
made by hand, as on a cluster, was never seen here."""

from __future__ import annotations

from collections.abc import Callable

from kubernetes import client
from podtax_kubesim.testing import Sim

NS = "default"
ZERO = {"provisionLatency": 0, "deleteLatency": 0}
ON_N2 = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n2"]}]}]}}


def cls(mode: str) -> dict:
    return {"metadata": {"name": "fast"}, "provisioner": "sim.csi.podtax.io", "reclaimPolicy": "Delete",
            "volumeBindingMode": mode}


def by_hand(name: str, size: str = "2Gi", **spec: object) -> dict:
    return {"metadata": {"name": name}, "spec": {
        "capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
        "persistentVolumeReclaimPolicy": "Retain", "local": {"path": f"/mnt/{name}"}, **spec}}


def claim(name: str) -> dict:
    return {"metadata": {"name": name}, "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                                                 "resources": {"requests": {"storage": "1Gi"}}}}


def bound(sim: Sim, name: str) -> dict:
    return sim.wait_for(lambda: (c := sim.get("persistentvolumeclaims", name, NS)) and c["status"].get("phase")
                        == "Bound" and c)


def test_an_immediate_claim_of_a_dynamic_class_binds_a_pv_made_by_hand(kubesim_factory: Callable[..., Sim]) -> None:
    sim = kubesim_factory({"nodes": [{"name": "n1"}], "storageClasses": [cls("Immediate")], "provisioner": ZERO})
    core = client.CoreV1Api(sim.api_client())
    core.create_persistent_volume(by_hand("small", "512Mi"))  # too small: not a match
    core.create_persistent_volume(by_hand("big", "8Gi"))
    core.create_persistent_volume(by_hand("fits"))  # the smallest that fits
    core.create_namespaced_persistent_volume_claim(NS, claim("a"))
    assert bound(sim, "a")["spec"]["volumeName"] == "fits"
    pv = sim.get("persistentvolumes", "fits")
    assert pv["spec"]["claimRef"]["name"] == "a" and pv["status"]["phase"] == "Bound"
    assert "pv.kubernetes.io/provisioned-by" not in (pv["metadata"].get("annotations") or {})
    # none was provisioned; a claim no PV matches is
    core.create_namespaced_persistent_volume_claim(NS, claim("b"))
    core.create_namespaced_persistent_volume_claim(NS, claim("c"))
    names = {bound(sim, n)["spec"]["volumeName"] for n in ("b", "c")}
    assert "big" in names and any(n.startswith("pvc-") for n in names), names
    assert sorted(pv["metadata"]["name"] for pv in sim.objects("persistentvolumes")
                  if not pv["metadata"]["name"].startswith("pvc-")) == ["big", "fits", "small"]
    assert sum(pv["metadata"]["name"].startswith("pvc-") for pv in sim.objects("persistentvolumes")) == 1


def test_a_waitforfirstconsumer_claim_binds_a_pv_made_by_hand_on_its_pods_node(
        kubesim_factory: Callable[..., Sim]) -> None:
    sim = kubesim_factory({"nodes": [{"name": "n1"}, {"name": "n2"}], "storageClasses": [cls("WaitForFirstConsumer")],
                           "provisioner": ZERO}, kubelet="none")
    core = client.CoreV1Api(sim.api_client())
    core.create_persistent_volume(by_hand("elsewhere", nodeAffinity=ON_N2))  # the pod goes to n1 (the first node)
    core.create_persistent_volume(by_hand("here", "4Gi"))
    core.create_namespaced_persistent_volume_claim(NS, claim("w"))
    sim.wait_for(lambda: sim.get("persistentvolumeclaims", "w", NS) is not None)
    assert sim.get("persistentvolumeclaims", "w", NS)["status"]["phase"] == "Pending"  # no pod yet: no binding
    core.create_namespaced_pod(NS, {"metadata": {"name": "user"}, "spec": {
        "containers": [{"name": "c", "image": "i"}],
        "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "w"}}]}})
    assert bound(sim, "w")["spec"]["volumeName"] == "here"
    assert not [pv for pv in sim.objects("persistentvolumes") if pv["metadata"]["name"].startswith("pvc-")]
