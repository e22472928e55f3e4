"""Nomad refusing a run's set-up call: the list of the run's volumes (is one left by an earlier run?) answered 500
`No cluster leader` (real Nomad's answer while its servers elect none; nomadsim's fault failRequests). It is retried
as every Nomad call is (kubeapi.ATTEMPTS, the same waits); refused at every attempt, the run ends before anything is
made with reason `nomad-error` in one line naming the call, Nomad's status and words and what to do. Before, the
NomadError escaped the executor and the runner recorded `executor-error` with 'NomadError: 500 No cluster leader'."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from podtax_runner.controlplane.common import Aborted
from podtax_runner.controlplane.kubeapi import ATTEMPTS

from tests.controlplane.conftest import spec

PLUGIN = {"id": "hostpath", "provider": "hostpath.csi.podtax.io"}


def served(url: str, route: str, code: int) -> int:
    """How many requests of `route` nomadsim answered with `code` (its request counter)."""
    text = httpx.get(f"{url}/v1/metrics", params={"format": "prometheus"}).text
    line = f'nomad_http_requests_total{{code="{code}",method="GET",path_template="{route}"}}'
    return sum(int(float(x.split()[-1])) for x in text.splitlines() if x.startswith(line))


def test_a_volume_list_refused_at_every_attempt_ends_the_run_in_one_line(nomadsim_factory: Any, run_cp: Any) -> None:
    fails = [{"request": "GET /v1/volumes", "status": 500, "times": 0}]
    sim = nomadsim_factory({"plugins": [PLUGIN], "faults": {"failRequests": fails}})
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", env="nomad", campaign="leader", count=5, plugin_id="hostpath"), nomad=sim)
    reason, detail = info.value.reason, info.value.detail
    assert reason == "nomad-error", (reason, detail)
    assert "\n" not in detail and detail.startswith(f"Nomad at {sim.url} refused the list of the run's volumes"), detail
    assert "500 No cluster leader" in detail and f"sent {ATTEMPTS} times" in detail, detail
    assert "nothing was created" in detail and "nomad server members" in detail, detail
    assert served(sim.url, "/v1/volumes", 500) == ATTEMPTS  # retried as every Nomad call, no more
    assert sim.volumes() == []


def test_a_volume_list_refused_then_answered_is_retried_and_the_run_goes_on(nomadsim_factory: Any,
                                                                           run_cp: Any) -> None:
    fails = [{"request": "GET /v1/volumes", "status": 500, "times": ATTEMPTS - 1}]
    sim = nomadsim_factory({"plugins": [PLUGIN], "faults": {"failRequests": fails}})
    tl = run_cp(spec("volume-churn", env="nomad", campaign="leader", count=5, plugin_id="hostpath"), nomad=sim)
    assert tl.errors() == 0 and all("gone" in r.t for r in tl.objects.values())
    assert served(sim.url, "/v1/volumes", 500) == ATTEMPTS - 1
    assert tl.setup_requests["list"] == ATTEMPTS  # set-up's, not the run's work
    assert sim.volumes() == []


def test_nomadsim_refuses_a_malformed_fail_entry(nomadsim_factory: Any) -> None:
    with pytest.raises(ValueError, match="failRequests"):
        nomadsim_factory({"faults": {"failRequests": [{"request": "/v1/volumes", "status": 500}]}})
