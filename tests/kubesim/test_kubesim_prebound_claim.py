"""A claim its user pre-bound to a PV by name (spec.volumeName) and a claim with a label selector, as the PV
controller and the external-provisioner treat them (pv_controller.go syncUnboundClaim, its branch for a claim with
spec.volumeName, checkVolumeSatisfyClaim, bindClaimToVolume; external-provisioner's Provision refuses a claim with a
selector: 'claim Selector is not supported'). kubesim left a pre-bound claim Pending for ever, even once its PV
existed, and provisioned a claim with a selector no PV matched. Through the real kubernetes client."""

from __future__ import annotations

import time
from collections.abc import Callable

from kubernetes import client
from podtax_kubesim.testing import Sim

NS = "default"
ZERO = {"provisionLatency": 0, "deleteLatency": 0}


def cls(mode: str, name: str) -> dict:
    return {"metadata": {"name": name}, "provisioner": "sim.csi.podtax.io", "reclaimPolicy": "Delete",
            "volumeBindingMode": mode}


def volume(name: str, size: str = "2Gi", of: str = "fast", labels: dict | None = None) -> dict:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {
        "capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "storageClassName": of,
        "persistentVolumeReclaimPolicy": "Retain", "local": {"path": f"/mnt/{name}"}}}


def claim(name: str, of: str = "fast", **spec: object) -> dict:
    return {"metadata": {"name": name}, "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": of,
                                                 "resources": {"requests": {"storage": "1Gi"}}, **spec}}


def sim_of(kubesim_factory: Callable[..., Sim], resync: float | None = None) -> tuple[Sim, client.CoreV1Api]:
    """`resync`: the PV controller's claim resync period (resyncSeconds), 15 s when None."""
    provisioner = ZERO if resync is None else {**ZERO, "resyncSeconds": resync}
    sim = kubesim_factory({"nodes": [{"name": "n1"}], "provisioner": provisioner, "storageClasses": [
        cls("Immediate", "fast"), cls("WaitForFirstConsumer", "later"), cls("Immediate", "other")]}, kubelet="none")
    return sim, client.CoreV1Api(sim.api_client())


def settled(sim: Sim, core: client.CoreV1Api, tag: str) -> None:
    """The controller took the claims made before: a claim of a dynamic class made after them is Bound (claims are
    taken in turn), so a claim still Pending then was left Pending, not just not reached yet."""
    core.create_namespaced_persistent_volume_claim(NS, claim(f"marker-{tag}", of="other"))
    sim.wait_for(lambda: (c := sim.get("persistentvolumeclaims", f"marker-{tag}", NS)) and
                 c["status"].get("phase") == "Bound")


def phase(sim: Sim, kind: str, name: str) -> str | None:
    obj = sim.get(kind, name, NS if kind == "persistentvolumeclaims" else "")
    return obj["status"].get("phase") if obj else None


def events(core: client.CoreV1Api, name: str, reason: str) -> list[client.CoreV1Event]:
    selector = f"involvedObject.name={name},involvedObject.kind=PersistentVolumeClaim"
    return [e for e in core.list_namespaced_event(NS, field_selector=selector).items if e.reason == reason]


def test_a_pre_bound_claim_waits_for_its_pv_and_is_never_provisioned(kubesim_factory: Callable[..., Sim]) -> None:
    sim, core = sim_of(kubesim_factory)
    made = core.create_namespaced_persistent_volume_claim(NS, claim("named", volumeName="mine"))
    settled(sim, core, "1")
    assert sim.get("persistentvolumeclaims", "named", NS)["status"]["phase"] == "Pending"
    assert sim.get("persistentvolumes", f"pvc-{made.metadata.uid}") is None  # never provisioned
    core.create_persistent_volume(volume("other-pv"))  # not the one named: not bound
    core.create_persistent_volume(volume("mine"))
    got = sim.wait_for(lambda: (c := sim.get("persistentvolumeclaims", "named", NS)) and
                       c["status"].get("phase") == "Bound" and c)
    assert got["spec"]["volumeName"] == "mine"
    notes = got["metadata"].get("annotations") or {}
    # named by its user: bindClaimToVolume writes bind-completed only, not bound-by-controller
    assert notes.get("pv.kubernetes.io/bind-completed") == "yes" and "pv.kubernetes.io/bound-by-controller" not in \
        notes, notes
    pv = sim.get("persistentvolumes", "mine")
    assert pv["status"]["phase"] == "Bound" and pv["spec"]["claimRef"]["uid"] == made.metadata.uid
    # its claimRef was empty: the PV controller wrote it (bindVolumeToClaim)
    assert pv["metadata"]["annotations"].get("pv.kubernetes.io/bound-by-controller") == "yes"
    assert sim.get("persistentvolumes", "other-pv")["status"]["phase"] == "Available"
    assert [p["metadata"]["name"] for p in sim.objects("persistentvolumes")
            if p["metadata"]["name"].startswith("pvc-")] == [sim.get("persistentvolumeclaims", "marker-1", NS)[
                "spec"]["volumeName"]]


