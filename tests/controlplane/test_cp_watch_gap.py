"""A watch that drops and comes back timed what happened while it was down when it was back, late by the gap, and
nothing said so. Now the runner's Watcher lists again after a drop and the timeline records the gap and the end
points that re-list saw (summary `watch_gaps`); the parser flags the run WATCH_GAP, naming the figures that are
upper bounds. Against kubesim's planted drop (faults dropWatches, tools/kubesim/README.md), through the real runner,
the real kubernetes client and the timeline parser."""

from __future__ import annotations

from typing import Any

import pytest
from podtax.parsers import timeline as parser

from tests.controlplane.conftest import cluster, spec

COUNT = 6
DOWN_S = 1.0


def test_a_dropped_claim_watch_flags_the_bound_times_seen_after_it(kubesim_factory: Any, run_cp: Any) -> None:
    # the claim watch drops after its first event (a claim's ADDED) and is refused for DOWN_S: the claims turn
    # Bound (0.3 s after their create) while it is down, and only a re-list sees it; the deletes (2 s) outlast it
    drop = {"resource": "persistentvolumeclaims", "afterEvents": 1, "downSeconds": DOWN_S}
    sim = kubesim_factory({**cluster(provision=0.3, delete=2.0), "faults": {"dropWatches": [drop]}})
    tl = run_cp(spec("volume-churn", count=COUNT, concurrency=COUNT, timeout=30), kube=sim)
    assert all(r.error is None and "bound" in r.t for r in tl.objects.values()), tl.jsonl()
    gaps = [g for g in tl.watch_gaps if g["late"]]
    assert [g["watch"] for g in gaps] == ["claim"], tl.watch_gaps
    gap = gaps[0]
    assert gap["end"] - gap["start"] > DOWN_S / 2, gap  # refused DOWN_S after the server dropped it
    late = {n for n, points in gap["late"].items() if "bound" in points}
    assert len(late) >= COUNT - 1, gap  # all but perhaps the first claim turned Bound in the gap
    for name in late:  # timed when the re-list saw it: after the gap's start, at or after its end's list
        assert gap["start"] <= tl.objects[name].t["bound"] <= gap["end"], (name, tl.objects[name].t, gap)
    parsed = parser.parse(tl.jsonl(), "volume-churn")
    flag = next((f for f in parsed.flags if f.startswith("WATCH_GAP: ")), None)
    assert flag is not None, parsed.flags
    named = flag.removeprefix("WATCH_GAP: ").split(";", 1)[0].split(", ")
    assert {"bound_p50_ms", "bound_max_ms"} <= set(named), flag
    assert "the claim watch was down" in flag and "object(s)' bound" in flag, flag
    assert not any(m.startswith("provisioned_") for m in named), flag  # the PV watch saw pv_created live


def test_a_dropped_pv_watch_flags_the_pv_deletes_seen_after_it(kubesim_factory: Any, run_cp: Any) -> None:
    # the PV watch drops after its first event (a PV's ADDED) and is refused for DOWN_S: the claims are Bound (the
    # claim watch marks pv_created too) and deleted, their PVs gone 0.2 s after, all while it is down
    drop = {"resource": "persistentvolumes", "afterEvents": 1, "downSeconds": DOWN_S}
    sim = kubesim_factory({**cluster(provision=0.05, delete=0.2), "faults": {"dropWatches": [drop]}})
    tl = run_cp(spec("volume-churn", count=COUNT, concurrency=COUNT, timeout=30), kube=sim)
    assert all(r.error is None and "pv_gone" in r.t for r in tl.objects.values()), tl.jsonl()
    gaps = [g for g in tl.watch_gaps if g["late"]]
    assert {g["watch"] for g in gaps} == {"PV"}, tl.watch_gaps
    late = {n for g in gaps for n, points in g["late"].items() if "pv_gone" in points}
    assert len(late) >= COUNT // 2, gaps  # the PVs went while the watch was down (0.25 s after, of 1 s down)
    flag = next((f for f in parser.parse(tl.jsonl(), "volume-churn").flags if f.startswith("WATCH_GAP: ")), "")
    assert {"pv_deleted_p50_ms", "pv_deleted_max_ms"} <= set(flag[11:].split(";", 1)[0].split(", ")), flag
    assert "the PV watch" in flag and "pv_gone" in flag, flag


def test_no_drop_no_gap(kubesim_factory: Any, run_cp: Any) -> None:
    sim = kubesim_factory(cluster(provision=0.05, delete=0.01))
    tl = run_cp(spec("volume-churn", count=3, concurrency=3, timeout=30), kube=sim)
    assert tl.watch_gaps == []
    assert not any(f.startswith("WATCH_GAP") for f in parser.parse(tl.jsonl(), "volume-churn").flags)


@pytest.mark.parametrize("bad", [{"resource": "pods", "afterEvents": -1}, {"resource": ""}, ["pods"],
                                 {"resource": "pods", "downSeconds": "2"}, {"resource": "pods", "after": 1}])
def test_the_drop_knob_refuses_malformed_entries(bad: Any) -> None:
    from podtax_kubesim.faults import DROP, parse

    with pytest.raises(ValueError, match="dropWatches"):
        parse({"faults": {"dropWatches": [bad]}}, extra=(DROP,))
    assert parse({"faults": {"dropWatches": [{"resource": "pods", "afterEvents": 2}]}}, extra=(DROP,)).drop_watches
    with pytest.raises(ValueError, match="unknown keys"):  # nomadsim's (no watches): refused, not ignored
        parse({"faults": {"dropWatches": [{"resource": "volumes"}]}}, extra=("refuseCreatesAfter",))
