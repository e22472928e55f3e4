"""volume-churn without storage_class checks the class the API server will give its claims: the default StorageClass
as the DefaultStorageClass admission plugin picks it (k8s.io/component-helpers storage/volume GetDefaultClass: the
annotation storageclass.kubernetes.io/is-default-class or its beta form storageclass.beta.kubernetes.io/..., and
with several defaults the newest, then the first by name). Before, the run's check read only the GA annotation and took
the first default listed: a cluster marking its default with the beta annotation was refused 'storage class (the
default) does not exist', and with two defaults the check judged one the claims would not get (an older
WaitForFirstConsumer class refused the run, which the newer Immediate class would have served). The real runner and
kubernetes client against kubesim, whose admission picks the class as the API server does."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.controlplane.conftest import CLASS, NODE, spec

GA, BETA = "storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class"


def storage_class(name: str, annotation: str, binding: str = "Immediate") -> dict[str, Any]:
    return {**CLASS, "volumeBindingMode": binding, "metadata": {"name": name, "annotations": {annotation: "true"}}}


# the classes the cluster starts with, and one created later (its creationTimestamp, set by the server, a second newer)
CASES = {
    "beta annotation": ([storage_class("sim-beta", BETA)], None),
    "newest of two defaults": ([storage_class("a-old-wffc", GA, "WaitForFirstConsumer")],
                               storage_class("b-new", GA, "Immediate")),
}


def classes_of(sim: Any) -> list[dict[str, Any]]:
    return sim.objects("storageclasses", group="storage.k8s.io")


def rfc3339_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("case", CASES)
def test_the_default_class_is_the_one_the_api_server_gives(case: str, kubesim_factory: Any, run_cp: Any) -> None:
    classes, later = CASES[case]
    sim = kubesim_factory({"nodes": [{"name": NODE, "capacity": {"cpu": "4", "memory": "8Gi"}}],
                           "storageClasses": classes,
                           "provisioner": {"provisionLatency": 0.0, "deleteLatency": 0.0, "seed": 7}}, kubelet="none")
    if later is not None:  # creationTimestamp has 1-second resolution: wait for the next second, then create it
        first = max(c["metadata"]["creationTimestamp"] for c in classes_of(sim))
        deadline = time.monotonic() + 10
        while rfc3339_now() <= first and time.monotonic() < deadline:
            time.sleep(0.05)
        sim.create(later, namespace="")
        stamps = {c["metadata"]["name"]: c["metadata"]["creationTimestamp"] for c in classes_of(sim)}
        assert stamps["b-new"] > stamps["a-old-wffc"], stamps
    tl = run_cp(spec("volume-churn", campaign="dflt", count=4, concurrency=2, timeout=30), kube=sim)
    assert not [r.error for r in tl.objects.values() if r.error]
    assert all({"bound", "gone", "pv_gone"} <= set(r.t) for r in tl.objects.values())
