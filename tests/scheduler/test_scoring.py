"""Table-driven tests of the score plugins, the profile and one whole decision (no API server)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from podtax.cli import scores as cli_scores
from podtax.config import ConfigError
from podtax_scheduler.algorithm import decide
from podtax_scheduler.model import PodInfo
from podtax_scheduler.profile import Profile, load_profile
from podtax_scheduler.scorestore import ScoreStore
from podtax_scheduler.scoring import BenchmarkScore, LeastAllocated, describe
from podtax_scheduler.state import ClusterState

from tests.scheduler.sched_objects import node, pod, score, with_uid

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
TS = {"threads": 4, "time": 10}
CASES: list[tuple[str, list[Any], dict[str, Any], dict[str, float]]] = [
    # no intervals here: a node's lower bound is its speed less the noise band (5% / sqrt(n)), the reference the best
    # bound (its shrunk value where lower); a (8.1% below b after shrinking) is 9.5% below b's 99.5% and scores 52.31
    ("prototype trap: per-run value, not the sum", [score("a", 7.78e6, 160), score("b", 8.65e6, 112)], {},
     {"a": 52.31, "b": 100.0}),
    ("a 0.1% difference is not 100 against 0", [score("a", 1000, 50), score("b", 1001, 50)], {},
     {"a": 100.0, "b": 100.0}),
    # under 6 runs the analyzer publishes no interval: noise within the band decides nothing, a real difference does
    ("5 runs each, 1% apart, no interval: within the band, resources decide",
     [score("a", 1010, 5), score("b", 1000, 5)], {}, {"a": 100.0, "b": 100.0}),
    ("one run each, 4% apart: a single run never wins by noise", [score("a", 1040, 1), score("b", 1000, 1)], {},
     {"a": 100.0, "b": 100.0}),
    ("a duration, 5 runs each, 1% apart: the band on its speed",
     [score("a", 10.1, 5, higher_is_better=False), score("b", 10, 5, higher_is_better=False)], {},
     {"a": 100.0, "b": 100.0}),
    ("3 runs each, 2x apart: the faster still wins", [score("a", 200, 3), score("b", 100, 3)], {},
     {"a": 100.0, "b": 0.0}),
    ("one run each, 2x apart: the faster still wins", [score("a", 200, 1), score("b", 100, 1)], {},
     {"a": 100.0, "b": 23.08}),
    ("3 runs each, 10% apart: still ranked", [score("a", 1100, 3), score("b", 1000, 3)], {},
     {"a": 100.0, "b": 79.76}),
    # the band narrows with the runs (5% / sqrt(5) = 2.2%): 5 runs 8% apart decide as 6 runs with an interval do
    ("5 runs each, 8% apart: beyond the 5-run band", [score("a", 1080, 5), score("b", 1000, 5)], {},
     {"a": 100.0, "b": 80.66}),
    ("a tight interval sets the reference: the band widens a node's own bound only",
     [score("a", 1010, 6, ci=(1009, 1011)), score("b", 1000, 5)], {}, {"a": 100.0, "b": 96.8}),
    # an interval reaching 0 (min..max at 6-8 runs with a run of 0) is the least certain evidence: it bounds the speed
    # by 0 and sets no reference, as one from 1 up does (taken as exact it had b 96.8; as the narrow no-interval band,
    # the noisiest node set a tight reference: b 71.75 in r10's row)
    ("an interval reaching 0 sets no reference", [score("a", 1010, 6, ci=(0, 1020)), score("b", 1000, 5)], {},
     {"a": 100.0, "b": 100.0}),
    ("an interval below 0 sets no reference", [score("a", 1010, 6, ci=(-5, 1020)), score("b", 1000, 5)], {},
     {"a": 100.0, "b": 100.0}),
    ("an interval reaching 0 is no tighter than one from 1", [score("a", 1100, 6, ci=(0, 1200)),
                                                               score("b", 1000, 6, ci=(950, 1050))], {},
     {"a": 100.0, "b": 100.0}),
    ("an interval from 1: the least certain, no reference", [score("a", 1100, 6, ci=(1, 1200)),
                                                              score("b", 1000, 6, ci=(950, 1050))], {},
     {"a": 100.0, "b": 100.0}),
    ("both intervals reaching 0: nothing to fall short of", [score("a", 1500, 6, ci=(0, 1600)),
                                                              score("b", 1000, 6, ci=(0, 1100))], {},
     {"a": 100.0, "b": 100.0}),
    ("a duration whose upper end is not above 0 sets no reference",
     [score("a", 1.0, 6, higher_is_better=False, ci=(0.9, 0.0)),
      score("b", 1.1, 6, higher_is_better=False, ci=(1.05, 1.15))], {}, {"a": 100.0, "b": 100.0}),
    ("a duration: its upper end is the one that counts", [score("a", 10, 6, higher_is_better=False, ci=(0, 10.1)),
                                                           score("b", 11, 5, higher_is_better=False)], {},
     {"a": 100.0, "b": 70.19}),
    ("within noise: both reach the best lower bound",
     [score("a", 1000, 20, ci=(990, 1010)), score("b", 1004, 20, ci=(995, 1012))], {}, {"a": 100.0, "b": 100.0}),
    ("outside noise: scored against the best lower bound",  # a shrunk to 906.5, reference 990
     [score("a", 900, 20, ci=(890, 910)), score("b", 1000, 20, ci=(990, 1010))], {}, {"a": 57.84, "b": 100.0}),
    ("lower is better", [score("a", 10, 50, higher_is_better=False), score("b", 11, 50, higher_is_better=False)],
     {}, {"a": 100.0, "b": 59.08}),
    ("lower is better with intervals: the speed bound comes from the upper bound",
     [score("a", 10, 50, higher_is_better=False, ci=(9.9, 10.1)),
      score("b", 10.05, 50, higher_is_better=False, ci=(9.9, 10.2))], {}, {"a": 100.0, "b": 100.0}),
    ("missing gets the missing score", [score("a", 10, 50), score("b", 11, 50)], {},
     {"a": 59.08, "b": 100.0, "c": 20.0}),
    ("stale counts as missing", [score("a", 10, 50), score("b", 20, 50, updated_at=OLD)], {},
     {"a": 100.0, "b": 20.0, "c": 20.0}),
    ("flagged evidence counts as missing", [score("a", 10, 50), score("b", 20, 50, flags=("BIMODAL",))], {},
     {"a": 100.0, "b": 20.0, "c": 20.0}),
    ("an unlisted flag does not block", [score("a", 10, 50), score("b", 20, 50, flags=("OUTLIERS",))], {},
     {"a": 0.0, "b": 100.0, "c": 20.0}),
    ("median per run by default, not the mean", [score("a", 10, 50, median=30), score("b", 20, 50)], {},
     {"a": 100.0, "b": 0.0, "c": 20.0}),
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
    ("a subset of the parameters selects the group",
     [score("a", 10, 5, params_key="threads=1 time=10"), score("b", 20, 5, params_key="threads=1 time=10"),
      score("a", 20, 5, params_key="threads=4 time=10"), score("c", 10, 5, params_key="threads=4 time=10")],
     {"annotations": {"podtax.io/params": "threads=4"}}, {"a": 100.0, "b": 20.0, "c": 0.0}),
    ("ambiguous subset: the group covering more nodes",
     [score("a", 20, 5, params_key="threads=4 time=10"), score("b", 10, 5, params_key="threads=4 time=10"),
      score("a", 10, 5, params_key="threads=4 time=30"), score("b", 10, 5, params_key="threads=4 time=30"),
      score("c", 10, 5, params_key="threads=4 time=30")],
     {"annotations": {"podtax.io/params": "threads=4"}}, {"a": 100.0, "b": 100.0, "c": 100.0}),
    ("ambiguous subset: an exact match wins over coverage",
     [score("a", 20, 5, params_key="threads=4"), score("b", 10, 5, params_key="threads=4 time=30"),
      score("c", 10, 5, params_key="threads=4 time=30")],
     {"annotations": {"podtax.io/params": "threads=4"}}, {"a": 100.0, "b": 20.0, "c": 20.0}),
    ("ambiguous subset, same coverage and runs: the first by parameter text",
     [score("a", 20, 5, params_key="threads=4 time=30"), score("b", 10, 5, params_key="threads=4 time=30"),
      score("a", 10, 5, params_key="threads=4 time=10"), score("b", 20, 5, params_key="threads=4 time=10")],
     {"annotations": {"podtax.io/params": "threads=4"}}, {"a": 0.0, "b": 100.0, "c": 20.0}),
    ("no group matches: resources alone",
     [score("a", 10, 5, params_key="threads=1"), score("b", 20, 5, params_key="threads=1")],
     {"annotations": {"podtax.io/params": "threads=8"}}, {"a": 20.0, "b": 20.0, "c": 20.0}),
    ("no benchmark label", [score("a", 10, 5)], {"test": None}, {"a": 20.0, "b": 20.0, "c": 20.0}),
    ("benchmark label podtax.io/benchmark", [score("a", 10, 5), score("b", 5, 5)],
     {"test": None, "labels": {"podtax.io/benchmark": "sysbench-cpu"}}, {"a": 100.0, "b": 0.0, "c": 20.0}),
]


@pytest.mark.parametrize(("scores", "pod_kw", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_benchmark_score(scores: list[Any], pod_kw: dict[str, Any], want: dict[str, float]) -> None:
    state = cluster("a", "b", "c")
    got = bench_scores(state, store_with(*scores), pod("p", **pod_kw))
    assert got == {k: want.get(k, 20.0) for k in got}


def _cycle(scores: list[Any], pod_kw: dict[str, Any], **kw: Any) -> dict[str, Any]:
    state = cluster("a", "b", "c")
    pi = PodInfo.from_dict(with_uid(pod("p", **pod_kw)))
    cycle: dict[str, Any] = {}
    BenchmarkScore(store_with(*scores), TTL, **kw).score(pi, state, state.feasible(pi), cycle)
    return cycle


@pytest.mark.parametrize(("scores", "pod_kw", "needles"), [
    ([score("a", 10, 50), score("b", 20, 50, updated_at=OLD)], {},
     ["1 node(s) have results older than the 1 h score TTL, ignored: b"]),
    ([score("a", 10, 50), score("b", 20, 50, flags=("BIMODAL", "THROTTLED"))], {},
     ["evidence not used, flagged by the analyzer: b (BIMODAL/THROTTLED)"]),
    ([score("a", 10, 50), score("b", 90, 50, flags=("EMULATED",))], {},  # b's tool ran through qemu-user
     ["evidence not used, flagged by the analyzer: b (EMULATED)"]),
    ([score("a", 10, 50, updated_at=OLD), score("b", 20, 50, updated_at=OLD)], {},
     ["no usable evidence of sysbench-cpu events_per_second [threads=1]: resources decided",
      "2 node(s) have results older than the 1 h score TTL, ignored: a, b"]),
    ([score("a", 10, 5, params_key="threads=1")], {"annotations": {"podtax.io/params": "threads=8"}},
     ["no benchmark results of sysbench-cpu match podtax.io/params='threads=8' (stored: threads=1)"]),
    ([score("a", 10, 5)], {"annotations": {"podtax.io/params": "threads"}},
     ["annotation 'threads' is not valid"]),
    ([score("a", 10, 5), score("b", 12, 5)], {},
     ["ranked by sysbench-cpu events_per_second [threads=1] (median per run, 2 node(s) with evidence)"]),
])
def test_the_decision_says_what_the_evidence_did(scores: list[Any], pod_kw: dict[str, Any],
                                                 needles: list[str]) -> None:
    text = describe(_cycle(scores, pod_kw)["benchmark"])
    for needle in needles:
        assert needle in text


def test_unmeasured_node_never_outranks_a_measured_one() -> None:
    # a and b are measured and nearly full; c is empty and unmeasured: resources favour c by far
    state = cluster("a", "b", "c", cpu="4")
    for n in ("a", "b"):
        state.upsert_pod(with_uid(pod(f"busy-{n}", node_name=n, cpu="3500m")))
    store = store_with(score("a", 10, 50), score("b", 5, 50))
    weights = Profile().weights()
    pi = PodInfo.from_dict(with_uid(pod("p")))
    last = [BenchmarkScore(store, TTL), LeastAllocated()]
    assert {decide(pi, state, last, weights, random.Random(s)).node for s in range(20)} == {"a"}
    d = decide(pi, state, last, weights, random.Random(0))
    assert [c for c, _ in d.candidates] == ["a", "b", "c"]
    compete = [BenchmarkScore(store, TTL, unmeasured="compete", missing_score=100), LeastAllocated()]
    assert decide(pi, state, compete, weights, random.Random(0)).node == "c"  # configured to compete
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
    assert load_profile(None).weights() == {"BenchmarkScore": 5.0, "LeastAllocated": 1.0, "InterPodAffinity": 2.0,
                                            "PodTopologySpread": 2.0, "TaintToleration": 3.0}  # kube-scheduler's
    assert load_profile(None).score.InterPodAffinity.hard_pod_affinity_weight == 1
    b = load_profile(None).score.BenchmarkScore  # what `podtax scores` tells of them
    assert b == cli_scores.DEFAULTS  # (it reads the profile the scheduler reads: --profile, PODTAX_SCHEDULER_PROFILE)


def test_profile_file(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("score:\n  BenchmarkScore: {weight: 2, shrink_runs: 10, no_interval_noise: 0.02}\n"
                 "  LeastAllocated: {weight: 0}\n")
    prof = load_profile(f)
    assert prof.weights() == {"BenchmarkScore": 2.0, "LeastAllocated": 0.0, "InterPodAffinity": 2.0,
                              "PodTopologySpread": 2.0, "TaintToleration": 3.0}
    assert prof.score.BenchmarkScore.shrink_runs == 10
    assert (prof.score.BenchmarkScore.no_interval_noise, load_profile(None).score.BenchmarkScore.no_interval_noise) \
        == (0.02, 0.05)


@pytest.mark.parametrize(("noise", "want"), [(0.1, {"a": 100.0, "b": 100.0}),  # 3% apart: within 10% / sqrt(5)
                                             (0.05, {"a": 100.0, "b": 99.33}),  # shrunk 1.8% apart: 2.2% band
                                             (0.02, {"a": 100.0, "b": 92.57}),  # 0.9% band
                                             (0.0, {"a": 100.0, "b": 90.85})])  # no band: the values taken as exact
def test_no_interval_noise_sets_the_band(noise: float, want: dict[str, float]) -> None:
    got = bench_scores(cluster("a", "b"), store_with(score("a", 1030, 5), score("b", 1000, 5)), pod("p"),
                       no_interval_noise=noise)
    assert got == want


@pytest.mark.parametrize(("text", "needle"), [
    ("score: [unclosed", "not valid YAML"),
    ("score:\n  Bogus: {weight: 1}\n", "Known score plugins"),
    ("score:\n  BenchmarkScore: {weight: -1}\n", "greater than or equal to 0"),
    ("score:\n  BenchmarkScore: {weight: 0}\n  LeastAllocated: {weight: 0}\n  InterPodAffinity: {weight: 0}\n"
     "  PodTopologySpread: {weight: 0}\n  TaintToleration: {weight: 0}\n", "every score weight is 0"),
    # the other three score only pods with preferences: every other pod would be placed at random
    ("score:\n  BenchmarkScore: {weight: 0}\n  LeastAllocated: {weight: 0}\n", "placed at random"),
    ("score:\n  InterPodAffinity: {hard_pod_affinity_weight: 101}\n", "less than or equal to 100"),
    ("score:\n  BenchmarkScore: {no_interval_noise: 1}\n", "from 0 up to 0.5"),  # a bound of 0: no ranking at all
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