def test_a_pre_bound_waitforfirstconsumer_claim_binds_without_a_pod(kubesim_factory: Callable[..., Sim]) -> None:
    """The delay of WaitForFirstConsumer is only for a claim that names no PV (syncUnboundClaim)."""
    sim, core = sim_of(kubesim_factory)
    core.create_persistent_volume(volume("there", of="later"))
    core.create_namespaced_persistent_volume_claim(NS, claim("named", of="later", volumeName="there"))
    got = sim.wait_for(lambda: (c := sim.get("persistentvolumeclaims", "named", NS)) and
                       c["status"].get("phase") == "Bound" and c)
    assert got["spec"]["volumeName"] == "there"


def test_a_pre_bound_claim_whose_pv_does_not_fit_or_is_taken_stays_pending(
        kubesim_factory: Callable[..., Sim]) -> None:
    sim, core = sim_of(kubesim_factory)
    core.create_persistent_volume(volume("tiny", size="512Mi"))
    core.create_persistent_volume(volume("taken"))
    core.create_namespaced_persistent_volume_claim(NS, claim("first", volumeName="taken"))
    sim.wait_for(lambda: sim.get("persistentvolumeclaims", "first", NS)["status"].get("phase") == "Bound")
    core.create_namespaced_persistent_volume_claim(NS, claim("small", volumeName="tiny"))
    core.create_namespaced_persistent_volume_claim(NS, claim("second", volumeName="taken"))
    mismatch = sim.wait_for(lambda: events(core, "small", "VolumeMismatch"))
    assert [(e.type, e.message, e.source.component) for e in mismatch] == [
        ("Warning", 'Cannot bind to requested volume "tiny": requested PV is too small', "persistentvolume-controller")]
    failed = sim.wait_for(lambda: events(core, "second", "FailedBinding"))
    assert [(e.type, e.message) for e in failed] == [("Warning", 'volume "taken" already bound to a different claim.')]
    settled(sim, core, "2")
    for name in ("small", "second"):
        assert sim.get("persistentvolumeclaims", name, NS)["status"]["phase"] == "Pending"
    assert sim.get("persistentvolumes", "tiny")["status"]["phase"] == "Available"
    assert sim.get("persistentvolumes", "taken")["spec"]["claimRef"]["name"] == "first"


def test_a_claim_with_a_selector_is_not_provisioned(kubesim_factory: Callable[..., Sim]) -> None:
    """No PV matches its selector: the external-provisioner refuses it (ProvisioningFailed 'claim Selector is not
    supported', counted up on each retry), it stays Pending with no PV; a matching PV that comes binds it."""
    sim, core = sim_of(kubesim_factory)
    core.create_persistent_volume(volume("unlabelled"))
    made = core.create_namespaced_persistent_volume_claim(NS, claim("picky", selector={
        "matchLabels": {"tier": "gold"}}))
    deadline = time.monotonic() + 20
    while not (failed := events(core, "picky", "ProvisioningFailed")) or failed[0].count < 2:  # retried after 1 s
        assert time.monotonic() < deadline, failed
        time.sleep(0.05)
    assert [(e.type, e.message, e.source.component) for e in failed] == [
        ("Warning", "claim Selector is not supported", "sim.csi.podtax.io")]  # external-provisioner v6's words
    assert sim.get("persistentvolumeclaims", "picky", NS)["status"]["phase"] == "Pending"
    assert sim.get("persistentvolumes", f"pvc-{made.metadata.uid}") is None
    assert sim.get("persistentvolumes", "unlabelled")["status"]["phase"] == "Available"
    core.create_persistent_volume(volume("gold", labels={"tier": "gold"}))
    got = sim.wait_for(lambda: (c := sim.get("persistentvolumeclaims", "picky", NS)) and
                       c["status"].get("phase") == "Bound" and c)
    assert got["spec"]["volumeName"] == "gold"


