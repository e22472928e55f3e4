"""A run of 10 objects or fewer whose every create is refused ends as failed, naming the API's refusal, on both
backends; and an object's refusal keeps the server's words, whatever its status. Before, the abort came only past
max(10, 10 %) failures, so pod-startup at its default count of 10 with every create refused (500, each sent 3 times)
ended 'done' (the CLI exit 0, a timeline of 10 errors the parser then refused: 'none of the 10 objects completed'),
and an object's error kept the server's words for a 403 only: `create: 500 Internal Server Error` (an admission
webhook's 500 `failed calling webhook ...`, a 400 `admission webhook ... denied the request: ...`, unsaid). Against
kubesim's fault failCreates and nomadsim's failRequests, through the real executors and clients."""

from __future__ import annotations

from typing import Any

import pytest
from podtax_runner.controlplane.common import Aborted

from tests.controlplane.conftest import cluster, ours, spec


def test_every_pod_create_refused_at_the_default_count_fails_the_run(kubesim_factory: Any, run_cp: Any) -> None:
    sim = kubesim_factory({**cluster(), "faults": {"failCreates": [{"match": "pods/", "status": 500}]}},
                          kubelet="none")
    with pytest.raises(Aborted) as err:
        run_cp(spec("pod-startup", count=10, concurrency=4, timeout=60), kube=sim)
    detail = err.value.detail
    assert err.value.reason == "api-errors" and "refused 10 of 10 requests" in detail, (err.value.reason, detail)
    assert "(podtax kubesim fault failCreates)" in detail, detail  # the server's words
    assert ours(sim, "pods") == []


def test_every_nomad_create_refused_fails_the_run(nomadsim_factory: Any, run_cp: Any) -> None:
    fails = [{"request": "PUT /v1/volume/csi/:id/create", "status": 500, "times": 0}]
    nomad = nomadsim_factory({"faults": {"failRequests": fails}})
    with pytest.raises(Aborted) as err:
        run_cp(spec("volume-churn", env="nomad", count=5, concurrency=2, timeout=60, plugin_id="hostpath"),
               nomad=nomad)
    assert err.value.reason == "api-errors" and "Nomad refused 5 of 5" in err.value.detail, err.value.detail
    assert "No cluster leader" in err.value.detail, err.value.detail


def test_a_refused_object_keeps_the_servers_words(kubesim_factory: Any, run_cp: Any) -> None:
    fail = {"match": "persistentvolumeclaims/-0003", "status": 500}
    sim = kubesim_factory({**cluster(), "faults": {"failCreates": [fail]}}, kubelet="none")
    tl = run_cp(spec("volume-churn", count=8, concurrency=2, timeout=60), kube=sim)
    (failed,) = [r for r in tl.objects.values() if r.error]
    assert failed.name.endswith("-0003"), failed.name
    assert failed.error.startswith("create: 500 Internal Server Error: create of persistentvolumeclaims "), failed.error
    assert failed.error.endswith("(podtax kubesim fault failCreates)"), failed.error


def test_one_object_refused_twice_counts_once(kubesim_factory: Any, run_cp: Any) -> None:
    """Review r4 of 3a6ff17f: the rule counted failed calls, not failed objects: claim 0001's consumer create refused
    (500 at every attempt) and then its DELETE refused (500) counted 2 of count 2, and the run was aborted
    ('the API refused 2 of 2 requests') although claim 0002 completed, its timings lost. Now an object counts once."""
    faults = {"failCreates": [{"match": "pods/-0001", "status": 500, "times": 0}],
              "failDeletes": [{"match": "persistentvolumeclaims/-0001", "status": 500, "times": 0}]}
    sim = kubesim_factory({**cluster(), "faults": faults})
    tl = run_cp(spec("volume-churn", count=2, concurrency=2, timeout=60, consumer=True), kube=sim)
    errors = {name[-4:]: rec.error for name, rec in tl.objects.items()}
    assert errors["0002"] is None and "gone" in tl.objects[[n for n in tl.objects if n.endswith("0002")][0]].t, errors
    assert errors["0001"] is not None and errors["0001"].startswith("create consumer: 500"), errors
