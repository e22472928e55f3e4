"""`podtax volumes cleanup` against a Nomad whose delete of one volume never answers (nomadsim's fault hangDeletes):
the other volumes are removed and the one left is said, with why. An audit: the hung delete raised out of the
cleanup, so the volumes after it in the listing stayed, and the command's one line blamed the address ("could not
clean up nomad (http://...): ReadTimeout: timed out; pass --nomad-addr URL") of a Nomad that was answering."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from podtax_runner.controlplane import nomad
from podtax_runner.volumes_cli import main as volumes

VOLUMES = [f"podtax-old-0123456789-000{i}" for i in range(1, 5)]


def test_a_hung_delete_leaves_only_its_volume(nomadsim_factory: Any, monkeypatch: pytest.MonkeyPatch,
                                              capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(nomad, "TIMEOUT", httpx.Timeout(1.0, connect=1.0))  # 60 s in use; the same rule, shorter
    sim = nomadsim_factory({"faults": {"hangDeletes": ["-0002"]}})
    for vol in VOLUMES:
        body = {"Volumes": [{"ID": vol, "Name": vol, "PluginID": "hostpath",
                             "RequestedCapabilities": [{"AccessMode": "single-node-writer",
                                                        "AttachmentMode": "file-system"}]}]}
        httpx.put(f"{sim.url}/v1/volume/csi/{vol}/create", json=body).raise_for_status()

    # in-process (what `podtax volumes` runs in a child), so the shorter timeout holds
    code = volumes(["cleanup", "--backend", "nomad", "--campaign", "old", "--nomad-addr", sim.url])
    out, err = capfd.readouterr()
    assert sorted(v["ID"] for v in sim.volumes()) == [VOLUMES[1]], (out, err)
    for vol in (VOLUMES[0], VOLUMES[2], VOLUMES[3]):
        assert f"removed nomad volume default/{vol}" in out, out
    assert "nomad: removed 3 object(s), 1 still present" in out, out
    assert f"still present: nomad volume default/{VOLUMES[1]}: its delete got no answer in time" in err, err
    assert "--nomad-addr" not in err, err  # Nomad answered: the address is not the problem
    assert code == 1


def test_deletes_whose_turn_comes_after_the_wait_are_said_not_tried(nomadsim_factory: Any) -> None:
    """More hung deletes than cleanup's 8 workers hold them all until the wait runs out: the deletes after them are
    not sent, and said so (reviewer: they were said to have 'got no answer in time', and counted as hung)."""
    vols = [f"podtax-old-0123456789-{i:04d}" for i in range(1, 11)]
    sim = nomadsim_factory({"faults": {"hangDeletes": [v[-5:] for v in vols[:8]]}})
    for vol in vols:
        body = {"Volumes": [{"ID": vol, "Name": vol, "PluginID": "hostpath",
                             "RequestedCapabilities": [{"AccessMode": "single-node-writer",
                                                        "AttachmentMode": "file-system"}]}]}
        httpx.put(f"{sim.url}/v1/volume/csi/{vol}/create", json=body).raise_for_status()
    n = nomad.Nomad(nomad.NomadConfig(address=sim.url))
    try:
        out = nomad.cleanup(n, "old", wait_s=2.0)
    finally:
        n.close()
    said = dict(r.split(": ", 1) for r in out.remaining)
    assert out.left == 10 and len(said) == 10, out
    assert all(said[f"nomad volume default/{v}"].startswith("its delete got no answer") for v in vols[:8]), said
    for v in vols[8:]:  # before: 'its delete got no answer in time' for deletes never sent
        assert said[f"nomad volume default/{v}"].startswith("not tried: the wait ran out"), said
