"""A Nomad volume deleted by another client before the run deletes it fails, named so, in no phase, as a Kubernetes
claim deleted early does (test_cp_claim_deleted_early): its delete's first answer `volume not found` is not the run's
delete. Before, that answer marked the volume gone and timed it as a pv_deleted of a few ms (the round trip of a
404-like 500), lowering the Nomad side's pv_deleted figures by a delete it never made. A `volume not found` after a
retry (a first attempt that got a 5xx or no answer) stays the run's own delete. The real runner and httpx client
against nomadsim."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from podtax.parsers import timeline as parser
from podtax_runner.controlplane import nomad
from podtax_runner.controlplane.timeline import run_label

from tests.controlplane.conftest import spec

PLUGIN = {"id": "hostpath", "provider": "hostpath.csi.podtax.io", "createLatency": 0.01, "deleteLatency": 0.05}


def test_a_nomad_volume_deleted_by_another_fails_and_is_not_timed(nomadsim_factory: Any, run_cp: Any,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    sim = nomadsim_factory({"plugins": [PLUGIN]})
    run = spec("volume-churn", env="nomad", campaign="early", count=10, concurrency=2, timeout=30,
               plugin_id="hostpath")
    taken = f"podtax-early-{run_label(run.run_id)}-0003"
    real = nomad.Nomad.request

    def request(self: nomad.Nomad, verb: str, method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        """FAULT INJECTION: another client (an operator's `nomad volume delete`) deletes volume 0003 as soon as
        the run's create of it was answered, before the run's deletes begin."""
        out = real(self, verb, method, path, *args, **kwargs)
        if method == "PUT" and path == f"/v1/volume/csi/{taken}/create":
            httpx.delete(f"{sim.url}/v1/volume/csi/{taken}/delete", timeout=10).raise_for_status()
        return out

    monkeypatch.setattr(nomad.Nomad, "request", request)
    tl = run_cp(run, nomad=sim)
    failed = {n: r.error for n, r in tl.objects.items() if r.error}
    assert list(failed) == [taken], failed
    assert "not by this run" in (failed[taken] or ""), failed
    rec = tl.objects[taken]
    assert "api_accepted" in rec.t and "gone" in rec.t  # not waited for, not left behind
    values = parser.parse(tl.jsonl(), "volume-churn", {"count": 10}).values()
    assert values["objects_ok"] == 9 and values["errors"] == 1, values
    assert tl.left_behind == 0 and sim.volumes() == []
