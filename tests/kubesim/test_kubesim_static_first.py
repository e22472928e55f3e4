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


def cls(mode: str, name: str = "fast") -> dict:
    return {"metadata": {"name": name}, "provisioner": "sim.csi.podtax.io", "reclaimPolicy": "Delete",
            "volumeBindingMode": mode}


def by_hand(name: str, size: str = "2Gi", **spec: object) -> dict:
    return {"metadata": {"name": name}, "spec": {
        "capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
        "persistentVolumeReclaimPolicy": "Retain", "local": {"path": f"/mnt/{name}"}, **spec}}


def claim(name: str, of: str = "fast") -> dict:
    return {"metadata": {"name": name}, "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": of,
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
    # the PV controller wrote its claimRef: bound-by-controller, never on a PV provisioned for its claim (below)
    assert pv["metadata"]["annotations"].get("pv.kubernetes.io/bound-by-controller") == "yes", pv["metadata"]
    # none was provisioned; a claim no PV matches is
    core.create_namespaced_persistent_volume_claim(NS, claim("b"))
    core.create_namespaced_persistent_volume_claim(NS, claim("c"))
    names = {bound(sim, n)["spec"]["volumeName"] for n in ("b", "c")}
    assert "big" in names and any(n.startswith("pvc-") for n in names), names
    assert sorted(pv["metadata"]["name"] for pv in sim.objects("persistentvolumes")
                  if not pv["metadata"]["name"].startswith("pvc-")) == ["big", "fits", "small"]
    made = [pv for pv in sim.objects("persistentvolumes") if pv["metadata"]["name"].startswith("pvc-")]
    assert len(made) == 1 and "pv.kubernetes.io/bound-by-controller" not in made[0]["metadata"]["annotations"], made


def test_a_waitforfirstconsumer_claim_binds_a_pv_made_by_hand_on_its_pods_node(
        kubesim_factory: Callable[..., Sim]) -> None:
    sim = kubesim_factory({"nodes": [{"name": "n1"}, {"name": "n2"}], "provisioner": ZERO,
                           "storageClasses": [cls("WaitForFirstConsumer"), cls("Immediate", "now")]}, kubelet="none")
    core = client.CoreV1Api(sim.api_client())
    core.create_persistent_volume(by_hand("elsewhere", nodeAffinity=ON_N2))  # the pod goes to n1 (the first node)
    core.create_persistent_volume(by_hand("here", "4Gi"))
    core.create_namespaced_persistent_volume_claim(NS, claim("w"))
    # no pod yet: no binding. Asked once a claim made after it is bound (the controller takes claims in turn): asked
    # as soon as it appeared, it was Pending however kubesim binds (review r6, L5)
    core.create_namespaced_persistent_volume_claim(NS, claim("later", of="now"))
    bound(sim, "later")
    assert sim.get("persistentvolumeclaims", "w", NS)["status"]["phase"] == "Pending"
    core.create_namespaced_pod(NS, {"metadata": {"name": "user"}, "spec": {
        "containers": [{"name": "c", "image": "i"}],
        "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "w"}}]}})
    assert bound(sim, "w")["spec"]["volumeName"] == "here"
    assert not [pv for pv in sim.objects("persistentvolumes") if pv["metadata"]["name"].startswith("pvc-")
                and pv["spec"]["storageClassName"] == "fast"]  # none provisioned for w ("later"'s is of "now")


def test_a_waitforfirstconsumer_claim_of_a_no_provisioner_class_waits_for_its_pod(
        kubesim_factory: Callable[..., Sim]) -> None:
    """It was bound at once, without a node (review r6, L2): the PV controller leaves every WaitForFirstConsumer claim
    to the scheduler's volume binder, whatever the provisioner (local volumes are such a class)."""
    local = {**cls("WaitForFirstConsumer", "local"), "provisioner": "kubernetes.io/no-provisioner"}
    sim = kubesim_factory({"nodes": [{"name": "n1"}, {"name": "n2"}], "provisioner": ZERO,
                           "storageClasses": [local, cls("Immediate", "now")]}, kubelet="none")
    core = client.CoreV1Api(sim.api_client())
    core.create_persistent_volume({**by_hand("there"), "spec": {**by_hand("there")["spec"], "storageClassName": "local",
                                                                "nodeAffinity": ON_N2}})
    core.create_persistent_volume({**by_hand("here"), "spec": {**by_hand("here")["spec"], "storageClassName": "local"}})
    core.create_namespaced_persistent_volume_claim(NS, claim("w", of="local"))
    core.create_namespaced_persistent_volume_claim(NS, claim("later", of="now"))
    bound(sim, "later")
    assert sim.get("persistentvolumeclaims", "w", NS)["status"]["phase"] == "Pending"  # no pod yet
    core.create_namespaced_pod(NS, {"metadata": {"name": "user"}, "spec": {
        "containers": [{"name": "c", "image": "i"}],
        "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "w"}}]}})
    assert bound(sim, "w")["spec"]["volumeName"] == "here"  # on its pod's node (n1, the first)


def test_a_claim_binds_the_pv_pre_bound_to_it_and_one_its_selector_matches(kubesim_factory: Callable[..., Sim]) -> None:
    """A PV whose claimRef names a claim is bound to it before any other match, and a claim's label selector limits
    its matches (pv_controller.go findBestMatchForClaim); both were ignored (review r6, L2). A pre-bound PV is not
    marked bound-by-controller (GetBindVolumeToClaim: it was bound to the claim already)."""
    sim = kubesim_factory({"nodes": [{"name": "n1"}], "storageClasses": [cls("Immediate")], "provisioner": ZERO})
    core = client.CoreV1Api(sim.api_client())
    core.create_persistent_volume(by_hand("fits"))
    core.create_persistent_volume(by_hand("for-p", "8Gi", claimRef={"namespace": NS, "name": "p"}))
    labelled = by_hand("gold", "4Gi")
    labelled["metadata"]["labels"] = {"tier": "gold"}
    core.create_persistent_volume(labelled)
    core.create_namespaced_persistent_volume_claim(NS, claim("p"))
    picky = claim("s")
    picky["spec"]["selector"] = {"matchLabels": {"tier": "gold"}}
    core.create_namespaced_persistent_volume_claim(NS, picky)
    assert bound(sim, "p")["spec"]["volumeName"] == "for-p"
    assert bound(sim, "s")["spec"]["volumeName"] == "gold"
    pv = sim.get("persistentvolumes", "for-p")
    assert pv["spec"]["claimRef"]["uid"] == sim.get("persistentvolumeclaims", "p", NS)["metadata"]["uid"]
    assert "pv.kubernetes.io/bound-by-controller" not in (pv["metadata"].get("annotations") or {}), pv["metadata"]
    assert sim.get("persistentvolumes", "fits")["status"]["phase"] == "Available"


def test_a_waitforfirstconsumer_claim_binds_the_pv_pre_bound_to_it_without_a_pod(
        kubesim_factory: Callable[..., Sim]) -> None:
    """The PV controller's FindMatchingVolume returns a PV whose claimRef names the claim even under delayBinding
    (WaitForFirstConsumer), before it skips the other PVs for want of a node: such a claim binds at once, no pod using
    it. kubesim waited for a pod (review r9 L5); an unnamed PV that fits is still left for the scheduler."""
    sim = kubesim_factory({"nodes": [{"name": "n1"}], "storageClasses": [cls("WaitForFirstConsumer"),
                                                                         cls("Immediate", "now")],
                           "provisioner": ZERO}, kubelet="none")
    core = client.CoreV1Api(sim.api_client())
    core.create_persistent_volume(by_hand("fits"))
    core.create_persistent_volume(by_hand("for-p", "8Gi", claimRef={"namespace": NS, "name": "p"}))
    core.create_namespaced_persistent_volume_claim(NS, claim("p"))
    core.create_namespaced_persistent_volume_claim(NS, claim("w"))
    core.create_namespaced_persistent_volume_claim(NS, claim("later", of="now"))
    assert bound(sim, "p")["spec"]["volumeName"] == "for-p"
    bound(sim, "later")  # handled after w: w's event was dispatched, and it stays Pending
    assert sim.get("persistentvolumeclaims", "w", NS)["status"]["phase"] == "Pending"
    assert sim.get("persistentvolumes", "fits")["status"]["phase"] == "Available"
