"""A claim's DELETE answered 429 (Retry-After 2: nothing done) while another client deletes the claim: the DELETE
sent again meets 404, the claim gone by another's hand (gone_early: failed, its times not counted). Review r4 of
546def3e: _delete took a 404 for gone-early only at the first attempt (podtax_sent == 1), so this claim was counted
as deleted by the run, its `deleted` holding the other client's deletion. Now: also when every earlier attempt was
answered with one that did nothing (retry.did_nothing). Real kubernetes client and executor against kubesim's
failDeletes; the other client is the real client from a thread."""

from __future__ import annotations

from typing import Any

import kubernetes
from podtax_runner.controlplane.kubeapi import Kube

from tests.controlplane.conftest import another_client, cluster, ours, spec


def test_a_claim_deleted_by_another_while_its_delete_was_throttled_is_gone_early(kubesim_factory: Any,
                                                                                  run_cp: Any) -> None:
    fail = {"match": "persistentvolumeclaims/-0002", "status": 429, "times": 1, "retryAfter": 2}
    sim = kubesim_factory({**cluster(), "faults": {"failDeletes": [fail]}}, kubelet="none")
    core = kubernetes.client.CoreV1Api(sim.api_client())

    def delete_once_throttled() -> str | None:  # once the run's DELETE got its 429, delete the claim
        if not (Kube(sim.api_client()).scrape() or {}).get("DELETE persistentvolumeclaims 429"):
            return None
        (name,) = [o["metadata"]["name"] for o in ours(sim, "persistentvolumeclaims", "podtax-runs")
                   if o["metadata"]["name"].endswith("-0002")]
        core.delete_namespaced_persistent_volume_claim(name, "podtax-runs")
        return name

    with another_client(delete_once_throttled, 0.05) as deleted:
        tl = run_cp(spec("volume-churn", count=4, concurrency=2, timeout=60), kube=sim)
    (name,) = [n for n in tl.objects if n.endswith("-0002")]
    assert deleted == [name]
    rec = tl.objects[name]
    assert rec.error is not None and "not by this run" in rec.error, rec
    assert [n for n, r in tl.objects.items() if r.error] == [name], tl.objects
