"""A Nomad volume-churn run refused 403: the fix names what the refused call needs. A run asks Nomad for its plugin
(GET /v1/plugin/csi/:id: `plugin { policy = "read" }`), its namespace (a capability in it), its volumes
(csi-list-volume) and creates and deletes them (csi-write-volume, and plugin read: nomad/csi_endpoint.go). Before,
every 403 said 'set PODTAX_RUNNER_NOMAD_TOKEN to a token allowed csi-write-volume': a token holding csi-write-volume
but not plugin read was told to get what it had, and a mistyped or expired token ('ACL token not found') was told
its policy lacked a capability. Real HTTP against nomadsim (its ACL tokens, and failRequests' 403 `Permission
denied`, Nomad's answer for a policy without the capability)."""

from __future__ import annotations

from typing import Any

import pytest
from podtax import config
from podtax_runner.controlplane.common import Aborted
from podtax_runner.controlplane.execute import execute
from podtax_runner.controlplane.nomad import NomadConfig

from tests.controlplane.conftest import spec

PLUGIN = {"id": "hostpath", "provider": "hostpath.csi.podtax.io"}
POLICY = 'namespace "default" { capabilities = ["csi-write-volume", "csi-list-volume"] } and plugin { policy = "read" }'


def refused(sim: Any, token: str | None = None) -> Aborted:
    with pytest.raises(Aborted) as info:
        execute(spec("volume-churn", env="nomad", count=5, timeout=30, plugin_id="hostpath"),
                config.load(config.RunnerSettings), nomad_cfg=NomadConfig(address=sim.url, token=token))
    assert info.value.reason == "nomad-forbidden" and "\n" not in info.value.detail, info.value.detail
    return info.value


@pytest.mark.parametrize(("route", "needs"), [
    ("GET /v1/plugin/csi/:id", 'it needs plugin { policy = "read" }'),
    ("GET /v1/namespace/:name", "it needs a capability in namespace default"),
    ("GET /v1/volumes", "it needs csi-list-volume in namespace default"),
])
def test_a_set_up_call_refused_names_what_it_needs(nomadsim_factory: Any, route: str, needs: str) -> None:
    sim = nomadsim_factory({"plugins": [PLUGIN], "faults": {"failRequests": [
        {"request": route, "status": 403, "times": 0}]}})
    detail = refused(sim).detail
    assert "Permission denied" in detail and needs in detail and POLICY in detail, detail
    assert sim.volumes() == [] and sim.controller_calls() == []


def test_a_token_that_may_only_read_is_told_csi_write_volume(nomadsim_factory: Any) -> None:
    sim = nomadsim_factory({"plugins": [PLUGIN], "acl": {"token": "s3cret", "readToken": "r3ad"}})
    detail = refused(sim, "r3ad").detail
    assert "the run's create of podtax-" in detail and "it needs csi-write-volume in namespace default" in detail
    assert POLICY in detail, detail


def test_a_token_nomad_does_not_know_is_said_to_be_unknown(nomadsim_factory: Any) -> None:
    sim = nomadsim_factory({"plugins": [PLUGIN], "acl": {"token": "s3cret"}})
    detail = refused(sim, "s3crett").detail
    assert "ACL token not found" in detail and "mistyped, expired or deleted" in detail, detail
    assert "capabilities" not in detail, detail  # not a policy's lack
