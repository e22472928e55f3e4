"""volume-churn with consumer pods: a claim in use is held by kubernetes.io/pvc-protection until its pod is gone (the
real kubelet stops it and unmounts the volume first: seconds), so claims deleted right after their pods' DELETE was
answered timed that shutdown in `deleted` and `pv_deleted`, which a run without consumers (or Nomad's) does not hold.
Now the run waits for its consumer pods to be gone before it deletes the claims. The pods' shutdown is planted with a
finalizer the test removes later (FAULT INJECTION: kubesim's kubelet finishes a deletion at once). Through the real
kubernetes client against kubesim; ordering only, no timed assertion."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kubernetes import client
from podtax_runner.controlplane import kvolumes

from tests.controlplane.conftest import cluster, leftovers, ours, spec

HOLD = "podtax.io/test-shutdown"


# slow: each consumer pod's create sent 0.3 s after its claim was accepted (a slow or retried create); a poll round in
# between got 404 for the pod not made yet and took it for gone, so the run did not wait for it (review r2)
@pytest.mark.parametrize(("observe", "slow"), [("watch", False), ("poll", False), ("poll", True)])
def test_claims_are_deleted_once_their_consumer_pods_are_gone(kubesim_factory: Any, run_cp: Any,
                                                               monkeypatch: pytest.MonkeyPatch, observe: str,
                                                               slow: bool) -> None:
    sim = kubesim_factory(cluster(provision=0.01, delete=0.01), kubelet="simulated")
    api, real = sim.emulator.api, sim.emulator.api.create

    def create(res: Any, ns: str, body: Any) -> Any:  # every consumer pod is held by a finalizer once deleted
        if res.kind == "Pod":
            body["metadata"].setdefault("finalizers", []).append(HOLD)
        return real(res, ns, body)

    monkeypatch.setattr(api, "create", create)
    gone: dict[str, float] = {}  # consumer pod -> when the run saw it go once released (its timeline's clock)
    released: set[str] = set()  # consumer pods whose planted shutdown is over
    seen = kvolumes.VolumeChurnK8s.on_pod

    def on_pod(self: Any, etype: str, obj: Any) -> None:
        if etype == "DELETED" and obj["metadata"]["name"] in released:
            gone.setdefault(obj["metadata"]["name"], self.tl.now())
        seen(self, etype, obj)

    if slow:
        manifest = kvolumes.consumer_manifest

        def late(*args: Any, **kwargs: Any) -> Any:
            threading.Event().wait(0.3)
            return manifest(*args, **kwargs)

        monkeypatch.setattr(kvolumes, "consumer_manifest", late)

    monkeypatch.setattr(kvolumes.VolumeChurnK8s, "on_pod", on_pod)
    stop = threading.Event()

    def release() -> None:  # the planted shutdown: a deleted pod's finalizer goes a while later
        core = client.CoreV1Api(sim.api_client())
        held: dict[str, int] = {}
        while not stop.wait(0.05):
            for pod in ours(sim, "pods"):
                name = pod["metadata"]["name"]
                if pod["metadata"].get("deletionTimestamp") and HOLD in (pod["metadata"].get("finalizers") or []):
                    held[name] = held.get(name, 0) + 1
                    if held[name] > 10:  # held ~0.5 s
                        released.add(name)
                        core.patch_namespaced_pod(name, pod["metadata"]["namespace"], {"metadata": {"finalizers": []}})

    thread = threading.Thread(target=release, daemon=True)
    thread.start()
    try:
        params = {"poll_interval_s": 0.05} if observe == "poll" else {}
        tl = run_cp(spec("volume-churn", count=6, concurrency=3, timeout=60, consumer=True, observe=observe,
                         rep=observe == "poll", **params), kube=sim)
    finally:
        stop.set()
        thread.join(timeout=10)
    assert tl.errors() == 0, [(r.name, r.error) for r in tl.objects.values() if r.error]
    for name, r in tl.objects.items():
        pod = name.replace("podtax-vc-", "podtax-vcc-")
        # the run saw the pod go (its watch's DELETED, or a poll's 404) before it asked for its claim's delete
        assert pod in gone and gone[pod] <= r.t["delete_requested"], (name, gone.get(pod), r.t)
        assert r.t["delete_requested"] <= r.t["gone"] <= r.t["pv_gone"], r.t
    assert tl.left_behind == 0 and leftovers(sim.kubeconfig) == []
