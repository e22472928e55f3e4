"""The analyzer's phases table: per-object latencies read from stored control-plane raw logs, in a
real DuckDB file, idempotent under redelivery, and nothing from a timeline the parser refuses."""

from __future__ import annotations

import json

import pytest
from podtax import events
from podtax_analyzer.store import Store
from timeline_synth import run_events


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "podtax.duckdb")
    yield s
    s.close()


def test_raw_logs_fill_the_phases_table(store):
    k_log, k_result = run_events("cp", "kubernetes", "volume-churn", 1, count=5)
    n_log, n_result = run_events("cp", "nomad", "volume-churn", 2, count=5)
    new = store.write_batch([k_log, k_result, n_log, n_result])
    assert new == {k_log.data.run.run_id, n_log.data.run.run_id}
    cur = store.cursor()
    counts = dict(cur.execute("SELECT env || ' ' || phase, count(*) FROM phases GROUP BY ALL").fetchall())
    assert counts == {"kubernetes accepted": 5, "kubernetes provisioned": 5, "kubernetes bound": 5,
                      "kubernetes deleted": 5, "kubernetes pv_deleted": 5,
                      "nomad provisioned": 5, "nomad pv_deleted": 5}  # Nomad's synchronous calls: phases.py
    # one object checked against its own timeline line
    line = json.loads(k_log.data.stdout.splitlines()[3])
    want = line["t"]["bound"] - line["t"]["request_sent"]
    got = cur.execute("SELECT latency_s, start_s, backend FROM phases WHERE object = ? AND phase = 'bound'",
                      [line["name"]]).fetchone()
    assert got[0] == pytest.approx(want) and got[1] == line["t"]["request_sent"] and got[2] == "kubernetes"
    # the per-run metrics are stored as for any result
    (p50,) = cur.execute("SELECT value FROM metrics WHERE run_id = ? AND name = 'provisioned_p50_ms'",
                         [n_log.data.run.run_id]).fetchone()
    assert p50 > 0


def test_redelivery_changes_nothing(store):
    log, result = run_events("cp", "kubernetes", "pod-startup", 3, count=4)
    store.write_batch([log, result, log])  # a duplicate in the same batch
    store.write_batch([log, result])  # and a redelivery later
    (n,) = store.cursor().execute("SELECT count(*) FROM phases").fetchone()
    assert n == 4 * 7  # scheduled, initialized, ready_to_start_containers, started, containers_ready, ready, deleted


def test_refused_timeline_keeps_the_raw_log_and_adds_no_phase(store):
    log, _ = run_events("cp", "kubernetes", "volume-churn", 4, count=3)
    broken = log.data.stdout.replace('"pv_created": ', '"pv_created": -', 1)  # a negative provisioning time
    bad = events.raw_log(log.data.model_copy(update={"stdout": broken}), "podtax/runner")
    store.write_batch([bad])
    cur = store.cursor()
    assert cur.execute("SELECT count(*) FROM raw_logs").fetchone() == (1,)
    assert cur.execute("SELECT count(*) FROM phases").fetchone() == (0,)
