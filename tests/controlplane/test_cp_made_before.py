"""A podtax claim of a dynamic class that binds a PV made beforehand (Kubernetes looks for a matching Available PV
before it provisions, whatever the class's provisioner: pv_controller.go syncUnboundClaim, findBestMatchForClaim, then
provisionClaim only when none matched). Such a claim's provisioned and bound time a static bind, so it fails, saying
so, and its PV is neither waited for nor deleted: the cleanup deleted such a PV once its claim was gone (it told the
run's PVs by their claim's name only, never by pv.kubernetes.io/provisioned-by), a PV and its data that were never the
run's. The others of the run are timed as usual. A PV a provisioner made for an earlier claim, Retained and freed for
reuse by removing its claimRef, keeps pv.kubernetes.io/provisioned-by: it is told by the PV controller's
pv.kubernetes.io/bound-by-controller (set when it writes the claimRef, never on a PV an external provisioner made
for the claim), review r6; one an in-tree provisioner (kubernetes.io/...) made, which sets that annotation itself, by
its name: pvc-<uid of the claim it was made for>, not of the claim that bound it now (test_cp_pv_owner.py).
Such PVs are their owner's: not counted in the run's left_behind. The real runner and
kubernetes client against kubesim, whose PV controller binds a matching PV first as Kubernetes' does (review r2)."""

from __future__ import annotations

from typing import Any

import pytest
from podtax.cli.main import main as cli

from tests.controlplane.conftest import cluster, spec

MADE = {"local-0": "Delete", "local-1": "Retain"}  # reclaim policies: Failed once released, and Released


