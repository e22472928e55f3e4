"""The comparison with sides named by the data (kubernetes against nomad) and the control-plane phase
table, from raw logs and parser results stored in a real DuckDB file, and their HTTP routes."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from fastapi.testclient import TestClient
from podtax import phases as ph
from podtax_analyzer.api import create_app
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.phase_table import ONE_SIDE, phase_table, pooled_objects
from podtax_analyzer.store import Store
from timeline_synth import run_events

RUNS = 6


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("db") / "podtax.duckdb")
    batch = []
    for seq in range(RUNS):  # interleaved as a campaign runs them
        for env in ("kubernetes", "nomad"):
            batch += run_events("cp", env, "volume-churn", seq * 2 + (env == "nomad"))
        batch += run_events("cp", "kubernetes", "pod-startup", 100 + seq, count=5)
    s.write_batch(batch)
    yield s
    s.close()


@pytest.fixture(scope="module")
def report(store):
    return compare_campaign(store.cursor(), "cp")


def _cell(report, metric, test="volume-churn"):
    return next(c for c in report.cells if c.metric == metric and c.test == test)


def test_sides_are_kubernetes_and_nomad(report):
    c = _cell(report, "provisioned_p50_ms")
    assert (c.baseline, c.candidate, c.n_host, c.n_pod) == ("kubernetes", "nomad", RUNS, RUNS)
    # injected medians: nomad creates in 0.150 s; kubernetes 0.010 s to accept + 0.200 s to provision
    assert c.ratio == pytest.approx(0.150 / 0.210, rel=0.1)
    assert c.ci_low < c.ratio < c.ci_high
    assert "kubernetes median" in c.sentence and "nomad median" in c.sentence
    assert " pod" not in c.sentence and "host" not in c.sentence
    primary = _cell(report, "provisioned_makespan_s")
    assert primary.primary and primary.verdict == "faster" and "than kubernetes" in primary.sentence
    assert primary.sentence.startswith("Nomad ") and "pod" not in primary.sentence
    summary = next(s for s in report.summary if s.metric == "provisioned_makespan_s")
    assert "nomad/kubernetes ratios" in summary.sentence and "pod" not in summary.sentence


def test_nomad_has_no_bound_phase_in_the_table(report):
    table = phase_table(report)
    volume = [r for r in table.rows if r.test == "volume-churn"]
    assert [(r.phase, r.statistic) for r in volume[:4]] == [("accepted", "p50"), ("accepted", "makespan"),
                                                           ("provisioned", "p50"), ("provisioned", "makespan")]
    bound = next(r for r in volume if r.phase == "bound" and r.statistic == "p50")
    assert bound.n_baseline == RUNS and bound.n_candidate == 0 and bound.ratio is None
    assert bound.note.startswith("Nomad volumes have no Bound phase")
    assert "MODIFIED event with phase Bound" in bound.definition
    provisioned = next(r for r in volume if r.phase == "provisioned" and r.statistic == "makespan")
    assert provisioned.primary and provisioned.note == ph.CAVEATS[("volume-churn", "provisioned")]  # concurrency
    assert provisioned.definition.startswith("kubernetes: create request sent -> the PV's ADDED event (or the claim's "
                                             "Bound, if its watch delivers that first) (in a run of a "
                                             "WaitForFirstConsumer class, its summary marked provision_start node: "
                                             "from when the claim was seen given a node")
    assert "a consumer run marked neither node nor create has no figure); nomad:" in provisioned.definition
    assert provisioned.baseline_median == pytest.approx(_cell(report, "provisioned_makespan_s").host_median)
    assert any(n.startswith("Nomad volumes have no Bound phase") for n in table.notes)


def test_pooled_objects_describe_each_distribution(store, report):
    table = phase_table(report, pooled_objects(store.cursor(), "cp"))
    row = next(r for r in table.rows if r.test == "volume-churn" and r.phase == "provisioned"
               and r.statistic == "objects")
    assert set(row.pooled) == {"kubernetes", "nomad"} and row.ratio is None and row.verdict is None
    nomad = row.pooled["nomad"]
    assert nomad.objects == RUNS * 20 and nomad.p50_ms == pytest.approx(150.0, rel=0.1)  # injected median
    assert nomad.p50_ms < nomad.p99_ms
    latencies = [r[0] for r in store.cursor().execute(
        "SELECT latency_s FROM phases WHERE env = 'nomad' AND phase = 'provisioned'").fetchall()]
    assert nomad.p99_ms == pytest.approx(float(np.percentile(latencies, 99)) * 1000)
    assert (nomad.min_ms, nomad.avg_ms) == pytest.approx((min(latencies) * 1000, float(np.mean(latencies)) * 1000))
    assert not (nomad.min_lower_bound or nomad.avg_lower_bound or nomad.min_upper_bound or nomad.avg_upper_bound)
    bound = next(r for r in table.rows if r.phase == "bound" and r.statistic == "objects")
    assert set(bound.pooled) == {"kubernetes"}


def test_pod_startup_is_one_sided(report):
    rows = [r for r in phase_table(report).rows if r.test == "pod-startup"]
    # every condition kube-burner's podLatency reports (PodScheduled, Initialized, PodReadyToStartContainers,
    # ContainersReady, Ready)
    assert [r.phase for r in rows[::2]] == ["scheduled", "initialized", "ready_to_start_containers", "started",
                                            "containers_ready", "ready", "deleted"]
    ready = next(r for r in rows if r.phase == "ready" and r.statistic == "p50")
    assert ready.candidate is None and ready.note == ONE_SIDE and ready.verdict is None
    assert ready.baseline_median == pytest.approx(635.0, rel=0.1)  # 20 + 10 + 5 + 500 + 80 + 20 ms injected
    medians = {r.phase: r.baseline_median for r in rows if r.statistic == "p50"}
    assert medians["initialized"] == pytest.approx(30.0, rel=0.2)  # 20 + 10 ms
    assert medians["scheduled"] < medians["initialized"] < medians["ready_to_start_containers"] < medians["started"] \
        < medians["containers_ready"] < medians["ready"]
    assert "Initialized condition True" in next(r.definition for r in rows if r.phase == "initialized")
    assert "PodReadyToStartContainers condition True" in next(r.definition for r in rows
                                                              if r.phase == "ready_to_start_containers")
    cell = _cell(report, "ready_p50_ms", "pod-startup")
    assert not cell.flags  # six runs of one side are enough
    assert cell.verdict == "not comparable"
    assert cell.sentence.startswith("Not comparable: one side only: kubernetes median ") and "podtax compare" in \
        cell.sentence


def test_http_routes(store):
    client = TestClient(create_app(store))
    got = client.get("/api/campaigns/cp/phases", params={"phase": "provisioned", "env": "nomad"})
    assert got.status_code == 200
    rows = got.json()
    assert len(rows) == RUNS * 20 and {r["backend"] for r in rows} == {"nomad"}
    assert np.median([r["latency_s"] for r in rows]) == pytest.approx(0.150, rel=0.1)
    table = client.get("/api/campaigns/cp/phase-table").json()
    assert {r["phase"] for r in table["rows"]} >= {"accepted", "provisioned", "bound", "deleted", "pv_deleted"}
    assert client.get("/api/campaigns/nope/phases").status_code == 404
    assert client.get("/api/campaigns/nope/phase-table").status_code == 404


@pytest.fixture
def cp_file(tmp_path):
    """A DuckDB file of a volume-churn campaign "cp", closed: for `podtax report --db`."""
    db = tmp_path / "cp.duckdb"
    s = Store(db)
    for seq in range(RUNS):
        s.write_batch([e for env in ("kubernetes", "nomad")
                       for e in run_events("cp", env, "volume-churn", seq * 2 + (env == "nomad"))])
    s.close()
    return db


def test_podtax_report_prints_the_phase_table(cp_file, capsys, monkeypatch):
    from podtax.cli.main import main

    db = cp_file
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["report", "cp", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "Control-plane phases, side by side" in out
    assert "nomad/kubernetes" in out and "kubernetes median" not in out.split("Control-plane")[0].split("\n")[0]
    assert "Nomad volumes have no Bound phase" in out and "not comparable" in out
    assert "the PV's ADDED event" in out  # the definition beside the numbers
    provisioned = next(line for line in out.splitlines() if line.lstrip().startswith("provisioned "))  # its row
    assert re.search(r"6 · [\d.]+ +6 · [\d.]+ +0\.\d{3} \[0\.\d{3}, 0\.\d{3}\]", provisioned)
    assert main(["report", "cp", "--db", str(db), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {c["baseline"] for c in data["cells"]} == {"kubernetes"}
    assert data["phase_table"]["rows"][0]["phase"] == "accepted"
    assert data["phase_table"]["rows"][1]["statistic"] == "objects"


def test_podtax_report_reads_a_file_written_before_upper_bound(cp_file, capsys):
    """`podtax report --db` opens the file read-only, so a file whose phases table predates its upper_bound column
    (an older analyzer's) is not migrated: the phase table failed with 'Table "p" does not have a column named
    "upper_bound"'. Its objects are none of them late."""
    import duckdb
    from podtax.cli.main import main

    db = cp_file
    with duckdb.connect(str(db)) as con:  # as an older analyzer left it
        con.execute("CREATE TABLE old_phases AS SELECT * EXCLUDE (upper_bound) FROM phases")
        con.execute("DROP TABLE phases")
        con.execute("ALTER TABLE old_phases RENAME TO phases")
    assert main(["report", "cp", "--db", str(db), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["phase_table"]["rows"]
    pooled = [r["pooled"] for r in rows if r["statistic"] == "objects"]
    assert pooled and not any(side["p50_upper_bound"] for sides in pooled for side in sides.values()), pooled
