"""A DELETE the API throttles (429 with Retry-After; or 503 with it) is sent again by podtax, counted, re-timed from
the attempt that got through and named in `retried` (RETRIED), as a create is. Before, the kubernetes client's urllib3
re-sent it itself (its Retry honours Retry-After on 413/429/503 for an idempotent DELETE or GET), unseen: the claim's
`deleted` held the wait the server asked for (1 s among deletes of 2 ms), said exact, no RETRIED flag, and the
request was not counted (`requests.delete` 4 for 5 DELETEs). Against kubesim's fault failDeletes, through the real
kubernetes client and executor."""

from __future__ import annotations

from typing import Any

import pytest
from podtax_runner.controlplane.kubeapi import Kube

from tests.controlplane.conftest import cluster, spec


@pytest.mark.parametrize("status", [429, 503])
def test_a_throttled_delete_is_timed_from_the_attempt_that_got_through(status: int, kubesim_factory: Any,
                                                                        run_cp: Any) -> None:
    fail = {"match": "persistentvolumeclaims/-0002", "status": status, "times": 1, "retryAfter": 1}
    sim = kubesim_factory({**cluster(), "faults": {"failDeletes": [fail]}}, kubelet="none")
    tl = run_cp(spec("volume-churn", count=4, concurrency=2, timeout=60), kube=sim)
    (name,) = [n for n in tl.objects if n.endswith("-0002")]
    t = tl.objects[name].t
    assert tl.objects[name].error is None and "gone" in t, tl.objects[name]
    assert name in tl.retried and f"delete: {status} " in tl.retried[name], tl.retried
    # re-timed past the Retry-After the server asked for: the wait is not in `deleted`
    assert t["delete_requested"] - t["first_delete_requested"] >= 1.0, t
    counts = Kube(sim.api_client()).scrape() or {}
    assert counts.get(f"DELETE persistentvolumeclaims {status}") == 1, counts
    assert tl.requests["delete"] == 4 + 1, tl.requests  # the refused attempt counted too


def test_a_delete_throttled_three_times_in_a_row_gets_through(kubesim_factory: Any, run_cp: Any) -> None:
    """Review r4 of 546def3e: Kube.call's 3 attempts, where urllib3 had re-sent a throttled DELETE up to 4 times an
    attempt: a DELETE answered 429 three times failed its claim ('delete: 429 Too Many Requests'), its bind timings
    lost. An answer that did nothing (429) is sent again up to THROTTLED_ATTEMPTS times within the run's deadline."""
    fail = {"match": "persistentvolumeclaims/-0002", "status": 429, "times": 3, "retryAfter": 1}
    sim = kubesim_factory({**cluster(), "faults": {"failDeletes": [fail]}}, kubelet="none")
    tl = run_cp(spec("volume-churn", count=4, concurrency=2, timeout=60), kube=sim)
    (name,) = [n for n in tl.objects if n.endswith("-0002")]
    t = tl.objects[name].t
    assert tl.objects[name].error is None and "gone" in t and "bound" in t, tl.objects[name]
    assert t["delete_requested"] - t["first_delete_requested"] >= 3.0, t  # three Retry-After waits
    counts = Kube(sim.api_client()).scrape() or {}
    assert counts.get("DELETE persistentvolumeclaims 429") == 3, counts
    assert tl.requests["delete"] == 4 + 3, tl.requests
