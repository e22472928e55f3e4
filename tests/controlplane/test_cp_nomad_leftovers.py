"""A Nomad run whose volumes exist already (left by an earlier attempt of the run): their creates are not sent (Nomad
would answer an identical create 200 without creating it), and each fails. Past the run's allowance of failures the
run ended 'api-errors: Nomad refused 11 of 20 requests (last: create: volume ... exists already ...)', though not one
of those creates was sent. Now it ends before anything is sent, reason `leftovers`, naming them and the cleanup
command; a run within the allowance that then meets refusals says the leftovers apart. Through the real runner
against nomadsim."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from podtax_nomadsim.state import NomadError
from podtax_runner.controlplane.common import Aborted
from podtax_runner.controlplane.timeline import run_label

from tests.controlplane.conftest import spec

PLUGIN = {"id": "hostpath", "provider": "hostpath.csi.podtax.io", "createLatency": 0.0, "deleteLatency": 0.0}
CAPS = [{"AccessMode": "single-node-writer", "AttachmentMode": "file-system"}]


def _leave(sim: Any, run: Any, numbers: range) -> list[str]:
    ids = [f"podtax-left-{run_label(run.run_id)}-{i:04d}" for i in numbers]
    for vol in ids:
        body = {"Volumes": [{"ID": vol, "Name": vol, "PluginID": "hostpath", "RequestedCapabilities": CAPS}]}
        httpx.put(f"{sim.url}/v1/volume/csi/{vol}/create", json=body).raise_for_status()
    return ids


def test_leftovers_past_the_allowance_end_the_run_before_anything_is_sent(nomadsim_factory: Any,
                                                                          run_cp: Any) -> None:
    sim = nomadsim_factory({"plugins": [PLUGIN]})
    run = spec("volume-churn", env="nomad", campaign="left", count=20, concurrency=4, plugin_id="hostpath")
    left = _leave(sim, run, range(1, 12))  # 11 of 20: one more than max(10, 10 %)
    creates = sim.sim.state.create
    sent: list[str] = []

    async def count(namespace: str, vols: list[dict[str, Any]]) -> Any:
        sent.append(vols[0]["ID"])
        return await creates(namespace, vols)

    sim.sim.state.create = count
    with pytest.raises(Aborted) as caught:
        run_cp(run, nomad=sim)
    assert caught.value.reason == "leftovers", caught.value.detail
    assert caught.value.detail.startswith(f"11 of the run's 20 volumes exist already (default/{left[0]}, "
                                          f"default/{left[1]}, default/{left[2]}, ...), left by an earlier run: "
                                          "Nomad would answer their creates without creating them, so none was sent")
    assert "`podtax volumes cleanup --backend nomad --campaign left` once no run of campaign left is in progress" \
        in caught.value.detail
    assert "refused" not in caught.value.detail
    assert sent == [] and sorted(v["ID"] for v in sim.volumes()) == left  # nothing made, nothing else touched


def test_leftovers_within_the_allowance_are_said_apart_from_refusals(nomadsim_factory: Any, run_cp: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    sim = nomadsim_factory({"plugins": [PLUGIN]})
    run = spec("volume-churn", env="nomad", campaign="left", count=20, concurrency=1, plugin_id="hostpath")
    _leave(sim, run, range(1, 6))  # 5 left: within max(10, 10 %); then 6 creates refused end the run
    creates = sim.sim.state.create

    async def refuse(namespace: str, vols: list[dict[str, Any]]) -> Any:
        if int(vols[0]["ID"][-4:]) <= 11:
            raise NomadError("plugin does not support creating volumes")  # a permanent answer: sent once
        return await creates(namespace, vols)

    monkeypatch.setattr(sim.sim.state, "create", refuse)
    with pytest.raises(Aborted) as caught:
        run_cp(run, nomad=sim)
    assert caught.value.reason == "api-errors", caught.value.detail
    assert caught.value.detail.startswith("Nomad refused 6 of 20 requests (last: create: 500 plugin does not support "
                                          "creating volumes; also 5 object(s) not created, not sent: they exist "
                                          "already, left by an earlier run"), caught.value.detail
