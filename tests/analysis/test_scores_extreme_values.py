"""One result with values near the float maximum (finite, so events accept it: a forged event or a
misparsed log) must not stop the scores and cell statistics of every other key: before, its mean
overflowed (OverflowError in fsum) or its ratio was infinite (CellStats refuses it), the whole
publication failed and was retried forever, so the scheduler and the runner got nothing new."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient
from podtax import events
from podtax_analyzer.api import create_app
from podtax_analyzer.comparisons import cell_stats_for
from podtax_analyzer.score_cache import ScoreCache
from podtax_analyzer.scores import node_scores
from podtax_analyzer.store import Store

from tests.analysis.analysis_synth import sysbench_results

T0 = datetime(2025, 1, 6, 8, tzinfo=UTC)


def result_events(campaign: str, node: str, host: list[float], pod: list[float]) -> list[events.Envelope]:
    return sysbench_results(campaign, host, pod, node=node, t0=T0)


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "podtax.duckdb")
    good = result_events("good", "good-node", [1000.0, 1010.0, 990.0], [970.0, 980.0, 960.0])
    huge = result_events("huge", "huge-node", [1.7e308, 1.6e308], [1.0])  # mean and median overflow
    s.write_batch(good + huge)
    yield s
    s.close()


def test_publication_keeps_every_computable_score(store):
    ids = [r for (r,) in store.cursor().execute("SELECT run_id FROM runs").fetchall()]
    scores = ScoreCache().update(store, ids)
    keys = {(s.node, s.env) for s in scores}
    assert keys == {("good-node", "host"), ("good-node", "kubernetes"), ("huge-node", "kubernetes")}
    assert scores == node_scores(store.cursor())  # the API and the publication agree


def test_scores_route_answers_200(store):
    resp = TestClient(create_app(store), raise_server_exceptions=False).get("/api/scores")
    assert resp.status_code == 200, resp.text
    assert {s["node"] for s in resp.json()} == {"good-node", "huge-node"}


def test_cell_stats_of_an_overflowing_ratio_carry_no_ratio(store):
    # a pod median near the float maximum over a host median near 0: the ratio is infinite
    store.write_batch(result_events("tiny", "tiny-node", [5e-324] * 6, [1e308] * 6))
    (stats,) = cell_stats_for(store.cursor(), "tiny", "tiny-node", "sysbench-cpu", "threads=1")
    assert stats.ratio is None and stats.ci_low is None and stats.ci_high is None
    events.CellStatsV1(subject="podtax.cell.stats.tiny.tiny-node", data=stats)  # publishable
