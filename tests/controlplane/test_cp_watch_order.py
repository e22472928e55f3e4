"""A claim's `provisioned` time never comes after its `bound` time, nor its `deleted` time after its `pv_deleted` time.
The claim and its PV come on two watches, so their events reach the harness in either order; a claim is Bound only
once its PV exists (the PV is saved first), so its Bound event is proof the PV was there. An audit: 175 of 540
claims (six runs of 30 against `podtax up --nomadsim`) saw Bound before their PV's ADDED, up to 34 ms later, so
`provisioned` (the phase compared with Nomad's create) was timed later than `bound`, and its p50 came out above
bound's; with the PV watch further behind, a run ended without waiting for the PVs it had not seen yet (no
pv_created, no pv_gone: the claim left provisioned and pv_deleted, no error said). Against the real kubesim; the PV
watch's delivery is slowed here (as a busy client's or a big cluster's unfiltered PV watch is) to make that order
certain."""

from __future__ import annotations

import time
from typing import Any

import pytest
from podtax_runner.controlplane import kvolumes

from tests.controlplane.conftest import cluster, spec

LAG_S = 0.2  # how late the slowed watch delivers each event


def run_with_slow_watch(handler: str, kubesim_factory: Any, run_cp: Any, monkeypatch: pytest.MonkeyPatch,
                        count: int) -> Any:
    """A volume-churn run against the real kubesim whose watch handler `handler` (on_pv, on_claim) gets each event
    LAG_S late; its timeline."""
    original = getattr(kvolumes.VolumeChurnK8s, handler)

    def late(self: Any, etype: str, obj: Any) -> None:
        time.sleep(LAG_S)
        original(self, etype, obj)

    monkeypatch.setattr(kvolumes.VolumeChurnK8s, handler, late)
    sim = kubesim_factory(cluster(provision=0.01, delete=0.01), kubelet="simulated")
    tl = run_cp(spec("volume-churn", count=count, concurrency=count // 2, timeout=60), kube=sim)
    assert not [(name, rec.error) for name, rec in tl.objects.items() if rec.error]
    return tl


def test_provisioned_is_never_after_bound(kubesim_factory: Any, run_cp: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    tl = run_with_slow_watch("on_pv", kubesim_factory, run_cp, monkeypatch, count=6)
    for name, rec in tl.objects.items():
        assert rec.t["request_sent"] <= rec.t["pv_created"] <= rec.t["bound"], (name, rec.t)
        assert "pv_gone" in rec.t and rec.server.get("pv_created"), (name, rec.t, rec.server)


def test_deleted_is_never_after_pv_deleted(kubesim_factory: Any, run_cp: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The mirror: a PV of reclaim policy Delete goes only once its claim is gone, so the PV's DELETED is proof the
    claim was gone by then, whichever watch delivers first (here the claim watch is the slow one)."""
    tl = run_with_slow_watch("on_claim", kubesim_factory, run_cp, monkeypatch, count=4)
    for name, rec in tl.objects.items():
        assert rec.t["delete_requested"] <= rec.t["gone"] <= rec.t["pv_gone"], (name, rec.t)
