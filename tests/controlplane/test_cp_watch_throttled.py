"""A watch the API throttles (429 TooManyRequests with Retry-After 1: priority and fairness refusing a watch's
initialization) is opened again after the wait the answer asks for. Review r4: Watcher._run waited its own 0.1 s,
then 0.2 s, ignoring Retry-After (the throttled server asked again at once).

FAULT INJECTION (labelled): kubesim has no fault for watches; Streams._watch answers the claims' first 2 watch
requests with the API server's 429 (its ApiError, as its failCreates answer). Real kubernetes client and executor."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from podtax_kubesim import streams
from podtax_kubesim.util import ApiError

from tests.controlplane.conftest import cluster, spec


def test_a_throttled_watch_waits_the_retry_after(kubesim_factory: Any, run_cp: Any, monkeypatch: pytest.MonkeyPatch,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    real, left = streams.Streams._watch, [2]

    async def throttled(self: Any, request: Any, res: Any, ns: Any, name: str) -> Any:
        if res.plural == "persistentvolumeclaims" and left[0] > 0:
            left[0] -= 1
            raise ApiError(429, "TooManyRequests", "Too many requests, please try again later.",
                           {"retryAfterSeconds": 1})
        return await real(self, request, res, ns, name)

    monkeypatch.setattr(streams.Streams, "_watch", throttled)
    sim = kubesim_factory({**cluster(provision=0.05)}, kubelet="none")
    with caplog.at_level(logging.WARNING):
        tl = run_cp(spec("volume-churn", count=10, concurrency=2, timeout=60), kube=sim)
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("watch claim: ")]
    assert len(said) == 2 and all("429 Too Many Requests" in m and "retrying in 1.0 s" in m for m in said), said
    assert left == [0] and not [r.error for r in tl.objects.values() if r.error], tl.objects
