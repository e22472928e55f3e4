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


def test_every_controller_lacking_create_delete_is_refused(nomadsim_factory: Any, run_cp: Any) -> None:
    sim = nomadsim_factory({"plugins": [{"id": "nfs", "controllers": {"healthy": 2, "expected": 2},
                                         "supportsCreateDelete": [False, False]}]})
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", env="nomad", campaign="nocreate", count=4, concurrency=2, plugin_id="nfs"),
               nomad=sim)
    assert info.value.reason == "plugin-cannot-create", (info.value.reason, info.value.detail)
    assert sim.volumes() == []


def test_controllers_that_differ_are_said_not_refused(nomadsim_factory: Any, run_cp: Any,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    """Nomad asks one controller whether the plugin creates volumes (CSIPlugin.HasControllerCapability: the first of a
    Go map, in no fixed order): the check read the first in the JSON's order and refused a plugin whose first
    controller lacked CREATE_DELETE_VOLUME while another had it (review r2). Now only a plugin none of whose controllers
    has it is refused; controllers that differ are said (some creates may be refused), and the run goes on."""
    sim = nomadsim_factory({"plugins": [{"id": "nfs", "controllers": {"healthy": 2, "expected": 2},
                                         "supportsCreateDelete": [False, True]}]})
    tl = run_cp(spec("volume-churn", env="nomad", campaign="mixed", count=4, concurrency=2, plugin_id="nfs"),
                nomad=sim)
    assert len(tl.objects) == 4
    said = [r.getMessage() for r in caplog.records if "controllers support creating volumes" in r.getMessage()]
    assert said == ["CSI plugin 'nfs': 1 of its 2 controllers support creating volumes (CREATE_DELETE_VOLUME), the "
                    "others not; Nomad asks one of them, in no fixed order, so some creates may be refused 'plugin "
                    "does not support creating volumes': run one version of the plugin"], said


@pytest.mark.parametrize("controllers,reason,says", [
    # a controller plugin whose controller job is pending: Nomad's state reads ControllerRequired false until a
    # controller fingerprints (nomad/structs/csi.go AddPlugin), ControllersExpected from the job
    ({"healthy": 0, "expected": 2}, "plugin-unhealthy",
     "CSI plugin 'nfs': its controller is not running yet (0/2): wait for or start its controller job"),
    ({"healthy": 0, "expected": 0}, "plugin-cannot-create",
     "CSI plugin 'nfs' runs no controller (a node-only plugin: ControllerRequired false)"),
])
def test_a_controller_not_running_yet_is_not_called_node_only(controllers: dict[str, int], reason: str, says: str,
                                                              nomadsim_factory: Any, run_cp: Any) -> None:
    """The check called a plugin whose controller had not started 'a node-only plugin, set plugin_id to another
    plugin' (review r2): ControllerRequired false with ControllersExpected > 0 is a controller not running yet."""
    sim = nomadsim_factory({"plugins": [{"id": "nfs", "provider": "nfs.csi.k8s.io", "controllers": controllers,
                                         "controllerRequired": False}]})
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", env="nomad", campaign="x", count=4, concurrency=2, plugin_id="nfs"), nomad=sim)
    assert info.value.reason == reason and says in info.value.detail, (info.value.reason, info.value.detail)
    assert not [c for c in sim.controller_calls() if c.op == "create"] and sim.volumes() == []