def test_a_released_pv_whose_claim_ref_is_removed_is_available_at_once_and_bound(
        kubesim_factory: Callable[..., Sim]) -> None:
    """The Retain-PV reuse workflow (review r6 M2): a claim deleted leaves its PV Released; an admin removes the PV's
    claimRef; syncVolume makes it Available at once ("volume is unused") and the claim waiting for it binds it.
    kubesim left it Released with no claimRef and the claim Pending. The resync is an hour here: only the PV's
    change may bind the claim."""
    sim, core = sim_of(kubesim_factory, resync=3600)
    for pv in ("keep", "spare"):
        core.create_persistent_volume(volume(pv))
        core.create_namespaced_persistent_volume_claim(NS, claim(f"old-{pv}", volumeName=pv))
    for pv in ("keep", "spare"):
        sim.wait_for(lambda pv=pv: phase(sim, "persistentvolumeclaims", f"old-{pv}") == "Bound")
        core.delete_namespaced_persistent_volume_claim(f"old-{pv}", NS)
        sim.wait_for(lambda pv=pv: phase(sim, "persistentvolumes", pv) == "Released")
    made = core.create_namespaced_persistent_volume_claim(NS, claim("new", volumeName="keep"))
    sim.wait_for(lambda: events(core, "new", "FailedBinding"))  # the old claim's claimRef is still there
    assert phase(sim, "persistentvolumeclaims", "new") == "Pending"
    for pv in ("keep", "spare"):
        stored = sim.get("persistentvolumes", pv)
        core.replace_persistent_volume(pv, {**stored, "spec": {
            k: v for k, v in stored["spec"].items() if k != "claimRef"}})
    got = sim.wait_for(lambda: (c := sim.get("persistentvolumeclaims", "new", NS)) and
                       c["status"].get("phase") == "Bound" and c)
    assert got["spec"]["volumeName"] == "keep"
    keep = sim.get("persistentvolumes", "keep")
    assert keep["status"]["phase"] == "Bound" and keep["spec"]["claimRef"]["uid"] == made.metadata.uid
    spare = sim.wait_for(lambda: (p := sim.get("persistentvolumes", "spare")) and
                         p["status"]["phase"] == "Available" and p)  # no claim waits for it
    assert "claimRef" not in spare["spec"] and spare["status"]["lastPhaseTransitionTime"]


def test_a_pv_resized_in_place_binds_the_claim_waiting_for_it_at_the_resync(
        kubesim_factory: Callable[..., Sim]) -> None:
    """A PV too small for the claim naming it, made larger: nothing about it changes phase, the PV controller's
    periodic resync of the claims (--pvclaimbinder-sync-period, 15 s; 0.2 s here) binds it (review r6 M2: kubesim
    had no resync, the claim stayed Pending)."""
    sim, core = sim_of(kubesim_factory, resync=0.2)
    core.create_persistent_volume(volume("tiny", size="512Mi"))
    core.create_namespaced_persistent_volume_claim(NS, claim("small", volumeName="tiny"))
    sim.wait_for(lambda: events(core, "small", "VolumeMismatch"))
    core.patch_persistent_volume("tiny", {"spec": {"capacity": {"storage": "4Gi"}}})
    got = sim.wait_for(lambda: (c := sim.get("persistentvolumeclaims", "small", NS)) and
                       c["status"].get("phase") == "Bound" and c)
    assert got["spec"]["volumeName"] == "tiny" and got["status"]["capacity"] == {"storage": "4Gi"}
    assert phase(sim, "persistentvolumes", "tiny") == "Bound"


def test_a_bound_pv_whose_claim_ref_is_removed_is_bound_again_to_its_claim(
        kubesim_factory: Callable[..., Sim]) -> None:
    """A Bound PV's claimRef removed while its claim is still Bound to it (review r8 L1): kubesim made it Available
    whatever its phase, so a claim waiting for it bound it too, one PV bound to two claims. The PV controller finds
    the Bound claim naming it (syncBoundClaim: 'volume is unbound, fixing') and binds it to that claim again."""
    sim, core = sim_of(kubesim_factory, resync=3600)
    core.create_persistent_volume(volume("shared"))
    first = core.create_namespaced_persistent_volume_claim(NS, claim("first", volumeName="shared"))
    sim.wait_for(lambda: phase(sim, "persistentvolumeclaims", "first") == "Bound")
    core.create_namespaced_persistent_volume_claim(NS, claim("second", volumeName="shared"))
    sim.wait_for(lambda: events(core, "second", "FailedBinding"))  # claimed by "first"
    core.patch_persistent_volume("shared", [{"op": "remove", "path": "/spec/claimRef"}])  # kubectl patch --type json
    pv = sim.wait_for(lambda: (p := sim.get("persistentvolumes", "shared")) and p["spec"].get("claimRef") and p)
    assert pv["spec"]["claimRef"]["uid"] == first.metadata.uid and pv["status"]["phase"] == "Bound"
    settled(sim, core, "1")
    assert phase(sim, "persistentvolumeclaims", "second") == "Pending"
    assert sim.get("persistentvolumes", "shared")["spec"]["claimRef"]["uid"] == first.metadata.uid
