"""A consumer pod's delete that fails after its retries fails its claim, as the claim's own delete failing does, and
counts toward the max(10, 10 %) abort (review r14's question on f82f7ec6). kconsumers.delete let any answer but a 404
or RBAC's 403 through: one pod's DELETE answered 500 three times ended the whole run (12 claims bound, 12 consumers
running), where a claim's failing only fails that claim. Through the real kubernetes client against kubesim, the
real executor and parser."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from podtax.parsers import parse_run
from podtax_runner.controlplane.common import Aborted
from podtax_runner.controlplane.execute import measured_of

from tests.controlplane.conftest import cluster, ours, spec

PROTECTION = "kubernetes.io/pvc-protection"


def test_one_consumer_pods_failed_delete_fails_its_claim_only(kubesim_factory: Any, run_cp: Any) -> None:
    # its first 3 DELETEs (every attempt: kubeapi.ATTEMPTS) answered 500; the cleanup's later delete goes through
    sim = kubesim_factory({**cluster(provision=0.01), "faults": {
        "failDeletes": [{"match": "pods/-0003", "status": 500, "times": 3}]}}, kubelet="simulated")
    tl = run_cp(spec("volume-churn", count=12, concurrency=4, timeout=60, consumer=True), kube=sim)
    failed = {n: r.error for n, r in tl.objects.items() if r.error}
    claim = sorted(tl.objects)[2]
    assert list(failed) == [claim] and str(failed[claim]).startswith("delete: 500 Internal Server Error"), failed
    assert all("gone" in r.t for n, r in tl.objects.items() if n != claim)  # the others deleted and timed
    parsed = parse_run("volume-churn", tl.jsonl())
    assert any(f.startswith("ERRORS") for f in parsed.flags), parsed.flags
    assert parsed.values()["objects_ok"] == 11 and "deleted_p50_ms" in parsed.values(), parsed.values()
    # the cleanup's delete of the pod went through, and then its claim and PV went: nothing left (review r4)
    assert tl.left_behind == 0 and not [f for f in parsed.flags if f.startswith("LEFT_BEHIND")], parsed.flags
    assert not ours(sim, "pods") and not ours(sim, "persistentvolumeclaims") and not ours(sim, "persistentvolumes")


def test_a_consumer_pod_never_deleted_leaves_its_claim_and_pv_named_with_the_cleanup(
        kubesim_factory: Any, run_cp: Any, caplog: Any) -> None:
    """Every DELETE of pod -0003 answered 500 (the cleanup's too): its claim's delete is sent, but the claim stays
    Terminating, held by pvc-protection while the pod stays, and its PV Bound; the three are named left behind with
    the cleanup command (review r4: the docs said the claim was still deleted)."""
    caplog.set_level(logging.INFO)
    sim = kubesim_factory({**cluster(provision=0.01), "faults": {
        "failDeletes": [{"match": "pods/-0003", "status": 500, "times": 0}]}}, kubelet="simulated")
    tl = run_cp(spec("volume-churn", count=12, concurrency=4, timeout=60, consumer=True), kube=sim)
    claim = sorted(tl.objects)[2]
    assert [n for n, r in tl.objects.items() if r.error] == [claim] and "delete_requested" in tl.objects[claim].t
    pod, = [o["metadata"]["name"] for o in ours(sim, "pods")]
    left, = ours(sim, "persistentvolumeclaims")
    assert pod.endswith("-0003") and left["metadata"]["name"] == claim and left["metadata"].get("deletionTimestamp")
    assert [pv["status"]["phase"] for pv in ours(sim, "persistentvolumes")] == ["Bound"]
    cleanup = "remove it with `podtax volumes cleanup --backend kubernetes --campaign cp`"
    said = [r.getMessage() for r in caplog.records if "still present: " in r.getMessage()]
    for what in (f"pod podtax-runs/{pod}: not deleted: its delete was refused: 500",
                 f"persistentvolumeclaim podtax-runs/{claim}: deleting, held by finalizers {PROTECTION}",
                 f"of claim podtax-runs/{claim}"):
        assert any(what in m and cleanup in m for m in said), (what, said)
    assert tl.left_behind == 3
    parsed = parse_run("volume-churn", tl.jsonl())
    assert "LEFT_BEHIND: 3 objects were not deleted; run `podtax volumes cleanup`" in parsed.flags, parsed.flags


def test_consumer_pods_deletes_failing_count_toward_the_abort_as_claims_do(kubesim_factory: Any,
                                                                             run_cp: Any) -> None:
    """Every consumer pod's DELETE answered 500: the 11th of 20 failed ends the run as 11 claims' deletes would
    (api-errors, `call` delete: marked deletes_refused), a DELETE_REFUSED result of its creates and binds."""
    sim = kubesim_factory({**cluster(provision=0.01), "faults": {
        "failDeletes": [{"match": "pods/", "status": 500, "times": 0}]}}, kubelet="simulated")
    with pytest.raises(Aborted) as err:
        run_cp(spec("volume-churn", count=20, concurrency=4, timeout=60, consumer=True), kube=sim)
    assert err.value.reason == "api-errors" and err.value.call == "delete", (err.value.reason, err.value.detail)
    assert "refused 11 of 20 requests (last: delete: 500" in err.value.detail, err.value.detail
    tl = measured_of(err.value)
    assert tl is not None and tl.aborted is not None and tl.aborted.get("deletes_refused") is True, tl and tl.aborted
    parsed = parse_run("volume-churn", tl.jsonl())
    assert [f for f in parsed.flags if f.startswith("DELETE_REFUSED: ")], parsed.flags
    assert "consumer_running_p50_ms" in parsed.values() and "deleted_p50_ms" not in parsed.values()
