"""volume-churn refuses, before it creates anything, a storage class that provisions nothing (provisioner
kubernetes.io/no-provisioner: local volumes, PVs made by hand), naming the fix. Before, the run went on: its claims
bound to the cluster's PVs made beforehand (the PV controller's static binding), so `provisioned` and `bound` timed a
binding, not a provisioning, and its deletes released those PVs (Retain, as PVs made by hand default to: they stayed
Released, unusable, and the run waited for them to go until its timeout). The real runner and kubernetes client
against kubesim, whose PV controller binds such claims statically as Kubernetes' does."""

from __future__ import annotations

from typing import Any

import pytest
from podtax_runner.controlplane.common import Aborted

from tests.controlplane.conftest import CLASS, NODE, spec

LOCAL = {**CLASS, "metadata": {"name": "local", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
         "provisioner": "kubernetes.io/no-provisioner"}


def volume(i: int) -> dict[str, Any]:
    """A PV made by hand, as an administrator makes local volumes (reclaim policy Retain, the API's default)."""
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"local-pv-{i}"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                     "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": f"/mnt/disks/{i}"}}}


def test_a_class_without_a_provisioner_is_refused_before_anything_is_made(kubesim_factory: Any,
                                                                          run_cp: Any) -> None:
    sim = kubesim_factory({"nodes": [{"name": NODE, "capacity": {"cpu": "4", "memory": "8Gi"}}],
                           "storageClasses": [LOCAL]}, kubelet="none")
    for i in range(4):
        sim.create(volume(i), namespace="")
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", campaign="local", count=4, concurrency=2, timeout=10), kube=sim)
    assert info.value.reason == "bad-storage-class", (info.value.reason, info.value.detail)
    assert "storage class local provisions no volumes (provisioner kubernetes.io/no-provisioner)" in info.value.detail
    pvs = sim.objects("persistentvolumes")
    assert [pv["status"]["phase"] for pv in pvs] == ["Available"] * 4, pvs  # the PVs made beforehand untouched
    assert sim.objects("persistentvolumeclaims", "podtax-runs") == []
