"""requests_per_object counted the run's set-up checks too (the storage class list and the namespace's create on
Kubernetes; the plugin check and the list of existing volumes on Nomad): a few requests a run whatever its count, so
the figure fell with the count (2 of them: +0.2 at count 10, +0.02 at 100) and differed between the backends by their
checks, not by their per-object work. The timeline now counts them apart (summary setup_requests), and
requests_per_object is the run's work over its objects: the creates, the deletes and the watches, lists or polls that
time them. The server's counter is scraped once the set-up is done, so server_requests_per_object leaves it out too.
Real kubesim and nomadsim, the real runner and the timeline parser."""

from __future__ import annotations

import json
from typing import Any

import pytest
from podtax.parsers import timeline as parser

from tests.controlplane.conftest import cluster, spec
from tests.controlplane.test_cp_given_up_nomad import PLUGIN

COUNT = 10


def _summary(tl: Any) -> dict[str, Any]:
    return json.loads(tl.jsonl().splitlines()[-1])


def test_kubernetes_setup_is_not_per_object(kubesim_factory: Any, run_cp: Any) -> None:
    sim = kubesim_factory(cluster(), kubelet="none")
    tl = run_cp(spec("volume-churn", count=COUNT, concurrency=2, timeout=30), kube=sim)
    summary = _summary(tl)
    assert summary["requests"]["create"] == COUNT, summary  # before: COUNT + 1, the namespace's
    setup = summary["setup_requests"]
    assert setup == {"list": 1, "create": 1}, setup  # the storage classes, the namespace
    parsed = parser.parse(tl.jsonl(), "volume-churn").values()
    assert parsed["requests_per_object"] == pytest.approx(sum(summary["requests"].values()) / COUNT)
    # the work only: a create and a delete per claim, two watches (claims, PVs) and their lists
    assert parsed["requests_per_object"] == pytest.approx((2 * COUNT + 4) / COUNT), summary
    server = parsed.get("server_requests_per_object")
    assert server is not None and server <= parsed["requests_per_object"], (server, summary["apiserver"])


def test_nomad_setup_is_not_per_object(nomadsim_factory: Any, run_cp: Any) -> None:
    sim = nomadsim_factory({"plugins": [PLUGIN]})
    tl = run_cp(spec("volume-churn", env="nomad", campaign="setup", count=COUNT, concurrency=2, timeout=30,
                     plugin_id="hostpath"), nomad=sim)
    summary = _summary(tl)
    # the plugin check, the namespace's, the existing volumes
    assert summary["setup_requests"] == {"get": 2, "list": 1}, summary
    assert summary["requests"]["get"] == 0 and summary["requests"]["list"] == 0, summary  # before: 1 and 1
    parsed = parser.parse(tl.jsonl(), "volume-churn").values()
    assert parsed["requests_per_object"] == pytest.approx(2.0), summary  # a create and a delete per volume
