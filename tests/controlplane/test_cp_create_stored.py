"""A claim's create answered 504 after the API server stored it (its timeout filter answers while the write goes on and
commits; kubesim's fault failCreates with `stored: true`). The runner sends the create again (a 504 may come before
or after the write: retry.did_nothing), and the retry meets 409 AlreadyExists for the run's OWN claim. Before, the
claim was failed as 'exists already, left by an earlier run of campaign cp: remove its leftovers with `podtax volumes
cleanup --campaign cp`', a wrong cause and a wrong fix, and its timings were lost although it was created, bound
and deleted like the others. Now a 409 on a create sent again, whose claim carries this run's label, is the run's
own claim: timed from the first attempt (flagged RETRIED, its phases holding the wait), its events kept by its uid.
Through the real kubernetes client against kubesim and the timeline parser."""

from __future__ import annotations

from typing import Any

import pytest
from podtax.parsers import timeline as parser
from podtax_runner.controlplane.timeline import HELD

from tests.controlplane.conftest import cluster, leftovers, spec


def test_a_create_stored_then_answered_504_is_the_runs_own_claim(kubesim_factory: Any, run_cp: Any) -> None:
    faults = {"failCreates": [{"match": "persistentvolumeclaims/-0002", "status": 504, "times": 1, "stored": True}]}
    sim = kubesim_factory({**cluster(provision=0.05, delete=0.02), "faults": faults}, kubelet="none")
    tl = run_cp(spec("volume-churn", count=5, concurrency=2, timeout=30), kube=sim)
    stored = next(r for n, r in tl.objects.items() if n.endswith("-0002"))
    assert tl.errors() == 0, [(r.name, r.error) for r in tl.objects.values() if r.error]
    # timed like the others, from its first attempt (a 504 does not say nothing was done): an upper bound, said so
    for point in ("request_sent", "api_accepted", "pv_created", "bound", "delete_requested", "gone", "pv_gone"):
        assert point in stored.t, stored.t
    assert "first_request_sent" not in stored.t and stored.t["request_sent"] <= stored.t["api_accepted"], stored.t
    assert tl.retried == {stored.name: f"create: 504 Gateway Timeout ({HELD})"}, tl.retried
    assert tl.apiserver and tl.apiserver["after"].get("POST persistentvolumeclaims 409") == 1, tl.apiserver
    flags = parser.parse(tl.jsonl(), "volume-churn").flags
    assert any(f.startswith("RETRIED") and stored.name in f for f in flags), flags
    assert tl.left_behind == 0 and leftovers(sim.kubeconfig) == []


def test_kubesim_stored_fault_creates_then_answers_504(kubesim_factory: Any) -> None:
    """The fault itself, through the real client: the claim exists although its create was answered 504 Timeout."""
    from kubernetes import client
    from kubernetes import config as kconfig
    from kubernetes.client.rest import ApiException

    faults = {"failCreates": [{"match": "persistentvolumeclaims/-x", "status": 504, "times": 1, "stored": True}]}
    sim = kubesim_factory({**cluster(), "faults": faults}, kubelet="none")
    cfg = client.Configuration()
    kconfig.load_kube_config(config_file=str(sim.kubeconfig), client_configuration=cfg)
    core = client.CoreV1Api(client.ApiClient(cfg))
    claim = {"metadata": {"name": "c-x"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                    "resources": {"requests": {"storage": "1Gi"}}}}
    try:
        core.create_namespaced_persistent_volume_claim("default", claim)
        raise AssertionError("the create was answered 201")
    except ApiException as exc:
        assert exc.status == 504 and "Timeout: request did not complete" in str(exc.body), exc
    assert core.read_namespaced_persistent_volume_claim("c-x", "default").metadata.name == "c-x"
    try:
        core.create_namespaced_persistent_volume_claim("default", claim)
        raise AssertionError("the second create was answered 201")
    except ApiException as exc:
        assert exc.status == 409, exc


@pytest.mark.parametrize("stored", ["pods", "persistentvolumeclaims"])
def test_pod_startup_create_stored_then_answered_504_is_the_runs_own(kubesim_factory: Any, run_cp: Any,
                                                                      stored: str) -> None:
    """pod-startup likewise: its pod's create (or, with_volume, its claim's) met 409 for its own object on the retry,
    and the pod failed ('create: 409 Conflict')."""
    faults = {"failCreates": [{"match": f"{stored}/-0002", "status": 504, "times": 1, "stored": True}]}
    sim = kubesim_factory({**cluster(provision=0.02, delete=0.01), "faults": faults}, kubelet="simulated")
    tl = run_cp(spec("pod-startup", count=4, concurrency=2, timeout=30, with_volume=True), kube=sim)
    assert tl.errors() == 0, [(r.name, r.error) for r in tl.objects.values() if r.error]
    assert all("ready" in r.t and "gone" in r.t for r in tl.objects.values())
    if stored == "pods":  # the timed call: held from its first attempt
        (name, why), = tl.retried.items()
        assert name.endswith("-0002") and why == f"create: 504 Gateway Timeout ({HELD})", tl.retried
    assert tl.left_behind == 0 and leftovers(sim.kubeconfig) == []


def test_a_leftover_of_an_earlier_execution_of_the_run_is_not_taken_for_its_own(kubesim_factory: Any,
                                                                                 run_cp: Any) -> None:
    """Review r1: the same run executed again (a runner restarted mid-run) finds a claim its earlier execution left,
    with the same name and run label. Its create answered 504 without storing it and sent again met 409 for that
    leftover, which was adopted as the run's own claim (its old uid, events and times). Only this execution's
    podtax.io/attempt annotation makes a claim its own: the leftover is a collision, said with the fix."""
    from podtax import config
    from podtax.template_params import VolumeChurn
    from podtax_runner.controlplane.common import Context
    from podtax_runner.controlplane.kvolumes import claim_manifest

    faults = {"failCreates": [{"match": "persistentvolumeclaims/-0002", "status": 504, "times": 1}]}  # not stored
    sim = kubesim_factory({**cluster(provision=0.05, delete=0.02), "faults": faults}, kubelet="none")
    run = spec("volume-churn", count=3, concurrency=1, timeout=30)
    ns = config.load(config.RunnerSettings).runner_namespace  # the run's namespace
    earlier = Context(run, ns, 0.0)  # the earlier execution: same run, its own attempt
    name = earlier.name("vc", 2)
    sim.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}, namespace="")
    sim.create(claim_manifest(earlier, name, VolumeChurn(**run.params)), ns)  # directly: the fault is the run's
    tl = run_cp(run, kube=sim)
    left = tl.objects[name]
    assert left.error and "exists already, left by an earlier run of campaign cp" in left.error, left.error
    assert "api_accepted" not in left.t and left.server == {}, (left.t, left.server)  # none of its times adopted
    assert sum(r.error is None for r in tl.objects.values()) == 2
