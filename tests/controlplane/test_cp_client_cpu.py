"""The CPU the kubernetes client spends on a request lands inside the control-plane benchmark's timed latencies
(request_sent -> api_accepted, delete_requested -> ...), which Nomad's client (httpx) does not pay: the runner's
client runs the kubeconfig's credential refresh at most once a second and sends our bodies unvalidated
(podtax.kubeclient, as the scheduler). A real volume-churn run against kubesim through the real client."""

from __future__ import annotations

from typing import Any

import pytest

from tests.controlplane.conftest import cluster, spec

COUNT = 10


def test_a_run_refreshes_credentials_once_and_builds_no_model_of_its_bodies(
        kubesim_factory: Any, run_cp: Any, kubeconfig_sets: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, every request of the run (10 creates, 10 deletes, the lists, watches and checks) ran the client's
    credential refresh, which set the kubeconfig's token, host and proxy again (the host's setter reading the
    proxy environment), and pydantic's validation turned each plain-dict claim into a V1PersistentVolumeClaim
    for the client to serialise back: ~0.2 ms of CPU a request, inside the timed latencies."""
    from kubernetes.client import ApiClient
    from pydantic import BaseModel

    models, real_sanitize = set(), ApiClient.sanitize_for_serialization

    def sanitize(self: Any, obj: Any) -> Any:
        if isinstance(obj, BaseModel):
            models.add(type(obj).__name__)
        return real_sanitize(self, obj)

    monkeypatch.setattr(ApiClient, "sanitize_for_serialization", sanitize)
    sim = kubesim_factory(cluster(), kubelet="none")
    tl = run_cp(spec("volume-churn", count=COUNT, concurrency=2, timeout=30), kube=sim)
    assert [r.name for r in tl.objects.values() if "pv_gone" in r.t and r.error is None] == list(tl.objects)
    assert (tl.requests["create"], tl.requests["delete"]) == (COUNT, COUNT)  # the claims' (the namespace's: set-up)
    # loading the kubeconfig, then the first request's refresh (before: 30, one a request)
    assert kubeconfig_sets[0] == 2, kubeconfig_sets
    assert models == set()  # before: {'V1Namespace', 'V1PersistentVolumeClaim'} (the creates' bodies)
