"""A run whose volume an allocation claims while it runs (Nomad's `volume in use` on its delete, nomadsim's claim):
before, the run's own report said only 'LEFT_BEHIND: 1 objects were not deleted; run `podtax volumes cleanup`' and
the volume's error 'delete: 500 volume in use: ...', a cleanup that is refused again while the claim stands. Now both
say what holds it and how to free it, in `podtax volumes cleanup`'s words (podtax.nomad_in_use). Through the real
runner and parser against nomadsim."""

from __future__ import annotations

from typing import Any

import pytest
from podtax.nomad_in_use import HOLDS
from podtax.parsers import timeline as parser

from tests.controlplane.conftest import spec

PLUGIN = {"id": "hostpath", "provider": "hostpath.csi.podtax.io", "createLatency": 0.0, "deleteLatency": 0.0}


def test_a_volume_claimed_during_the_run_says_what_holds_it_in_the_run_report(
        nomadsim_factory: Any, run_cp: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    sim = nomadsim_factory({"plugins": [PLUGIN]})
    state = sim.sim.state
    create = state.create

    async def create_then_claim(namespace: str, vols: list[dict[str, Any]]) -> Any:
        out = await create(namespace, vols)  # a job that uses the -0002 volume starts as soon as it exists
        for vol in out[0]:
            if vol["ID"].endswith("-0002"):
                state.claim(namespace, vol["ID"], "alloc-1")
        return out

    monkeypatch.setattr(state, "create", create_then_claim)
    tl = run_cp(spec("volume-churn", env="nomad", campaign="inuse", count=4, concurrency=2, timeout=30,
                     plugin_id="hostpath"), nomad=sim)
    failed = {n: r.error for n, r in tl.objects.items() if r.error}
    assert [n[-5:] for n in failed] == ["-0002"], failed
    vol, error = next(iter(failed.items()))
    assert error.startswith(f"delete: 500 volume in use: {vol}") and error.endswith(HOLDS), error
    assert tl.left_behind == 1 and [v["ID"] for v in sim.volumes()] == [vol]
    flags = parser.parse(tl.jsonl(), "volume-churn").flags
    left = [f for f in flags if f.startswith("LEFT_BEHIND: ")]
    assert len(left) == 1 and left[0].startswith("LEFT_BEHIND: 1 objects were not deleted;"), flags
    assert f"{vol}: volume in use: {HOLDS}" in left[0], left[0]
