"""Table-driven tests of the score plugins, the profile and one whole decision (no API server)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from podtax.config import ConfigError
from podtax_scheduler.algorithm import decide
from podtax_scheduler.model import PodInfo
from podtax_scheduler.profile import Profile, load_profile
from podtax_scheduler.scorestore import ScoreStore
from podtax_scheduler.scoring import BenchmarkScore, LeastAllocated
from podtax_scheduler.state import ClusterState
from sched_objects import node, pod, score, with_uid

TTL = 3600.0


def cluster(*names: str, **kw: Any) -> ClusterState:
    state = ClusterState()
    for n in names:
        state.upsert_node(node(n, **kw))
    return state


def bench_scores(state: ClusterState, store: ScoreStore, p: dict[str, Any], **kw: Any) -> dict[str, float]:
    plugin = BenchmarkScore(store, TTL, **kw)
    pi = PodInfo.from_dict(with_uid(p))
    idx = state.feasible(pi)
    out = plugin.score(pi, state, idx, {})
    return {state.names[i]: round(float(s), 2) for i, s in zip(idx, out, strict=True)}


def store_with(*scores: Any) -> ScoreStore:
    store = ScoreStore("local", "kubernetes")
    for s in scores:
        store.put_score(s)
    return store


OLD = datetime.now(UTC) - timedelta(hours=2)
CASES: list[tuple[str, list[Any], dict[str, Any], dict[str, float]]] = [
    ("prototype trap: per-run mean, not the sum", [score("a", 7.78e6, 160), score("b", 8.65e6, 112)], {},
     {"a": 0.0, "b": 100.0}),
    ("lower is better", [score("a", 10, 50, higher_is_better=False), score("b", 20, 50, higher_is_better=False)],
     {}, {"a": 100.0, "b": 0.0}),
    ("missing gets the low neutral score", [score("a", 10, 50), score("b", 20, 50)], {},
     {"a": 0.0, "b": 100.0, "c": 20.0}),
    ("stale counts as missing", [score("a", 10, 50), score("b", 20, 50, updated_at=OLD)], {},
     {"a": 100.0, "b": 20.0, "c": 20.0}),
    ("other cluster ignored", [score("a", 10, 50), score("b", 99, 50, cluster="other")], {},
     {"a": 100.0, "b": 20.0, "c": 20.0}),
    ("host env ignored", [score("a", 10, 50), score("b", 99, 50, env="host")], {},
     {"a": 100.0, "b": 20.0, "c": 20.0}),
    ("other metric ignored", [score("a", 10, 50), score("b", 99, 50, metric="latency_ms")], {},
     {"a": 100.0, "b": 20.0, "c": 20.0}),
    ("no scores at all", [], {}, {"a": 20.0, "b": 20.0, "c": 20.0}),
    ("equal scores all best", [score("a", 10, 5), score("b", 10, 5)], {}, {"a": 100.0, "b": 100.0, "c": 20.0}),
    ("params covering most nodes",
     [score("a", 10, 5, params_key="threads=1"), score("b", 20, 5, params_key="threads=1"),
      score("c", 99, 5, params_key="threads=4")], {},
     {"a": 0.0, "b": 100.0, "c": 20.0}),
    ("podtax.io/params annotation picks the group",
     [score("a", 10, 5, params_key="threads=1"), score("b", 20, 5, params_key="threads=1"),
      score("c", 99, 5, params_key="threads=4"), score("a", 50, 5, params_key="threads=4")],
     {"annotations": {"podtax.io/params": "threads=4"}}, {"a": 0.0, "b": 20.0, "c": 100.0}),
    ("no benchmark label", [score("a", 10, 5)], {"test": None}, {"a": 20.0, "b": 20.0, "c": 20.0}),
    ("benchmark label podtax.io/benchmark", [score("a", 10, 5), score("b", 5, 5)],
     {"test": None, "labels": {"podtax.io/benchmark": "sysbench-cpu"}}, {"a": 100.0, "b": 0.0, "c": 20.0}),
]


@pytest.mark.parametrize(("scores", "pod_kw", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_benchmark_score(scores: list[Any], pod_kw: dict[str, Any], want: dict[str, float]) -> None:
    state = cluster("a", "b", "c")
    got = bench_scores(state, store_with(*scores), pod("p", **pod_kw))
    assert got == {k: want.get(k, 20.0) for k in got}


def test_few_runs_are_pulled_toward_the_fleet_average() -> None:
    # b's single run says 22, a and c (100 runs each) say 20 and 10: with k=3 b is pulled below a.
    store = store_with(score("a", 20, 100), score("b", 22, 1), score("c", 10, 100))
    got = bench_scores(cluster("a", "b", "c"), store, pod("p"), shrink_runs=3)
    assert got["a"] > got["b"] > got["c"]
    raw = bench_scores(cluster("a", "b", "c"), store, pod("p"), shrink_runs=0)
    assert raw["b"] == 100.0


def test_median_statistic() -> None:
    s1 = score("a", 10, 50).model_copy(update={"median": 30.0})
    store = store_with(s1, score("b", 20, 50))
    assert bench_scores(cluster("a", "b"), store, pod("p"), statistic="median") == {"a": 100.0, "b": 0.0}


def test_fio_metric_follows_params() -> None:
    store = store_with(score("a", 100, 5, test="fio", metric="write_iops", params_key="rw=randwrite"),
                       score("b", 200, 5, test="fio", metric="write_iops", params_key="rw=randwrite"),
                       score("a", 999, 5, test="fio", metric="read_iops", params_key="rw=randwrite"))
    assert bench_scores(cluster("a", "b"), store, pod("p", test="fio")) == {"a": 0.0, "b": 100.0}


def test_score_update_replaces_and_delete_removes() -> None:
    store = store_with(score("a", 10, 5), score("b", 20, 5))
    state = cluster("a", "b")
    plugin = BenchmarkScore(store, TTL)
    pi = PodInfo.from_dict(with_uid(pod("p")))
    idx = state.feasible(pi)
    assert list(plugin.score(pi, state, idx, {})) == [0.0, 100.0]
    store.put_score(score("a", 30, 5))
    assert list(plugin.score(pi, state, idx, {})) == [100.0, 0.0]
    from podtax import subjects
    store.delete(subjects.score_key("local", "kubernetes", "a", "sysbench-cpu", "events_per_second", "threads=1"))
    assert list(plugin.score(pi, state, idx, {})) == [20.0, 100.0]


LA_CASES = [
    ("empty nodes score 100", {}, {"cpu": None}, 100.0),
    ("half cpu used", {"cpu": "2"}, {"cpu": None}, 75.0),
    ("pod's own request counts", {}, {"cpu": "2", "memory": "4Gi"}, 50.0),
]


@pytest.mark.parametrize(("used", "req", "want"), [c[1:] for c in LA_CASES], ids=[c[0] for c in LA_CASES])
def test_least_allocated(used: dict[str, str], req: dict[str, Any], want: float) -> None:
    state = cluster("a")
    if used:
        state.upsert_pod(with_uid(pod("x", node_name="a", **used)))
    pi = PodInfo.from_dict(with_uid(pod("p", **req)))
    idx = state.feasible(pi)
    assert float(LeastAllocated().score(pi, state, idx, {})[0]) == pytest.approx(want)


def test_decision_picks_best_and_breaks_ties_at_random() -> None:
    state = cluster("a", "b", "c", "d")
    store = store_with(score("a", 10, 50), score("b", 30, 50), score("c", 30, 50))
    plugins = [BenchmarkScore(store, TTL), LeastAllocated()]
    weights = Profile().weights()
    pi = PodInfo.from_dict(with_uid(pod("p")))
    picks = {decide(pi, state, plugins, weights, random.Random(seed)).node for seed in range(40)}
    assert picks == {"b", "c"}
    d = decide(pi, state, plugins, weights, random.Random(1))
    assert d.candidates[0][0] == d.node and d.candidates[0][1] == 100.0
    assert {c for c, _ in d.candidates} == {"a", "b", "c", "d"}


def test_decision_failure_message() -> None:
    state = ClusterState()
    state.upsert_node(node("a", unschedulable=True))
    state.upsert_node(node("b", unschedulable=True))
    for n in ("c", "d", "e"):
        state.upsert_node(node(n, cpu="1"))
    d = decide(PodInfo.from_dict(with_uid(pod("p", cpu="2"))), state, [], {})
    assert d.node is None
    assert d.message == "0/5 nodes are available: 2 node(s) were unschedulable, 3 Insufficient cpu."


# ---------------------------------------------------------------- profile

def test_default_profile() -> None:
    assert load_profile(None).weights() == {"BenchmarkScore": 5.0, "LeastAllocated": 1.0}


def test_profile_file(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("score:\n  BenchmarkScore: {weight: 2, shrink_runs: 10}\n  LeastAllocated: {weight: 0}\n")
    prof = load_profile(f)
    assert prof.weights() == {"BenchmarkScore": 2.0, "LeastAllocated": 0.0}
    assert prof.score.BenchmarkScore.shrink_runs == 10


@pytest.mark.parametrize(("text", "needle"), [
    ("score: [unclosed", "not valid YAML"),
    ("score:\n  Bogus: {weight: 1}\n", "Known score plugins"),
    ("score:\n  BenchmarkScore: {weight: -1}\n", "greater than or equal to 0"),
    ("score:\n  BenchmarkScore: {weight: 0}\n  LeastAllocated: {weight: 0}\n", "every score weight is 0"),
])
def test_bad_profile_fails_with_the_fix(tmp_path: Path, text: str, needle: str) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_profile(f)
    assert needle in err.value.message and "PODTAX_SCHEDULER_PROFILE" in err.value.message


def test_missing_profile_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_profile(tmp_path / "nope.yaml")


def test_columns_follow_node_slots() -> None:
    state = cluster("a", "b")
    store = store_with(score("a", 10, 5), score("b", 20, 5))
    plugin = BenchmarkScore(store, TTL)
    pi = PodInfo.from_dict(with_uid(pod("p")))
    state.delete_node("a")
    state.upsert_node(node("c"))
    idx = state.feasible(pi)
    got = dict(zip([state.names[i] for i in idx], plugin.score(pi, state, idx, {}), strict=True))
    assert got == {"b": 100.0, "c": 20.0}
    assert isinstance(idx, np.ndarray)
