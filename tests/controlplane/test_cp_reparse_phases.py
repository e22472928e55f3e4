"""`podtax reparse` re-derives a control-plane run's per-object phases along with its metrics. An audit: reparse
replaced a run's results and metrics but never touched the `phases` table, so a run stored without phase rows (by an
analyzer before that table, or a timeline its parser then refused) got metrics and no objects: the phase table's
pooled `objects · p50 · p99` row and the HTML CDFs left it out while the per-run medians counted it. A real kubesim
run's timeline, a real DuckDB store, the real reparse."""

from __future__ import annotations

from typing import Any

import pytest
from podtax import events
from podtax.derive import derive
from podtax_analyzer import store as store_module
from podtax_analyzer.reparse import reparse
from podtax_analyzer.store import Store

from tests.controlplane.conftest import cluster, spec

COUNT = 4


def test_reparse_fills_the_phases_of_a_run_stored_without_them(kubesim_factory: Any, run_cp: Any,
                                                               monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    sim = kubesim_factory(cluster(provision=0.01, delete=0.01), kubelet="simulated")
    tl = run_cp(spec("volume-churn", count=COUNT, concurrency=2, timeout=30), kube=sim)
    run = events.RunSpec(run_id="rp-1", campaign="rp", node="node-1", env="kubernetes", test="volume-churn",
                         params={"count": COUNT})
    raw = events.RawLog(run=run, stdout=tl.jsonl(), exit_code=0, started_at=events.now(), ended_at=events.now())
    store = Store(tmp_path / "podtax.duckdb")
    with monkeypatch.context() as m:  # as an analyzer before the phases table stored it
        m.setattr(store_module, "phase_rows", lambda _raw: None)
        store.write_batch([events.raw_log(raw, "podtax/runner"), derive(raw)])
    count = "SELECT count(*) FROM phases WHERE run_id = 'rp-1'"
    assert store.con.execute(count).fetchone() == (0,)
    reparse(store, "rp")
    # every object in each of its 5 phases (accepted, provisioned, bound, deleted, pv_deleted)
    assert store.con.execute(count).fetchone() == (COUNT * 5,)
    reparse(store, "rp")  # again: replaced, not added
    assert store.con.execute(count).fetchone() == (COUNT * 5,)
    store.close()
