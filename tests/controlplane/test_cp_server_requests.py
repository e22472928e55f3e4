"""`server_requests_per_object` counts the run's requests as the API server saw them, not the end-of-run cleanup's.
An audit: a run that left one claim behind (its DELETE never answered) waited 30 s for it, LISTing claims, PVs and
pods every 0.2 s; the harness leaves those out of `requests_per_object` (2.3), but the server's counter was scraped
after them, so `server_requests_per_object` read 24.3. Against kubesim's planted hang (faults hangDeletes), through
the real runner and the timeline parser."""

from __future__ import annotations

from typing import Any

import pytest
from podtax.parsers import timeline as parser
from podtax_runner.controlplane import cleanup, common, execute, kubeapi
from podtax_runner.controlplane.timeline import Timeline

from tests.controlplane.conftest import cluster, spec

COUNT = 12


def test_the_server_count_stops_before_the_cleanup(kubesim_factory: Any, run_cp: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kubeapi, "TIMEOUT", (1.0, 1.0))  # the hung DELETE's read timeout (60 s in a run)
    monkeypatch.setattr(common, "GIVE_UP_FLOOR_S", 1.0)
    monkeypatch.setattr(cleanup, "CLEANUP_WAIT_S", 3.0)  # the cleanup waits for the claim left, LISTing
    sim = kubesim_factory({**cluster(provision=0.01, delete=0.01),
                           "faults": {"hangDeletes": ["persistentvolumeclaims/-0005"]}}, kubelet="simulated")
    tl = run_cp(spec("volume-churn", count=COUNT, concurrency=4, timeout=20), kube=sim)
    assert tl.left_behind >= 1, tl.summary()  # the claim whose delete hung (and its PV) stayed: cleanup waited
    parsed = parser.parse(tl.jsonl(), "volume-churn").values()
    server = tl.apiserver["after"]
    assert server.get("LIST persistentvolumeclaims 200", 0) <= tl.requests["list"], server
    # the server saw what the harness sent (a watch counted once by both; the hung DELETE maybe not at all)
    assert parsed["server_requests_per_object"] <= parsed["requests_per_object"], parsed


def test_a_failed_scrape_after_the_set_up_keeps_the_first_one() -> None:
    """The counter is scraped at the start, after the set-up and at the end; when the middle scrape fails (None),
    the run's figure is still there, from the first scrape, rather than lost."""
    scrapes = iter([{"GET pods 200": 2.0}, None, {"GET pods 200": 9.0}])
    tl = Timeline("volume-churn", "kubernetes", {}, "watch")
    measured = execute.server_count(lambda: next(scrapes), tl)
    tl.setup_done()
    measured()
    assert tl.apiserver == {"before": {"GET pods 200": 2.0}, "after": {"GET pods 200": 9.0}}
