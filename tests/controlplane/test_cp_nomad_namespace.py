"""A Nomad volume-churn run into a namespace Nomad does not have (a typo in the template's `namespace`, or in
PODTAX_RUNNER_NOMAD_NAMESPACE). Nomad checks a created volume's namespace only when it registers it, after its plugin
made it (nomad/csi_endpoint.go Create, then the state store's UpsertCSIVolume: `volume X is in nonexistent namespace
N`, in a multierror, 500): each create left a volume in the storage that Nomad does not know of, so no cleanup through
Nomad's API finds it, and the run ended as api-errors after 11 volumes, no fix named. Now the run checks its namespace
first (GET /v1/namespace/:name) and ends before anything is made, naming Nomad's namespaces and the fix."""

from __future__ import annotations

from typing import Any

import pytest
from podtax_runner.controlplane.common import Aborted

from tests.controlplane.conftest import spec

PLUGIN = {"id": "hostpath", "provider": "hostpath.csi.podtax.io"}


def test_a_namespace_nomad_lacks_ends_the_run_before_any_create(nomadsim_factory: Any, run_cp: Any) -> None:
    sim = nomadsim_factory({"namespaces": ["batch"], "plugins": [PLUGIN]})
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", env="nomad", count=20, plugin_id="hostpath", namespace="bacth"), nomad=sim)
    reason, detail = info.value.reason, info.value.detail
    assert reason == "namespace-missing", (reason, detail)
    assert "\n" not in detail and "'bacth'" in detail and "namespaces: batch, default" in detail, detail
    assert "nomad namespace apply bacth" in detail and "nothing was created" in detail, detail
    # no volume was asked of the plugin: none left in the storage, unknown to Nomad (before: 20, as many as volumes)
    assert sim.controller_calls() == [] and sim.orphans() == [] and sim.volumes() == []


def test_a_namespace_nomad_has_is_used(nomadsim_factory: Any, run_cp: Any) -> None:
    sim = nomadsim_factory({"namespaces": ["batch"], "plugins": [PLUGIN]})
    tl = run_cp(spec("volume-churn", env="nomad", count=3, plugin_id="hostpath", namespace="batch"), nomad=sim)
    assert tl.errors() == 0 and tl.left_behind == 0 and all("gone" in r.t for r in tl.objects.values())
    assert [c.op for c in sim.controller_calls()] == ["create"] * 3 + ["delete"] * 3 and sim.orphans() == []
