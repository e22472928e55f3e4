"""A single GET (sent with retry=False: stored_before, _collision, a poll round, an events list) the API throttles
(429 with Retry-After) is sent again after the wait: a 429 says nothing was done. Review r4 of 546def3e: before, with
urllib3 no longer re-sending it unseen, one GET 429 after a create answered 504 while stored made the run's own
claim fail as '409 Conflict: ... left by an earlier run' (stored_before could not read it), its timings lost.

FAULT INJECTION (labelled): kubesim has no fault for GETs; Server._get answers the claim's first GET with the
API server's 429 (its ApiError, as its failCreates/failDeletes answer); the create's 504 is kubesim's failCreates
stored:true. Real kubernetes client and executor."""

from __future__ import annotations

from typing import Any

import pytest
from podtax_kubesim import server
from podtax_kubesim.util import ApiError

from tests.controlplane.conftest import cluster, spec


def test_a_throttled_get_after_a_stored_create_keeps_the_runs_own_claim(kubesim_factory: Any, run_cp: Any,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    real, left = server.Server._get, [1]

    def throttled(self: Any, request: Any, res: Any, ns: str, name: str) -> Any:
        if res.plural == "persistentvolumeclaims" and name.endswith("-0002") and left[0] > 0:
            left[0] -= 1
            raise ApiError(429, "TooManyRequests", "Too many requests, please try again later.",
                           {"retryAfterSeconds": 1})
        return real(self, request, res, ns, name)

    monkeypatch.setattr(server.Server, "_get", throttled)
    fail = {"match": "persistentvolumeclaims/-0002", "status": 504, "times": 1, "stored": True}
    sim = kubesim_factory({**cluster(), "faults": {"failCreates": [fail]}}, kubelet="none")
    tl = run_cp(spec("volume-churn", count=4, concurrency=2, timeout=60), kube=sim)
    (name,) = [n for n in tl.objects if n.endswith("-0002")]
    rec = tl.objects[name]
    assert left == [0]  # the 429 was answered
    assert rec.error is None and {"api_accepted", "bound", "gone"} <= set(rec.t), rec
    assert tl.requests["get"] == 2, tl.requests  # the throttled GET and the one sent again
