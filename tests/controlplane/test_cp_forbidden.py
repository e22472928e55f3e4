"""An API that refuses the runner's account (RBAC: 401/403) ends the run at once, in one line with the server's
message and what to grant, whichever call it refuses. Before: a refused list of PVs (a namespaced Role cannot read
the cluster-scoped PVs) escaped as executor-error with the client's multi-line dump of headers and body; a refused
create or delete failed its object until 11 had ("the API refused 11 of 20 requests (last: create: 403
Forbidden)", no fix named); a refused watch was retried every 2 s for the whole run, the claims seen only by the
re-lists. Against kubesim's fault forbid (RBAC's 403), through the real runner and the real kubernetes client."""

from __future__ import annotations

from typing import Any

import pytest
from podtax import config
from podtax_runner.controlplane.common import Aborted
from podtax_runner.controlplane.execute import execute
from podtax_runner.controlplane.nomad import NomadConfig

from tests.controlplane.conftest import cluster, ours, spec


@pytest.mark.parametrize("forbid", ["list persistentvolumes", "create persistentvolumeclaims",
                                    "watch persistentvolumeclaims"])
def test_a_forbidden_call_ends_the_run_in_one_line_naming_what_to_grant(forbid: str, kubesim_factory: Any,
                                                                         run_cp: Any) -> None:
    sim = kubesim_factory({**cluster(), "faults": {"forbid": [forbid]}}, kubelet="none")
    with pytest.raises(Aborted) as err:
        run_cp(spec("volume-churn", count=20, concurrency=4, timeout=30), kube=sim)
    verb, resource = forbid.split()
    detail = err.value.detail
    assert err.value.reason == "kubernetes-forbidden", (err.value.reason, detail)
    assert "\n" not in detail and f'cannot {verb} resource "{resource}"' in detail, detail
    assert "grant the account of the runner's kubeconfig" in detail, detail
    assert ours(sim, "persistentvolumeclaims") == [] and ours(sim, "persistentvolumes") == []  # all deleted


def test_a_nomad_token_that_may_only_read_ends_the_run_at_once(nomadsim_factory: Any) -> None:
    """Before: each create answered 403 Permission denied failed its volume until 11 had ("Nomad refused 11 of 20
    requests (last: create: 403 Permission denied)"), no fix named."""
    nomad = nomadsim_factory({"acl": {"token": "s3cret", "readToken": "r3ad"}})
    settings = config.load(config.RunnerSettings)
    with pytest.raises(Aborted) as err:
        execute(spec("volume-churn", env="nomad", count=20, concurrency=4, timeout=30, plugin_id="hostpath"), settings,
                nomad_cfg=NomadConfig(address=nomad.url, token="r3ad"))
    assert err.value.reason == "nomad-forbidden", (err.value.reason, err.value.detail)
    assert "Permission denied" in err.value.detail and "PODTAX_RUNNER_NOMAD_TOKEN" in err.value.detail
    assert "\n" not in err.value.detail


def test_a_nomad_region_it_does_not_know_ends_the_run_in_one_line_naming_the_setting(nomadsim_factory: Any) -> None:
    """Nomad answers a request for another region 500 'No path to region': it was sent 3 times and escaped as
    executor-error 'NomadError: 500 No path to region', the setting to fix unnamed."""
    nomad = nomadsim_factory({})
    with pytest.raises(Aborted) as err:
        execute(spec("volume-churn", env="nomad", count=5, timeout=30, plugin_id="hostpath"),
                config.load(config.RunnerSettings), nomad_cfg=NomadConfig(address=nomad.url, region="mars"))
    assert err.value.reason == "nomad-error", (err.value.reason, err.value.detail)
    assert "No path to region" in err.value.detail and "PODTAX_RUNNER_NOMAD_REGION" in err.value.detail
