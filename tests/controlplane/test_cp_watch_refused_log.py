"""A watch the API refuses while it restarts (503) is retried and said in one log line, with the server's words.
Before, the line held the kubernetes client's own text of the refusal, five lines of status, reason, every header and
the body: `watch claim: ApiException: (503)\\nReason: Service Unavailable\\nHTTP response headers: ...`. Against
kubesim's fault dropWatches (the watch refused for downSeconds), the real client and executor."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.controlplane.conftest import cluster, spec


def test_a_refused_watch_is_said_in_one_line(kubesim_factory: Any, run_cp: Any,
                                              caplog: pytest.LogCaptureFixture) -> None:
    drop = {"resource": "persistentvolumeclaims", "afterEvents": 2, "downSeconds": 1.0}
    sim = kubesim_factory({**cluster(provision=0.05), "faults": {"dropWatches": [drop]}}, kubelet="none")
    with caplog.at_level(logging.WARNING, logger="podtax.runner.controlplane"):
        run_cp(spec("volume-churn", count=10, concurrency=2, timeout=60), kube=sim)
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("watch claim: ")]
    assert said, [r.getMessage() for r in caplog.records]
    for line in said:
        assert "\n" not in line and "503 Service Unavailable: watches of persistentvolumeclaims are down" in line, line