def volume(name: str, policy: str, by: str = "", bound_by_controller: bool = False) -> dict[str, Any]:
    """A PV made by hand in the run's class (a local volume, as an administrator makes them); `by`: the provisioner
    that made it for an earlier claim (its annotations kept, its claimRef removed for reuse)."""
    notes = {"pv.kubernetes.io/provisioned-by": by} if by else {}
    if bound_by_controller:
        notes["pv.kubernetes.io/bound-by-controller"] = "yes"
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "annotations": notes},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "sim-fast",
                     "persistentVolumeReclaimPolicy": policy, "local": {"path": f"/mnt/disks/{name}"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-1"]}]}]}}}}


def test_a_claim_that_bound_a_pv_made_beforehand_fails_and_its_pv_is_kept(kubesim_factory: Any, run_cp: Any,
                                                                          capfd: pytest.CaptureFixture[str],
                                                                          caplog: pytest.LogCaptureFixture) -> None:
    sim = kubesim_factory(cluster(), kubelet="none")
    for name, policy in MADE.items():
        sim.create(volume(name, policy), namespace="")
    tl = run_cp(spec("volume-churn", campaign="made", count=6, concurrency=2, timeout=60), kube=sim)
    failed = {name: r.error for name, r in tl.objects.items() if r.error}
    assert len(failed) == 2, failed
    for error in failed.values():
        assert error.startswith("bound a PV made beforehand (persistentvolume local-") and \
            "no pv.kubernetes.io/provisioned-by): its times are not a provisioning" in error, error
    assert sum("pv_gone" in r.t for r in tl.objects.values() if not r.error) == 4  # the others were timed
    pvs = {pv["metadata"]["name"]: pv for pv in sim.objects("persistentvolumes")}
    assert set(pvs) == set(MADE), pvs  # kept, the provisioned ones gone
    assert {name: pv["status"]["phase"] for name, pv in pvs.items()} == {"local-0": "Failed", "local-1": "Released"}
    assert tl.left_behind == 0  # their owner's: not left behind by the run (said, each, below)
    said = [r.getMessage() for r in caplog.records if "still present: persistentvolume local-" in r.getMessage()]
    assert len(said) == 2 and all("podtax volumes cleanup" not in line for line in said), said  # said once each

    capfd.readouterr()
    assert cli(["volumes", "cleanup", "--backend", "kubernetes", "--kubeconfig", str(sim.kubeconfig)]) == 1
    out, err = capfd.readouterr()
    for name in MADE:
        assert f"still present: persistentvolume {name} (" in err and ", which is gone: made beforehand, not by a " \
            "provisioner for this run (no pv.kubernetes.io/provisioned-by), so the cleanup leaves it to its owner" \
            in err, err
        assert f"kubectl delete persistentvolume {name}" in err, err
    assert "kubernetes: removed 0 object(s), 2 still present" in out, out
    assert set(pv["metadata"]["name"] for pv in sim.objects("persistentvolumes")) == set(MADE)


def test_a_retained_pv_a_provisioner_made_before_is_kept_too(kubesim_factory: Any, run_cp: Any,
                                                             capfd: pytest.CaptureFixture[str]) -> None:
    """Review r6 (H1): it carries provisioned-by, so it was timed as a provisioning and the cleanup deleted it."""
    sim = kubesim_factory(cluster(), kubelet="none")
    sim.create(volume("reused-0", "Retain", by="sim.csi.podtax.io"), namespace="")
    tl = run_cp(spec("volume-churn", campaign="reused", count=4, concurrency=2, timeout=60), kube=sim)
    failed = [r.error for r in tl.objects.values() if r.error]
    assert len(failed) == 1 and failed[0].startswith("bound a PV made beforehand (persistentvolume reused-0, made by "
                                                     "sim.csi.podtax.io for an earlier claim, then bound by the PV "
                                                     "controller: pv.kubernetes.io/bound-by-controller)"), failed
    assert sum("pv_gone" in r.t for r in tl.objects.values() if not r.error) == 3  # the others: provisioned, timed
    pvs = {pv["metadata"]["name"]: pv for pv in sim.objects("persistentvolumes")}
    assert set(pvs) == {"reused-0"} and pvs["reused-0"]["status"]["phase"] == "Released", pvs  # kept
    assert tl.left_behind == 0

    capfd.readouterr()
    assert cli(["volumes", "cleanup", "--backend", "kubernetes", "--kubeconfig", str(sim.kubeconfig)]) == 1
    out, err = capfd.readouterr()
    assert "still present: persistentvolume reused-0 (" in err and "made beforehand, not by a provisioner for this " \
        "run (made by sim.csi.podtax.io for an earlier claim" in err, err
    assert [pv["metadata"]["name"] for pv in sim.objects("persistentvolumes")] == ["reused-0"]


def test_a_retained_pv_an_in_tree_provisioner_made_before_is_kept(kubesim_factory: Any, run_cp: Any,
                                                                  capfd: pytest.CaptureFixture[str]) -> None:
    """An in-tree provisioner writes pv.kubernetes.io/bound-by-controller itself when it provisions, so such a PV,
    Retained and freed, was timed as a provisioning and deleted by the cleanup: told now by its name, which holds the
    uid of the claim it was made for (pvc-<uid>), not of the podtax claim that bound it."""
    sim = kubesim_factory(cluster(), kubelet="none")
    name = "pvc-0b9e8d7c-6b5a-4f3e-8d2c-1b0a9f8e7d6c"  # of an earlier claim, gone
    sim.create(volume(name, "Retain", by="kubernetes.io/aws-ebs", bound_by_controller=True), namespace="")
    tl = run_cp(spec("volume-churn", campaign="intree", count=4, concurrency=2, timeout=60), kube=sim)
    failed = [r.error for r in tl.objects.values() if r.error]
    assert len(failed) == 1 and failed[0].startswith(f"bound a PV made beforehand (persistentvolume {name}, made by "
                                                     "kubernetes.io/aws-ebs, but not for the claim it is bound to "
                                                     "(uid "), failed
    assert sum("pv_gone" in r.t for r in tl.objects.values() if not r.error) == 3  # the others: provisioned, timed
    pvs = {pv["metadata"]["name"]: pv for pv in sim.objects("persistentvolumes")}
    assert set(pvs) == {name} and pvs[name]["status"]["phase"] == "Released", pvs  # kept
    assert tl.left_behind == 0

    capfd.readouterr()
    assert cli(["volumes", "cleanup", "--backend", "kubernetes", "--kubeconfig", str(sim.kubeconfig)]) == 1
    out, err = capfd.readouterr()
    assert f"still present: persistentvolume {name} (" in err and "made beforehand, not by a provisioner for this " \
        "run (made by kubernetes.io/aws-ebs, but not for the claim it is bound to" in err, err
    assert [pv["metadata"]["name"] for pv in sim.objects("persistentvolumes")] == [name]
