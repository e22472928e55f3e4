"""A Nomad CSI plugin that cannot create volumes (its controller lacks CREATE_DELETE_VOLUME, or it runs no controller)
is refused by the plugin check, before anything is sent, naming the fix, as the check's docstring promised. Before,
the check read only ControllersHealthy: every create was answered 500 'plugin does not support creating volumes'
(nomad/csi_endpoint.go Create, HasControllerCapability) until 11 had failed, and the run ended 'Nomad refused 11 of 20
requests', the plugin's capability unnamed. Through the real runner and httpx client against nomadsim."""

from __future__ import annotations

from typing import Any

import pytest
from podtax_runner.controlplane.common import Aborted

from tests.controlplane.conftest import spec

CASES = {
    "no create/delete capability": ({"supportsCreateDelete": False}, "does not support creating volumes"),
    "no controller": ({"controllers": {"healthy": 0, "expected": 0}, "controllerRequired": False},
                      "runs no controller"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_plugin_that_cannot_create_volumes_is_refused_first(case: str, nomadsim_factory: Any, run_cp: Any) -> None:
    config, says = CASES[case]
    sim = nomadsim_factory({"plugins": [{"id": "nfs", "provider": "nfs.csi.k8s.io", **config}]})
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", env="nomad", campaign="nocreate", count=20, concurrency=4, plugin_id="nfs"),
               nomad=sim)
    assert info.value.reason == "plugin-cannot-create", (info.value.reason, info.value.detail)
    assert f"CSI plugin 'nfs' {says}" in info.value.detail and "plugin_id" in info.value.detail, info.value.detail
    assert not [c for c in sim.controller_calls() if c.op == "create"] and sim.volumes() == []
