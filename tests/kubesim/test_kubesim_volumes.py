"""podtax kubesim's claims and volumes against the real kubernetes client: DefaultStorageClass
admission, the PV controller's order of writes, protection finalizers, Released, and the PV's DELETED
event ending a deletion (kube-burner/external-provisioner semantics, ../shared/reference section 4)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes import client, watch
from podtax_kubesim.storageadmission import default_class
from podtax_kubesim.testing import Sim

NS = "default"
FAST = {"metadata": {"name": "fast", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "sim.csi.podtax.io", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}
KEEP = {"metadata": {"name": "keep"}, "provisioner": "sim.csi.podtax.io", "reclaimPolicy": "Retain"}
ZERO = {"provisionLatency": 0, "deleteLatency": 0}


def claim(name: str, storage_class: str | None = None, with_class: bool = False) -> dict:
    spec: dict = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if with_class:
        spec["storageClassName"] = storage_class
    return {"metadata": {"name": name}, "spec": spec}


def history(core: client.CoreV1Api, since: str) -> list[tuple[int, str, str, dict]]:
    """All PVC and PV events after resourceVersion `since`, merged in resourceVersion order."""
    out = []
    for kind, fn, args in (("pvc", core.list_namespaced_persistent_volume_claim, (NS,)),
                           ("pv", core.list_persistent_volume, ())):
        for ev in watch.Watch().stream(fn, *args, resource_version=since, timeout_seconds=1):
            obj = client.ApiClient().sanitize_for_serialization(ev["object"])
            out.append((int(obj["metadata"]["resourceVersion"]), kind, ev["type"], obj))
    return sorted(out, key=lambda e: e[0])


def test_default_class_pure() -> None:
    old = {"metadata": {"name": "b-old", "creationTimestamp": "2026-01-01T00:00:00Z",
                        "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}}
    new_a = {"metadata": {"name": "a-new", "creationTimestamp": "2026-02-01T00:00:00Z",
                          "annotations": {"storageclass.beta.kubernetes.io/is-default-class": "true"}}}
    new_c = {"metadata": {"name": "c-new", "creationTimestamp": "2026-02-01T00:00:00Z",
                          "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}}
    other = {"metadata": {"name": "x", "annotations": {"storageclass.kubernetes.io/is-default-class": "false"}}}
    assert default_class([old, new_c, new_a, other]) == "a-new"  # newest, then by name
    assert default_class([old]) == "b-old"
    assert default_class([other]) is None


def test_default_storage_class_admission(kubesim_factory: Callable[..., Sim]) -> None:
    sim = kubesim_factory({"nodes": [{"name": "n1"}], "storageClasses": [FAST, KEEP], "provisioner": ZERO})
    core = client.CoreV1Api(sim.api_client())
    created = core.create_namespaced_persistent_volume_claim(NS, claim("a"))
    assert created.spec.storage_class_name == "fast"
    assert "kubernetes.io/pvc-protection" in created.metadata.finalizers
    create = core.create_namespaced_persistent_volume_claim
    assert create(NS, claim("b", "keep", True)).spec.storage_class_name == "keep"
    # "" asks for no class (static binding only): admission leaves it alone
    assert create(NS, claim("c", "", True)).spec.storage_class_name == ""
    sim.wait_for(lambda: (c := sim.get("persistentvolumeclaims", "a", NS)) and c["status"]["phase"] == "Bound")

    bare = kubesim_factory({"nodes": [{"name": "n1"}], "storageClasses": [KEEP], "provisioner": ZERO})
    core = client.CoreV1Api(bare.api_client())
    assert core.create_namespaced_persistent_volume_claim(NS, claim("d")).spec.storage_class_name is None


def test_provision_bind_and_delete_in_the_real_order(kubesim_factory: Callable[..., Sim]) -> None:
    sim = kubesim_factory({"nodes": [{"name": "n1"}], "storageClasses": [FAST], "provisioner": ZERO})
    core = client.CoreV1Api(sim.api_client())
    since = core.list_persistent_volume().metadata.resource_version
    core.create_namespaced_persistent_volume_claim(NS, claim("data"))
    bound = sim.wait_for(lambda: (c := sim.get("persistentvolumeclaims", "data", NS))
                         and c["status"]["phase"] == "Bound" and c)
    pv_name = bound["spec"]["volumeName"]
    pv = core.read_persistent_volume(pv_name)
    assert pv.status.phase == "Bound" and pv.status.last_phase_transition_time is not None
    assert set(pv.metadata.finalizers) == {"kubernetes.io/pv-protection",
                                           "external-provisioner.volume.kubernetes.io/finalizer"}
    assert bound["metadata"]["annotations"]["volume.kubernetes.io/storage-provisioner"] == "sim.csi.podtax.io"
    core.delete_namespaced_persistent_volume_claim("data", NS)
    sim.wait_for(lambda: sim.get("persistentvolumes", pv_name) is None)

    steps = []
    for _, kind, etype, obj in history(core, since):
        status, meta = obj.get("status") or {}, obj["metadata"]
        mark = "deleting" if meta.get("deletionTimestamp") else ""
        if kind == "pvc":
            mark += "+volumeName" if obj["spec"].get("volumeName") else ""
        steps.append(f"{kind} {etype} {status.get('phase', '')}{mark}".strip())
    assert steps == [
        "pvc ADDED Pending",
        "pvc MODIFIED Pending",                      # volume.kubernetes.io/storage-provisioner
        "pv ADDED Pending",                          # the provisioner saved the PV
        "pv MODIFIED Bound",                         # bind(): the volume is saved first ...
        "pvc MODIFIED Pending+volumeName",           # ... then the claim's spec.volumeName ...
        "pvc MODIFIED Bound+volumeName",             # ... then the claim's status
        "pvc MODIFIED Bounddeleting+volumeName",     # deletion held by kubernetes.io/pvc-protection ...
        "pvc DELETED Bounddeleting+volumeName",      # ... until no pod uses it
        "pv MODIFIED Released",
        "pv MODIFIED Releaseddeleting",              # the provisioner deleted the PV object
        "pv MODIFIED Releaseddeleting",              # pv-protection removed (the PV is not Bound)
        "pv DELETED Releaseddeleting",               # the provisioner's finalizer gone: the PV's DELETED event
    ]


def test_retain_stays_released(kubesim_factory: Callable[..., Sim]) -> None:
    sim = kubesim_factory({"nodes": [{"name": "n1"}], "storageClasses": [KEEP], "provisioner": ZERO})
    core = client.CoreV1Api(sim.api_client())
    core.create_namespaced_persistent_volume_claim(NS, claim("k", "keep", True))
    bound = sim.wait_for(lambda: (c := sim.get("persistentvolumeclaims", "k", NS))
                         and c["status"]["phase"] == "Bound" and c)
    core.delete_namespaced_persistent_volume_claim("k", NS)
    pv = sim.wait_for(lambda: (v := sim.get("persistentvolumes", bound["spec"]["volumeName"]))
                      and v["status"]["phase"] == "Released" and v)
    assert pv["status"]["lastPhaseTransitionTime"] and not pv["metadata"].get("deletionTimestamp")


def test_pvc_protection_holds_a_claim_in_use(kubesim_factory: Callable[..., Sim]) -> None:
    sim = kubesim_factory({"nodes": [{"name": "n1"}], "storageClasses": [FAST], "provisioner": ZERO},
                          kubelet="none")
    core = client.CoreV1Api(sim.api_client())
    core.create_namespaced_persistent_volume_claim(NS, claim("used"))
    core.create_namespaced_pod(NS, {"metadata": {"name": "user"}, "spec": {
        "containers": [{"name": "c", "image": "i"}],
        "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "used"}}]}})
    sim.wait_for_phase(NS, "user", ("Running",))
    core.delete_namespaced_persistent_volume_claim("used", NS)
    held = sim.get("persistentvolumeclaims", "used", NS)
    assert held is not None and held["metadata"]["deletionTimestamp"]
    assert held["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    core.delete_namespaced_pod("user", NS, grace_period_seconds=0)
    sim.wait_for(lambda: sim.get("persistentvolumeclaims", "used", NS) is None)
    volume = held["spec"]["volumeName"]
    sim.wait_for(lambda: sim.get("persistentvolumes", volume) is None)


def test_pvc_protection_holds_a_claim_while_a_finished_pod_using_it_exists(kubesim_factory: Callable[..., Sim]) -> None:
    """The PVC protection controller counts every scheduled pod naming the claim, finished or not, until the pod is
    deleted (pvc_protection_controller.go podUsesPVC: only an ephemeral volume's pod that is shut down does not
    count). kubesim let a claim go once its pod Succeeded."""
    sim = kubesim_factory({"nodes": [{"name": "n1"}], "storageClasses": [FAST], "provisioner": ZERO},
                          kubelet="simulated")
    core = client.CoreV1Api(sim.api_client())
    core.create_namespaced_persistent_volume_claim(NS, claim("done"))
    volume = {"name": "v", "persistentVolumeClaim": {"claimName": "done"}}
    core.create_namespaced_pod(NS, {"metadata": {"name": "job", "annotations": {"podtax.io/sim-duration-seconds": "0"}},
                                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}],
                                             "volumes": [volume]}})
    sim.wait_for_phase(NS, "job", ("Succeeded",))
    core.delete_namespaced_persistent_volume_claim("done", NS)
    # the pod is Succeeded and still there: the claim stays, held by kubernetes.io/pvc-protection; a later change
    # (another object's write) is no reason to let it go either
    core.create_namespaced_persistent_volume_claim(NS, claim("other"))
    sim.wait_for(lambda: (c := sim.get("persistentvolumeclaims", "other", NS)) and c["status"]["phase"] == "Bound")
    held = sim.get("persistentvolumeclaims", "done", NS)
    assert held is not None and held["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"], held
    core.delete_namespaced_pod("job", NS)
    sim.wait_for(lambda: sim.get("persistentvolumeclaims", "done", NS) is None)


def test_a_failing_provisioner_writes_provisioningfailed_and_retries(kubesim_factory: Callable[..., Sim]) -> None:
    """podtax.io/sim-provision-error: the claim stays Pending and carries the external provisioner's Warning event
    ProvisioningFailed, counted up on each retry (client-go's correlator), listed by the field selector a client
    (kubectl describe pvc, the runner) uses; without the annotation the next retry provisions it."""
    import time

    sim = kubesim_factory({"nodes": [{"name": "n1"}], "storageClasses": [FAST], "provisioner": ZERO})
    core = client.CoreV1Api(sim.api_client())
    body = claim("stuck")
    body["metadata"]["annotations"] = {"podtax.io/sim-provision-error": "rpc error: code = ResourceExhausted desc = "
                                                                        "quota exceeded"}
    made = core.create_namespaced_persistent_volume_claim(NS, body)
    core.create_namespaced_persistent_volume_claim(NS, claim("fine"))  # its events are not the stuck claim's
    selector = "involvedObject.name=stuck,involvedObject.kind=PersistentVolumeClaim"

    def failed() -> list[client.CoreV1Event]:
        return [e for e in core.list_namespaced_event(NS, field_selector=selector).items
                if e.reason == "ProvisioningFailed"]

    deadline = time.monotonic() + 20
    while not (events := failed()) or events[0].count < 2:  # the first retry comes 1 s after the first failure
        assert time.monotonic() < deadline, events
        time.sleep(0.05)
    assert len(events) == 1, events  # one event counted up, not one per failure
    ev = events[0]
    assert ev.type == "Warning" and ev.metadata.namespace == NS
    # external-provisioner v6 (lib v13) writes the error alone; up to v5 after 'failed to provision volume with
    # StorageClass "fast": '
    assert ev.message == "rpc error: code = ResourceExhausted desc = quota exceeded"
    assert (ev.involved_object.kind, ev.involved_object.name, ev.involved_object.namespace, ev.involved_object.uid) \
        == ("PersistentVolumeClaim", "stuck", NS, made.metadata.uid)
    assert ev.first_timestamp <= ev.last_timestamp and ev.source.component == "sim.csi.podtax.io"
    assert core.read_namespaced_persistent_volume_claim("stuck", NS).status.phase == "Pending"
    assert all(e.involved_object.name == "stuck" for e in core.list_namespaced_event(NS, field_selector=selector).items)
    core.patch_namespaced_persistent_volume_claim("stuck", NS, {"metadata": {"annotations": {
        "podtax.io/sim-provision-error": None}}})
    while core.read_namespaced_persistent_volume_claim("stuck", NS).status.phase != "Bound":  # the next retry
        assert time.monotonic() < deadline + 20
        time.sleep(0.05)


LOCAL = {"metadata": {"name": "local"}, "provisioner": "kubernetes.io/no-provisioner", "reclaimPolicy": "Delete",
         "volumeBindingMode": "Immediate"}


SOURCES = {  # a PV's source -> its message once released (None: deleted), as the PV controller's in-tree plugins do
    "local": ({"local": {"path": "/mnt/disks/0"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}}},
              'error getting deleter volume plugin for volume "by-hand": no deletable volume plugin matched'),
    "nfs": ({"nfs": {"server": "nfs.example", "path": "/exports/0"}},
            'error getting deleter volume plugin for volume "by-hand": no deletable volume plugin matched'),
    "hostPath outside /tmp": ({"hostPath": {"path": "/mnt/disks/0"}},
                              "host_path deleter only supports /tmp/.+ but received provided /mnt/disks/0"),
    "hostPath under /tmp": ({"hostPath": {"path": "/tmp/disks/0"}}, None),
}


@pytest.mark.parametrize("source", SOURCES)
def test_a_pv_made_by_hand_with_reclaim_delete_is_deleted_by_its_in_tree_plugin(
        source: str, kubesim_factory: Callable[..., Sim]) -> None:
    """A PV no provisioner made (no pv.kubernetes.io/provisioned-by) and reclaim policy Delete, once its claim is gone,
    is the PV controller's to delete with the in-tree plugin of its source (pv_controller.go findDeletablePlugin):
    local, NFS (and CSI) have none, so the PV is Failed with 'no deletable volume plugin matched' and a
    VolumeFailedDelete event, and stays; hostPath's deleter removes only a path matching /tmp/.+ (host_path.go Delete):
    another path fails with its own words, one under /tmp is deleted. kubesim deleted every such PV, as if a provisioner
    had (review hC), then said 'no deletable volume plugin matched' for a hostPath too (review r2)."""
    extra, message = SOURCES[source]
    sim = kubesim_factory({"nodes": [{"name": "n1"}], "storageClasses": [LOCAL], "provisioner": ZERO})
    core = client.CoreV1Api(sim.api_client())
    core.create_persistent_volume({"metadata": {"name": "by-hand"}, "spec": {
        "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "local",
        "persistentVolumeReclaimPolicy": "Delete", **extra}})
    core.create_namespaced_persistent_volume_claim(NS, claim("s", "local", True))
    sim.wait_for(lambda: (c := sim.get("persistentvolumeclaims", "s", NS)) and c["status"]["phase"] == "Bound")
    core.delete_namespaced_persistent_volume_claim("s", NS)
    pv = sim.wait_for(lambda: (v := sim.get("persistentvolumes", "by-hand")) is None
                      or v["status"]["phase"] not in ("Bound", "Released") and v)
    if message is None:
        assert pv is True, f"the PV under /tmp was not deleted: {pv}"
        return
    assert isinstance(pv, dict), "the PV made by hand was deleted"
    assert pv["status"]["phase"] == "Failed", pv
    assert pv["status"]["message"] == message and not pv["metadata"].get("deletionTimestamp")
    events = core.list_namespaced_event("default", field_selector="involvedObject.name=by-hand").items
    assert [(e.type, e.reason, e.message) for e in events] == [("Warning", "VolumeFailedDelete", message)]
