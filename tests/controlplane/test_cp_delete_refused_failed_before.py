"""A run whose deletes were refused is a DELETE_REFUSED result only when every object's create and bind came through
and its one error, if any, is its delete's (review r6 on b2cfe80c). The runner deletes every object its API accepted,
so an object that failed before its delete (its consumer's create refused by a webhook, its claim bound to a PV made
beforehand) reached delete_requested too; the parser dropped every error with the delete's and counted the run clean
(no ERRORS, a 2 ms static bind counted a provisioning). Such a run is now refused as a half-created one is. A create
sent again (429) keeps its RETRIED when the object's delete was then sent again too: the delete's reason replaced the
create's in the summary's `retried`, then was dropped with the delete phases. The mark `deletes_refused` is set only
when every failure counted toward the abort was a delete's (RBAC's 403 on a delete ends the run at once: it counts,
a consumer pod's delete's too).
Through the real kubernetes client against kubesim, the real Nomad client against nomadsim, the real executor and
parser."""

from __future__ import annotations

from typing import Any

import pytest
from podtax import events
from podtax.parsers import ParseFailure, parse_run
from podtax_runner.controlplane.common import Aborted
from podtax_runner.controlplane.execute import measured_of
from podtax_runner.controlplane.timeline import Timeline

from tests.controlplane.conftest import cluster, leave_nomad_volume, spec
from tests.controlplane.test_cp_made_before import volume

FORBID_DELETE = ["delete persistentvolumeclaims"]
NOMAD_DELETE_500 = {"request": "DELETE /v1/volume/csi/:id/delete", "status": 500, "times": 0}


def _kept(run_cp: Any, run: events.RunSpec, **backend: Any) -> tuple[Aborted, Timeline]:
    with pytest.raises(Aborted) as err:
        run_cp(run, **backend)
    tl = measured_of(err.value)
    assert tl is not None and tl.aborted is not None, err.value
    return err.value, tl


def _refused(tl: Timeline, reason: str, failed: str) -> None:
    with pytest.raises(ParseFailure) as refused:
        parse_run("volume-churn", tl.jsonl())
    assert refused.value.reason == reason, refused.value
    assert "not every object was created and bound before them (" in refused.value.detail
    assert f" failed before its delete ({failed}" in refused.value.detail, refused.value.detail


def test_a_claim_whose_consumer_a_webhook_refused_is_not_counted_clean(kubesim_factory: Any, run_cp: Any) -> None:
    """The first 3 consumers' creates refused (422, an admission webhook's), then RBAC refuses the first delete, the
    first claim's (one at a time): that claim had been deleted too (its API accepted it). Before: a result with no
    ERRORS and no consumer failure."""
    sim = kubesim_factory({**cluster(provision=0.01), "faults": {
        "forbid": FORBID_DELETE, "failCreates": [{"match": "pods/", "status": 422, "times": 3}]}})
    err, tl = _kept(run_cp, spec("volume-churn", count=12, concurrency=1, timeout=60, consumer=True), kube=sim)
    assert err.reason == "kubernetes-forbidden", err.detail
    assert tl.aborted is not None and tl.aborted["deletes_refused"] is True  # RBAC's 403 on a delete: marked
    failed = [r for r in tl.objects.values() if r.error and r.error.startswith("create consumer: 422")]
    assert len(failed) == 3 and "delete_requested" in failed[0].t, [(r.name, r.error, r.t) for r in failed]
    _refused(tl, "kubernetes-forbidden", "create consumer: 422")


def test_a_claim_bound_to_a_pv_made_beforehand_is_not_counted_a_provisioning(kubesim_factory: Any,
                                                                            run_cp: Any) -> None:
    """One claim binds a PV made by hand (failed: its times are a static bind), then the API answers 500 to every
    delete: 11 refused deletes end the run, every claim's delete sent. Before: a result whose provisioned_min_ms was
    that claim's static bind, no ERRORS."""
    sim = kubesim_factory({**cluster(), "faults": {"failDeletes": [
        {"match": "persistentvolumeclaims/", "status": 500, "times": 0}]}}, kubelet="none")
    sim.create(volume("local-0", "Retain"), namespace="")
    err, tl = _kept(run_cp, spec("volume-churn", campaign="made", count=12, concurrency=4, timeout=120), kube=sim)
    assert err.reason == "api-errors" and "(last: delete: 500" in err.detail, err.detail
    assert tl.aborted is not None and tl.aborted["deletes_refused"] is True  # the claim's failure was not counted
    made = [r for r in tl.objects.values() if r.error and r.error.startswith("bound a PV made beforehand")]
    assert len(made) == 1 and "delete_requested" in made[0].t, [(r.name, r.error) for r in tl.objects.values()]
    _refused(tl, "api-errors", "bound a PV made beforehand (persistentvolume local-0")


