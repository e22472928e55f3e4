"""TaintToleration's score (kube-scheduler's, taint_toleration.go): a node with a PreferNoSchedule taint the pod does
not tolerate ranks lower. Before, the scheduler read only NoSchedule and NoExecute taints (the filter), so a Raspberry
Pi tainted PreferNoSchedule ("only if needed") took a pod whenever it had more free resources or measured within noise
of an x86 server, where kube-scheduler (TaintToleration, weight 3) keeps it off."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from podtax_scheduler.algorithm import decide
from podtax_scheduler.model import PodInfo
from podtax_scheduler.profile import Profile
from podtax_scheduler.scorestore import ScoreStore
from podtax_scheduler.scoring import BenchmarkScore, LeastAllocated
from podtax_scheduler.state import ClusterState
from podtax_scheduler.taint_score import EFFECT, TaintTolerationScore, intolerable, normalize

from tests.scheduler.sched_objects import node, pod, score, with_uid

PREFER = {"key": "podtax.io/slow", "value": "pi", "effect": "PreferNoSchedule"}
PREFER2 = {"key": "maintenance", "value": "soon", "effect": "PreferNoSchedule"}
HARD = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


@pytest.mark.parametrize(("taints", "tolerations", "expected"), [
    # node -> taints; expected score per node (None: the plugin skips the pod)
    ({"a": [], "b": []}, [], None),
    ({"a": [], "b": [PREFER]}, [], {"a": 100, "b": 0}),
    ({"a": [PREFER], "b": [PREFER]}, [], None),  # every candidate alike: all 0 would only lower every total
    ({"a": [PREFER, PREFER2], "b": [PREFER2, PREFER]}, [], None),
    ({"a": [PREFER], "b": [PREFER2], "c": [PREFER, PREFER2]}, [], {"a": 50, "b": 50, "c": 0}),
    ({"a": [], "b": [PREFER], "c": [PREFER, PREFER2]}, [], {"a": 100, "b": 50, "c": 0}),
    ({"a": [], "b": [PREFER, PREFER2], "c": [PREFER2], "d": [PREFER, PREFER2, {**PREFER2, "key": "x"}]}, [],
     {"a": 100, "b": 34, "c": 67, "d": 0}),  # 100 - 100 x raw // max, in integers as kube-scheduler
    ({"a": [], "b": [PREFER]}, [{"key": "podtax.io/slow", "operator": "Equal", "value": "pi"}], None),
    ({"a": [], "b": [PREFER]}, [{"key": "podtax.io/slow", "operator": "Exists", "effect": "PreferNoSchedule"}], None),
    ({"a": [], "b": [PREFER]}, [{"operator": "Exists"}], None),  # tolerates everything
    ({"a": [], "b": [PREFER]}, [{"key": "podtax.io/slow", "operator": "Equal", "value": "other"}], {"a": 100, "b": 0}),
    # a toleration of another effect does not count (kube-scheduler's getAllTolerationPreferNoSchedule)
    ({"a": [], "b": [PREFER]}, [{"key": "podtax.io/slow", "operator": "Exists", "effect": "NoSchedule"}],
     {"a": 100, "b": 0}),
    ({"a": [], "b": [HARD]}, [{"key": "dedicated", "operator": "Exists"}], None),  # NoSchedule: the filter's
])
def test_taint_toleration_score(taints: dict[str, list[dict[str, str]]], tolerations: list[dict[str, Any]],
                                expected: dict[str, int] | None) -> None:
    state = ClusterState()
    for name, t in taints.items():
        state.upsert_node(node(name, taints=t))
    pi = PodInfo.from_dict(with_uid(pod("p", tolerations=tolerations)))
    idx = np.array([state.slot[n] for n in taints])
    got = TaintTolerationScore().score(pi, state, idx, {})
    assert (None if got is None else dict(zip(taints, got.tolist(), strict=True))) == expected


def test_a_retainted_node_is_read_at_the_next_pod() -> None:
    state = ClusterState()
    for name in ("a", "b"):
        state.upsert_node(node(name))
    plugin, pi = TaintTolerationScore(), PodInfo.from_dict(with_uid(pod("p")))
    idx = np.array([state.slot["a"], state.slot["b"]])
    assert plugin.score(pi, state, idx, {}) is None
    state.upsert_node(node("b", taints=[PREFER]))
    assert plugin.score(pi, state, idx, {}).tolist() == [100.0, 0.0]
    state.delete_node("b")
    assert plugin.score(pi, state, np.array([state.slot["a"]]), {}) is None


def test_a_prefer_no_schedule_node_with_more_room_loses_with_the_default_profile() -> None:
    """kube-scheduler's default weights: TaintToleration 3 against LeastAllocated 1: the tainted node loses even
    empty, against a node three quarters full."""
    state = ClusterState()
    state.upsert_node(node("x86", cpu="16"))
    state.upsert_node(node("pi", cpu="4", arch="arm64", taints=[PREFER]))
    state.upsert_pod(with_uid(pod("busy", cpu="12", test=None, node_name="x86", phase="Running")))
    plugins = [LeastAllocated(), TaintTolerationScore()]
    pi = PodInfo.from_dict(with_uid(pod("p", cpu="1", test=None)))
    assert {decide(pi, state, plugins, Profile().weights(), random.Random(s)).node for s in range(10)} == {"x86"}


def test_candidates_tainted_alike_leave_the_totals_as_untainted_ones() -> None:
    """Two measured nodes with the same PreferNoSchedule taint: the totals (PlacementMade's, the report's) are those
    of the same nodes untainted, not lowered by TaintToleration's weight (each scoring 0)."""
    def totals(taints: list[dict[str, str]] | None) -> list[tuple[str, float]]:
        state = ClusterState()
        for name in ("a", "b"):
            state.upsert_node(node(name, cpu="16", taints=taints))
        store = ScoreStore("local", "kubernetes")
        store.put_score(score("a", 100, 20))
        store.put_score(score("b", 90, 20))
        plugins = [BenchmarkScore(store, 3600.0), LeastAllocated(), TaintTolerationScore()]
        pi = PodInfo.from_dict(with_uid(pod("p", cpu="1")))
        return decide(pi, state, plugins, Profile().weights(), random.Random(0)).candidates

    untainted = totals(None)
    assert untainted[0][0] == "a" and untainted[0][1] > 0
    assert totals([PREFER]) == untainted


