"""Nomad answers 500 for every error it has no code for, so the runner sends a create again unless its answer is one
of Nomad's permanent ones (nomad.py _PERMANENT). Three of CSIVolume.Create's (hashicorp/nomad nomad/csi_endpoint.go,
nomad/structs/csi.go) were missing: a create naming an existing volume with another name or plugin (Merge's
`volume name cannot be updated`, in a multierror), a volume Validate refuses (`validation: ...`) and a node-only
plugin (`plugin has no controller`). Each was sent 3 times, the same answer each time, and the volume named in the
summary's `retried` as throttled. Through the real runner against nomadsim (its create raising Nomad's words)."""

from __future__ import annotations

from typing import Any

import pytest
from podtax_nomadsim.state import NomadError, multierror

from tests.controlplane.conftest import spec

PLUGIN = {"id": "hostpath", "provider": "hostpath.csi.podtax.io", "createLatency": 0.0, "deleteLatency": 0.0}


@pytest.mark.parametrize("answer", [multierror(["volume name cannot be updated"]),
                                    "validation: must include at least one capability block",
                                    "plugin has no controller"])
def test_a_permanent_create_refusal_is_not_sent_again(nomadsim_factory: Any, run_cp: Any,
                                                      monkeypatch: pytest.MonkeyPatch, answer: str) -> None:
    sim = nomadsim_factory({"plugins": [PLUGIN]})
    state = sim.sim.state
    create = state.create

    async def refuse_0002(namespace: str, vols: list[dict[str, Any]]) -> Any:
        if vols[0]["ID"].endswith("-0002"):
            raise NomadError(answer)
        return await create(namespace, vols)

    monkeypatch.setattr(state, "create", refuse_0002)
    tl = run_cp(spec("volume-churn", env="nomad", campaign="perm", count=4, concurrency=2, timeout=30,
                     plugin_id="hostpath"), nomad=sim)
    failed = {n[-5:]: r.error for n, r in tl.objects.items() if r.error}
    assert list(failed) == ["-0002"] and answer.strip() in failed["-0002"], failed
    summary = tl.summary()
    assert summary["requests"]["create"] == 4, summary["requests"]  # once each: 6 when -0002's was sent 3 times
    assert not summary.get("retried"), summary.get("retried")
    assert sim.volumes() == []