def test_a_create_sent_again_keeps_its_retried_when_its_delete_was_sent_again(nomadsim_factory: Any,
                                                                             run_cp: Any) -> None:
    """The first volume's create throttled (429: sent again, re-timed), then Nomad answers 500 to every delete (sent
    again, then refused): a DELETE_REFUSED result that says RETRIED. Before: the delete's reason replaced the
    create's in `retried` and was dropped with the delete phases: no RETRIED. The runner keeps each call's reason
    (test_cp_retried_each_call), and the parser drops the delete's here with its phases."""
    sim = nomadsim_factory({"faults": {"failRequests": [
        {"request": "PUT /v1/volume/csi/:id/create", "status": 429, "times": 1}, NOMAD_DELETE_500]}})
    run = spec("volume-churn", env="nomad", count=12, concurrency=1, timeout=120, plugin_id="hostpath")
    err, tl = _kept(run_cp, run, nomad=sim)
    assert err.reason == "api-errors" and tl.aborted is not None and tl.aborted["deletes_refused"] is True, err.detail
    first = sorted(tl.objects)[0]
    assert "first_request_sent" in tl.objects[first].t and "delete_requested" in tl.objects[first].t
    assert [w.split(":")[0] for w in tl.retried[first]] == ["create", "delete"], tl.retried  # each call's kept
    parsed = parse_run("volume-churn", tl.jsonl())
    assert [f for f in parsed.flags if f.startswith("DELETE_REFUSED: ")], parsed.flags
    retried = [f for f in parsed.flags if f.startswith("RETRIED: ")]
    assert len(retried) == 1 and f"(first: {first}: create: 429 " in retried[0], parsed.flags


def test_a_run_ended_by_consumer_failures_and_one_delete_is_not_marked(kubesim_factory: Any, run_cp: Any) -> None:
    """10 consumers' creates refused (422: the allowance of a run of 20), then the API answers 500 to every claim's
    delete: the 11th failure, a delete's, ends the run. Before, the mark said its deletes were refused (the last
    failure was a delete's); 10 of the 11 failures counted were consumers'."""
    sim = kubesim_factory({**cluster(provision=0.01), "faults": {
        "failCreates": [{"match": "pods/", "status": 422, "times": 10}],
        "failDeletes": [{"match": "persistentvolumeclaims/", "status": 500, "times": 0}]}})
    err, tl = _kept(run_cp, spec("volume-churn", count=20, concurrency=4, timeout=120, consumer=True), kube=sim)
    assert err.reason == "api-errors" and "refused 11 of 20 requests (last: delete: 500" in err.detail, err.detail
    assert tl.aborted is not None and "deletes_refused" not in tl.aborted, tl.aborted
    with pytest.raises(ParseFailure) as refused:
        parse_run("volume-churn", tl.jsonl())
    assert refused.value.reason == "api-errors" and "its deletes were refused" not in refused.value.detail


def test_a_nomad_run_ended_by_a_leftover_and_deletes_is_not_marked(nomadsim_factory: Any, run_cp: Any) -> None:
    """One volume left by an earlier run (failed, counted against the allowance), then 500 to every delete: 10
    deletes and the leftover end the run. Before: marked deletes_refused."""
    sim = nomadsim_factory({"faults": {"failRequests": [NOMAD_DELETE_500]}})
    run = spec("volume-churn", env="nomad", count=12, concurrency=1, timeout=60, plugin_id="hostpath")
    leave_nomad_volume(sim, run, 3)
    err, tl = _kept(run_cp, run, nomad=sim)
    assert err.reason == "api-errors" and "refused 10 of 12 requests (last: delete: " in err.detail, err.detail
    assert tl.aborted is not None and "deletes_refused" not in tl.aborted, tl.aborted


def test_a_pod_startup_run_whose_deletes_rbac_refused_says_ready_not_bound(kubesim_factory: Any,
                                                                          run_cp: Any) -> None:
    """pod-startup's pods are created and Ready, not bound: the flag said 'created and bound' for them."""
    sim = kubesim_factory({**cluster(provision=0.01), "faults": {"forbid": ["delete pods"]}})
    err, tl = _kept(run_cp, spec("pod-startup", count=12, concurrency=4, timeout=60), kube=sim)
    assert err.reason == "kubernetes-forbidden" and tl.aborted is not None and tl.aborted["deletes_refused"] is True
    parsed = parse_run("pod-startup", tl.jsonl())
    flag = [f for f in parsed.flags if f.startswith("DELETE_REFUSED: ")]
    assert len(flag) == 1 and "its 12 objects were all created and Ready, so its figures until then stand" in flag[0]
    assert "bound" not in flag[0], flag
    assert "ready_p50_ms" in parsed.values(), sorted(parsed.values())


def test_a_run_whose_consumer_pods_deletes_rbac_refused_is_a_result(kubesim_factory: Any, run_cp: Any) -> None:
    """An account that may create but not delete, with consumers: RBAC's 403 on the first consumer pod's delete
    (before any claim's) ends the run, every claim bound and every consumer running. Before, kconsumers.delete let
    the ApiException through, made the refusal of the run's own call (`call` ''): not marked, refused by the
    parser."""
    sim = kubesim_factory({**cluster(provision=0.01), "faults": {"forbid": ["delete pods", *FORBID_DELETE]}})
    err, tl = _kept(run_cp, spec("volume-churn", count=12, concurrency=4, timeout=60, consumer=True), kube=sim)
    assert err.reason == "kubernetes-forbidden" and err.call == "delete", (err.reason, err.call, err.detail)
    assert "refused the run (403 Forbidden: pods is forbidden" in err.detail and "volumes cleanup" in err.detail
    assert tl.aborted is not None and tl.aborted.get("deletes_refused") is True, tl.aborted
    assert all("consumer_running" in r.t and "delete_requested" not in r.t for r in tl.objects.values())
    parsed = parse_run("volume-churn", tl.jsonl())
    assert [f for f in parsed.flags if f.startswith("DELETE_REFUSED: ")], parsed.flags
    assert "consumer_running_p50_ms" in parsed.values() and "deleted_p50_ms" not in parsed.values()