def _slow_score(pod_info: PodInfo, state: ClusterState, idx: np.ndarray) -> np.ndarray | None:
    """The plugin as a1580536 wrote it (a loop over the tainted candidates on every decision): the reference."""
    tolerations = tuple(t for t in pod_info.tolerations if not t.effect or t.effect == EFFECT)
    raw = np.zeros(len(idx), dtype=np.int64)
    for j, i in enumerate(idx):
        node_info = state.nodes[state.names[int(i)]]
        raw[j] = intolerable(tuple(t for t in node_info.taints if t.effect == EFFECT), tolerations)
    return normalize(raw) if raw.min() != raw.max() else None


def test_the_cached_counts_give_the_slow_loops_answers_over_mixed_nodes() -> None:
    """Counts cached per (node generation, tolerations): the same answers as counting every candidate's taints,
    over mixed nodes, tolerations and candidate subsets, across node changes (retaint, delete, add)."""
    rng = random.Random(7)
    choices = [[], [PREFER], [PREFER2], [PREFER, PREFER2], [HARD], [HARD, PREFER2],
               [PREFER, PREFER2, {**PREFER2, "key": "x"}]]
    tolerations = [[], [{"key": "maintenance", "operator": "Exists"}], [{"operator": "Exists"}],
                   [{"key": "podtax.io/slow", "operator": "Equal", "value": "pi", "effect": "PreferNoSchedule"}],
                   [{"key": "x", "operator": "Exists", "effect": "NoSchedule"}]]
    state = ClusterState()
    for i in range(60):
        state.upsert_node(node(f"n{i}", taints=rng.choice(choices)))
    plugin, compared = TaintTolerationScore(), 0
    for round_ in range(30):
        if round_ % 5 == 4:  # node changes between decisions
            state.upsert_node(node(f"n{rng.randrange(60)}", taints=rng.choice(choices)))
            state.delete_node(f"n{rng.randrange(60)}")
            state.upsert_node(node(f"n{rng.randrange(60)}", taints=rng.choice(choices)))
        alive = sorted(state.slot.values())
        for tol in tolerations:
            pi = PodInfo.from_dict(with_uid(pod("p", tolerations=tol)))
            idx = np.array(sorted(rng.sample(alive, rng.randint(1, len(alive)))))
            want, got = _slow_score(pi, state, idx), plugin.score(pi, state, idx, {})
            assert (want is None and got is None) or (got is not None and want is not None
                                                      and np.array_equal(got, want)), (round_, tol)
            compared += want is not None
    assert compared > 50  # most comparisons are of scores, not of two Nones


def test_an_unmeasured_node_still_ranks_below_a_tainted_measured_one() -> None:
    """As the scheduler's README says: the taint never outweighs evidence (`unmeasured: last`, the default)."""
    state = ClusterState()
    state.upsert_node(node("rpi-1", cpu="4", arch="arm64", taints=[PREFER]))
    state.upsert_node(node("x86-new", cpu="16"))
    store = ScoreStore("local", "kubernetes")
    store.put_score(score("rpi-1", 100, 20))
    plugins = [BenchmarkScore(store, 3600.0), LeastAllocated(), TaintTolerationScore()]
    pi = PodInfo.from_dict(with_uid(pod("p", cpu="1")))
    assert {decide(pi, state, plugins, Profile().weights(), random.Random(s)).node for s in range(10)} == {"rpi-1"}
