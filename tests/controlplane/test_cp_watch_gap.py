"""A watch that drops and comes back timed what happened while it was down when it was back, late by the gap, and
nothing said so. Now the runner's Watcher lists again after a drop and the timeline records the gap and the end
points that re-list saw (summary `watch_gaps`); the parser flags the run WATCH_GAP, naming the figures that are
upper bounds. Against kubesim's planted drop (faults dropWatches, tools/kubesim/README.md), through the real runner,
the real kubernetes client and the timeline parser."""

from __future__ import annotations

import time
from typing import Any

import pytest
from podtax.parsers import timeline as parser
from podtax_runner.controlplane import kvolumes

from tests.controlplane.conftest import cluster, spec

COUNT = 6
DOWN_S = 1.0


def _dropped(kubesim_factory: Any, run_cp: Any, resource: str, provision: float, delete: float,
             point: str) -> tuple[Any, list[dict[str, Any]], set[str], list[str], str]:
    """A volume-churn run whose `resource` watch drops after its first event and is refused for DOWN_S: its
    timeline, its gaps with late end points, the objects whose `point` is late, the metrics WATCH_GAP names, the
    flag."""
    drop = {"resource": resource, "afterEvents": 1, "downSeconds": DOWN_S}
    sim = kubesim_factory({**cluster(provision=provision, delete=delete), "faults": {"dropWatches": [drop]}})
    tl = run_cp(spec("volume-churn", count=COUNT, concurrency=COUNT, timeout=30), kube=sim)
    assert all(r.error is None and point in r.t for r in tl.objects.values()), tl.jsonl()
    gaps = [g for g in tl.watch_gaps if g["late"]]
    late = {n for g in gaps for n, points in g["late"].items() if point in points}
    flag = next((f for f in parser.parse(tl.jsonl(), "volume-churn").flags if f.startswith("WATCH_GAP: ")), "")
    return tl, gaps, late, flag.removeprefix("WATCH_GAP: ").split(";", 1)[0].split(", "), flag


def test_a_dropped_claim_watch_flags_the_bound_times_seen_after_it(kubesim_factory: Any, run_cp: Any) -> None:
    # the claims turn Bound (0.3 s after their create) while the claim watch is down, and only a re-list sees it;
    # the deletes (2 s) outlast it
    tl, gaps, late, named, flag = _dropped(kubesim_factory, run_cp, "persistentvolumeclaims", 0.3, 2.0, "bound")
    assert [g["watch"] for g in gaps] == ["claim"], tl.watch_gaps
    gap = gaps[0]
    assert gap["end"] - gap["start"] > DOWN_S / 2, gap  # refused DOWN_S after the server dropped it
    assert len(late) >= COUNT - 1, gap  # all but perhaps the first claim turned Bound in the gap
    for name in late:  # timed when the re-list saw it: after the gap's start, at or after its end's list
        assert gap["start"] <= tl.objects[name].t["bound"] <= gap["end"], (name, tl.objects[name].t, gap)
    assert {"bound_p50_ms", "bound_max_ms"} <= set(named), flag
    assert "the claim watch was down" in flag and "object(s)' bound" in flag, flag
    # the PV watch saw pv_created live (0.7 s before the claims' re-list), unless a loaded host delivered its event
    # after that re-list, which then marked it late: provisioned_ is named exactly when a pv_created was late
    pv_late = {n for g in gaps for n, points in g["late"].items() if "pv_created" in points}
    assert any(m.startswith("provisioned_") for m in named) == bool(pv_late), (flag, gaps)


def test_a_dropped_pv_watch_flags_the_pv_deletes_seen_after_it(kubesim_factory: Any, run_cp: Any) -> None:
    # the claims are Bound (the claim watch marks pv_created too) and deleted, their PVs gone 0.2 s after, all while
    # the PV watch is down
    tl, gaps, late, named, flag = _dropped(kubesim_factory, run_cp, "persistentvolumes", 0.05, 0.2, "pv_gone")
    assert {g["watch"] for g in gaps} == {"PV"}, tl.watch_gaps
    assert len(late) >= COUNT // 2, gaps  # the PVs went while the watch was down (0.25 s after, of 1 s down)
    assert {"pv_deleted_p50_ms", "pv_deleted_max_ms"} <= set(named), flag
    assert "the PV watch" in flag and "pv_gone" in flag, flag


def test_a_stale_pv_relist_does_not_end_pvs_it_had_not_seen(kubesim_factory: Any, run_cp: Any,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The PV re-list after a drop handled late (slowed 0.6 s, as by a busy client): the PVs the claim watch saw
    Bound meanwhile are absent from its older snapshot, which is no proof they went (their pv_gone came before
    their delete could have removed them)."""
    original = kvolumes.VolumeChurnK8s.on_pvs_listed

    def late(self: Any, items: Any) -> None:
        time.sleep(0.6)
        original(self, items)

    monkeypatch.setattr(kvolumes.VolumeChurnK8s, "on_pvs_listed", late)
    drop = {"resource": "persistentvolumes", "afterEvents": 1, "downSeconds": DOWN_S}
    provision, delete_s = {"distribution": "uniform", "min": 0.05, "max": 0.5}, 1.0
    sim = kubesim_factory({**cluster(provision=provision, delete=delete_s), "faults": {"dropWatches": [drop]}})
    tl = run_cp(spec("volume-churn", count=COUNT, concurrency=COUNT, timeout=30), kube=sim)
    for name, rec in tl.objects.items():  # kubesim removes a PV delete_s after its claim's delete, not before
        assert rec.error is None and rec.t["pv_gone"] - rec.t["delete_requested"] >= delete_s * 0.95, (name, rec.t)


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
