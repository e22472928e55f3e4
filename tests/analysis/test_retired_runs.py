"""A user retires a node's runs before a time (it changed: a tool build that interleaved with the old one, new
hardware, a new kernel): its scores count only the runs since then, and the older runs stay stored (retired.py).

Before, a score counted every stored run of its key for good: node n1, whose sysbench 1.0.18 and 1.0.20 runs
interleaved, stayed CONFOUNDED (ignored by the scheduler) whatever it ran later. Through a real DuckDB file
(Store.write_batch), node_scores, the service's incremental ScoreCache (which must start afresh: the runs it holds
did not change) and its restore, and the analyzer's real routes (FastAPI's TestClient, with its bearer token)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from podtax import events
from podtax_analyzer import retired
from podtax_analyzer.api import create_app
from podtax_analyzer.score_cache import ScoreCache
from podtax_analyzer.scores import node_scores
from podtax_analyzer.store import Store

TOKEN = "retire-test-token"
START = datetime(2026, 11, 2, 8, tzinfo=UTC)
CHANGED = START + timedelta(hours=1)  # n1's new hardware: runs from here on measure ~1000 events/s


def result(node: str, i: int, at: datetime, version: str, value: float) -> events.ResultV1:
    run = events.RunSpec(run_id=f"{node}-r{i}", campaign="c", node=node, env="kubernetes", test="sysbench-cpu",
                         params={"threads": 1})
    return events.result(events.Result(
        run=run, tool="sysbench", tool_version=version, parser_version="1", started_at=at,
        ended_at=at + timedelta(seconds=10),
        metrics=[events.Metric(name="events_per_second", value=value, unit="events/s", higher_is_better=True)]),
        "test")


def history(start: datetime = START, changed: datetime = CHANGED) -> list[events.ResultV1]:
    """n1: 6 runs alternating sysbench 1.0.18 / 1.0.20 near 500 before `changed`, then 8 runs of 1.0.20 near 1000;
    n2: 10 steady runs, some before, some after; n3: 4 runs, all before `changed`."""
    old = [result("n1", i, start + timedelta(minutes=i), ("1.0.18", "1.0.20")[i % 2], 500.0 + i) for i in range(6)]
    new = [result("n1", 6 + i, changed + timedelta(minutes=i), "1.0.20", 1000.0 + i % 3) for i in range(8)]
    n2 = [result("n2", i, start + timedelta(minutes=10 * i), "1.0.20", 800.0 + i % 2) for i in range(10)]
    n3 = [result("n3", i, start + timedelta(minutes=i), "1.0.20", 700.0) for i in range(4)]
    return old + new + n2 + n3


def _by_node(scores: list[events.NodeScore]) -> dict[str, events.NodeScore]:
    return {s.node: s for s in scores}


def test_retired_runs_leave_the_score_alike_in_node_scores_the_cache_and_the_restore(tmp_path: Path) -> None:
    runs = history()
    store = Store(tmp_path / "podtax.duckdb")
    try:
        store.write_batch(runs)
        cache = ScoreCache()
        before = _by_node(cache.update(store, [r.data.run.run_id for r in runs]))
        assert (before["n1"].n, before["n1"].flags[:1]) == (14, ["CONFOUNDED"]), before["n1"]
        row, ids = retired.retire(store, "n1", CHANGED)
        assert ids == {r.data.run.run_id for r in runs if r.data.run.node == "n1"}
        published = _by_node(cache.update(store, ids))  # the service publishes the node's runs again
        scores = _by_node(node_scores(store.cursor()))
        restored = _by_node(ScoreCache().restore(store, []))
        retire_n3, _ = retired.retire(store, "n3", CHANGED)  # every run of n3 is older: it has no score left
        without_n3 = _by_node(node_scores(store.cursor()))
        stored = store.cursor().execute("SELECT count(*) FROM runs").fetchone()[0]
        listed = retired.listed(store.cursor())
        gone, _ = retired.undo(store, "n1")
        again = _by_node(node_scores(store.cursor()))
        after_undo = _by_node(cache.update(store, ids))
    finally:
        store.close()
    n1 = scores["n1"]
    assert (n1.n, n1.flags, n1.median) == (8, [], 1001.0), n1  # the new hardware's runs alone, one build
    assert published["n1"] == n1 and restored == scores  # the cache started afresh: the same figures
    assert scores["n2"] == before["n2"] and scores["n3"] == before["n3"]  # other nodes untouched
    assert (row["cluster"], row["node"], row["before"], row["runs"]) == ("local", "n1", CHANGED, 6), row
    assert "n3" not in without_n3 and retire_n3["runs"] == 4
    assert stored == len(runs)  # no run deleted
    assert [(r["node"], r["runs"]) for r in listed] == [("n1", 6), ("n3", 4)]
    assert gone["node"] == "n1"
    assert again["n1"] == before["n1"] == after_undo["n1"]  # undone: every run counts again, CONFOUNDED


def test_a_later_retirement_of_a_node_replaces_its_earlier_one(tmp_path: Path) -> None:
    store = Store(tmp_path / "podtax.duckdb")
    try:
        store.write_batch(history())
        retired.retire(store, "n1", START + timedelta(minutes=3))
        assert _by_node(node_scores(store.cursor()))["n1"].n == 11
        retired.retire(store, "n1", CHANGED)
        assert _by_node(node_scores(store.cursor()))["n1"].n == 8
        assert [(r["node"], r["before"], r["runs"]) for r in retired.listed(store.cursor())] == [("n1", CHANGED, 6)]
    finally:
        store.close()


@pytest.mark.parametrize(("node", "before", "cluster", "status", "said"), [
    ("n9", CHANGED, None, 404, "no run of node 'n9' is stored (the stored ones: n1, n2, n3): name the node as its "
                               "runs do (podtax results lists them); a node is retired once its runs are stored"),
    ("n11", CHANGED, None, 404, "no run of node 'n11' is stored (the closest stored: n1): name the node"),
    ("n1", CHANGED, "other", 404, "no run of node 'n1' in cluster 'other' is stored (its runs are in cluster local): "
                                  "give --cluster local"),
    ("n1", None, None, 422, "is in the future"),
    ("n1", START - timedelta(days=1), None, 422, "no run of node 'n1' (cluster local) started before 2026-11-01 "
                                                 "08:00:00 UTC (its first successful run started 2026-11-02 08:00:00 "
                                                 "UTC): nothing to retire; give the time the node changed, after its "
                                                 "first run (podtax results lists its runs); if older runs are still "
                                                 "to be stored (an import, a held outbox), retire once they are: by "
                                                 "their start times the same runs are left out"),
])
def test_a_retirement_refused_says_why(tmp_path: Path, node: str, before: datetime | None, cluster: str | None,
                                       status: int, said: str) -> None:
    store = Store(tmp_path / "podtax.duckdb")
    try:
        store.write_batch(history())
        when = before or datetime.now(UTC) + timedelta(days=1)  # taken in the test, not at collection
        with pytest.raises(retired.Refusal) as refused:
            retired.retire(store, node, when, cluster)
        with pytest.raises(retired.Refusal) as undone:
            retired.undo(store, "n1")
        assert retired.listed(store.cursor()) == []
    finally:
        store.close()
    assert refused.value.status == status and said in str(refused.value), refused.value
    assert undone.value.status == 404 and "no runs of node 'n1' are retired" in str(undone.value)


def test_the_api_retires_lists_and_undoes_with_the_token_and_republishes_the_nodes_scores(tmp_path: Path) -> None:
    store = Store(tmp_path / "podtax.duckdb")
    try:
        store.write_batch(history())
        app = create_app(store, TOKEN)
        changed: list[set[str]] = []
        app.state.runs_changed = changed.append  # as the service's Analyzer.runs_changed: scores to publish
        client = TestClient(app)
        auth = {"Authorization": f"Bearer {TOKEN}"}
        params = {"node": "n1", "before": CHANGED.isoformat()}
        assert client.post("/api/retired", params=params).status_code == 401  # mutating: the bearer token
        assert client.get("/api/retired").json() == []
        resp = client.post("/api/retired", params=params, headers=auth)
        assert resp.status_code == 200, resp.text
        assert resp.json()["runs"] == 6 and resp.json()["node"] == "n1"
        assert resp.json()["scores"] == [{"env": "kubernetes", "test": "sysbench-cpu", "params_key": "threads=1",
                                          "metric": "events_per_second", "runs": 6}], resp.json()
        assert len(changed) == 1 and len(changed[0]) == 14
        scores = {s["node"]: s for s in client.get("/api/scores").json()}
        assert (scores["n1"]["n"], scores["n1"]["flags"]) == (8, [])
        assert [r["node"] for r in client.get("/api/retired").json()] == ["n1"]
        future = client.post("/api/retired", params={"node": "n1", "before": "2999-01-01"}, headers=auth)
        assert future.status_code == 422 and "is in the future" in future.json()["detail"], future.text
        unknown = client.post("/api/retired", params={"node": "nope", "before": "2026-11-02"}, headers=auth)
        assert unknown.status_code == 404 and "no run of node 'nope'" in unknown.json()["detail"], unknown.text
        assert client.delete("/api/retired", params={"node": "n1"}).status_code == 401
        undone = client.delete("/api/retired", params={"node": "n1"}, headers=auth)
        assert undone.status_code == 200 and undone.json()["node"] == "n1", undone.text
        assert client.get("/api/retired").json() == []
        assert {s["node"]: s for s in client.get("/api/scores").json()}["n1"]["n"] == 14
        assert client.delete("/api/retired", params={"node": "n1"}, headers=auth).status_code == 404
    finally:
        store.close()
