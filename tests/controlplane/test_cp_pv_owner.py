"""Whose a PV a podtax claim is bound to is (pv_owner.made_by_hand): only a PV a provisioner made for THAT claim is
the run's (timed as a provisioning, deleted by the cleanup). A Retained PV an in-tree provisioner (kubernetes.io/...,
CSI-migrated or not) made for an earlier claim, freed for reuse by removing its claimRef, carries
pv.kubernetes.io/provisioned-by and pv.kubernetes.io/bound-by-controller just as one it made for this claim (the
in-tree provisionClaimOperation writes both, pv_controller.go), so it was taken as the run's and the cleanup deleted
a PV its user kept. What only a provisioning for the claim writes: the PV's name, pvc-<the claim's uid>
(getProvisionedVolumeNameForClaim; the external-provisioner's --volume-name-prefix + "-" + the uid), the uid its
claimRef holds once bound. Pure: the same dicts kube-controller-manager would leave."""

from __future__ import annotations

from typing import Any

import pytest
from podtax_runner.controlplane.pv_owner import made_by_hand, provisioned

OURS, EARLIER = "6a1f0c2e-0d7e-4b55-9a3e-1c2d3e4f5a6b", "0b9e8d7c-6b5a-4f3e-8d2c-1b0a9f8e7d6c"
IN_TREE = {"pv.kubernetes.io/provisioned-by": "kubernetes.io/aws-ebs", "pv.kubernetes.io/bound-by-controller": "yes"}
MIGRATED = {"pv.kubernetes.io/provisioned-by": "kubernetes.io/gce-pd",
            "pv.kubernetes.io/migrated-to": "pd.csi.storage.gke.io"}
EXTERNAL = {"pv.kubernetes.io/provisioned-by": "ebs.csi.aws.com"}


def pv(name: str, notes: dict[str, str], uid: str | None = OURS) -> dict[str, Any]:
    ref = {"kind": "PersistentVolumeClaim", "namespace": "default", "name": "podtax-cp-x-0"}
    if uid is not None:
        ref["uid"] = uid
    return {"metadata": {"name": name, "annotations": dict(notes)},
            "spec": {"claimRef": ref, "persistentVolumeReclaimPolicy": "Retain"}}


@pytest.mark.parametrize("obj", [
    pv(f"pvc-{OURS}", IN_TREE),  # in-tree: it sets bound-by-controller itself when it provisions
    pv(f"pvc-{OURS}", MIGRATED),  # CSI-migrated: the external-provisioner made it, under the in-tree name
    pv(f"pvc-{OURS}", {**MIGRATED, "pv.kubernetes.io/bound-by-controller": "yes"}),
    pv(f"pvc-{OURS}", EXTERNAL),
    pv(f"data-{OURS}", EXTERNAL),  # --volume-name-prefix data
    pv(f"pvc-{OURS.replace('-', '')[:16]}", EXTERNAL),  # --volume-name-uuid-length 16: dashes removed, cut
    pv(f"pvc-{OURS.replace('-', '')}", EXTERNAL),  # --volume-name-uuid-length 32
    pv(f"data-{OURS.replace('-', '')[:8]}", EXTERNAL),  # --volume-name-prefix data --volume-name-uuid-length 8
], ids=["in-tree", "migrated", "migrated-bound-by-controller", "external", "external-prefix", "uuid-length-16",
        "uuid-length-32", "prefix-uuid-length-8"])
def test_a_pv_provisioned_for_its_claim_is_the_runs(obj: dict[str, Any]) -> None:
    assert made_by_hand(obj) == "" and provisioned(obj)


@pytest.mark.parametrize("obj", [
    pv(f"pvc-{EARLIER}", IN_TREE),  # retained, freed, bound again by the PV controller: annotations kept
    pv(f"pvc-{EARLIER}", {**MIGRATED, "pv.kubernetes.io/bound-by-controller": "yes"}),
    pv(f"pvc-{EARLIER}", MIGRATED),  # pre-bound again by its user (claimRef set by hand): no bound-by-controller
    pv(f"pvc-{EARLIER}", EXTERNAL),  # the same for an external provisioner's
    pv(f"pvc-{OURS}", IN_TREE, uid=None),  # pre-bound by hand, not bound yet: nothing proves it
    pv(OURS, IN_TREE),  # not <prefix>-<uid>
    pv(f"pvc-{EARLIER.replace('-', '')[:16]}", EXTERNAL),  # --volume-name-uuid-length 16, an earlier claim's
    pv(f"pvc-{OURS.replace('-', '')[:7]}", EXTERNAL),  # 7 characters: too few to tell
    pv(OURS.replace("-", "")[:16], EXTERNAL),  # no prefix
], ids=["in-tree", "migrated", "migrated-pre-bound", "external-pre-bound", "no-uid", "bare-uid",
        "uuid-length-16-earlier", "uuid-length-7", "uuid-length-16-no-prefix"])
def test_a_pv_made_for_another_claim_is_not_the_runs(obj: dict[str, Any]) -> None:
    why = made_by_hand(obj)
    assert not provisioned(obj)
    by = obj["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"]
    uid = obj["spec"]["claimRef"].get("uid") or "unset"
    assert why == (f"made by {by}, but not for the claim it is bound to (uid {uid}): a provisioner names the PV it "
                   f"makes for a claim pvc-<that claim's uid>"), why


def test_an_external_provisioners_pv_bound_by_the_pv_controller_keeps_its_reason() -> None:
    why = made_by_hand(pv(f"pvc-{EARLIER}", {**EXTERNAL, "pv.kubernetes.io/bound-by-controller": "yes"}))
    assert why == ("made by ebs.csi.aws.com for an earlier claim, then bound by the PV controller: "
                   "pv.kubernetes.io/bound-by-controller"), why
