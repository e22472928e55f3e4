"""A call refused with a Retry-After waits no longer than its deadline (the run's, or a cleanup delete's share of the
cleanup's wait), and is not sent again past it. Before, retry.call waited what the answer asked (up to 10 s, twice):
with `Retry-After: 10` and a run's timeout of 3 s, the run said "did not finish within 3 s" after 22 s (hR F5), the
claim created at its third attempt, 20 s in. Against kubesim's fault failCreates, the real runner and the real
kubernetes client; the requests kubesim counted show what was sent."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client
from podtax_runner import retry
from podtax_runner.controlplane.apierrors import timed_out
from podtax_runner.controlplane.common import Aborted
from podtax_runner.controlplane.kubeapi import Kube

from tests.controlplane.conftest import cluster, spec

THROTTLED = {"failCreates": [{"match": "persistentvolumeclaims/", "status": 429, "times": 2, "retryAfter": 10}]}


def test_a_retry_after_past_the_run_deadline_ends_the_run_at_it(kubesim_factory: Any, run_cp: Any) -> None:
    sim = kubesim_factory({**cluster(), "faults": THROTTLED}, kubelet="none")
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", count=1, concurrency=1, timeout=3), kube=sim)
    assert info.value.reason == "timeout" and "did not finish within 3 s" in info.value.detail, info.value.detail
    counts = Kube(sim.api_client()).scrape() or {}
    # one create, refused: the wait it asked for (10 s) went past the deadline, so it was not sent again (before: a
    # second 429 at 10 s, then the claim created at 20 s, long after the run's end)
    assert counts.get("POST persistentvolumeclaims 429") == 1, counts
    assert not any(k.startswith("POST persistentvolumeclaims 2") for k in counts), counts


def test_a_call_given_a_share_is_not_sent_again_after_it(kubesim_factory: Any) -> None:
    """A cleanup's delete is given `until` (its share of the wait): a Retry-After past it ends the call then, as a call
    that got no answer in time (timed_out: the cleanup says it HUNG and goes on), not 20 s later."""
    sim = kubesim_factory({**cluster(), "faults": {"failCreates": [
        {"match": "configmaps/", "status": 429, "times": 2, "retryAfter": 10}]}}, kubelet="none")
    kube = Kube(sim.api_client())
    with pytest.raises(retry.Late) as info:
        kube.call("create", kube.core.create_namespaced_config_map, "default", {"metadata": {"name": "c"}},
                  until=time.monotonic() + 0.5)
    assert timed_out(info.value) and "429 Too Many Requests" in str(info.value), info.value
    assert (kube.scrape() or {}).get("POST configmaps 429") == 1
    assert sim.get("configmaps", "c", "default") is None
    assert client.CoreV1Api(sim.api_client()).list_namespaced_config_map("default").items == []
