"""InterPodAffinity and PodTopologySpread scores, table-driven like kube-scheduler's interpodaffinity and
podtopologyspread scoring tests: an incoming pod, nodes (name -> labels) and existing pods -> each candidate's score
(0..100), or None where the plugin skips the pod (nothing to score: it then weighs nothing in the total)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from podtax_scheduler.affinity_score import InterPodAffinityScore
from podtax_scheduler.algorithm import decide
from podtax_scheduler.model import PodInfo
from podtax_scheduler.profile import Profile
from podtax_scheduler.scorestore import ScoreStore
from podtax_scheduler.scoring import BenchmarkScore, LeastAllocated
from podtax_scheduler.spread_score import PodTopologySpreadScore
from podtax_scheduler.state import ClusterState

from tests.scheduler.sched_objects import cluster, pod, score, term_pod, with_uid

HOST = "kubernetes.io/hostname"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
X, Y = {"app": "x"}, {"app": "y"}


def term(key: str, labels: dict[str, str] | None, **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {} if labels is None else {"matchLabels": labels}, "topologyKey": key, **extra}


def pref(*weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {PREFERRED: [{"weight": w, "podAffinityTerm": t} for w, t in weighted]}


def P(name: str, labels: dict[str, str] | None = None, namespace: str = "default", deleting: bool = False,  # noqa: N802
      spread: list[dict[str, Any]] | None = None, cpu: str = "100m", **kw: Any) -> dict[str, Any]:
    return term_pod(name, labels, namespace=namespace, cpu=cpu, deleting=deleting, spread=spread, **kw)



def scores(plugin: Any, incoming: dict[str, Any], state: ClusterState) -> dict[str, float] | None:
    p = PodInfo.from_dict(incoming)
    idx = state.feasible(p)
    out = plugin.score(p, state, idx, {})
    return None if out is None else {str(state.names[i]): float(v) for i, v in zip(idx, out, strict=True)}


# ---------------------------------------------------------------- InterPodAffinity

M = {"m1": {"region": "r1", "zone": "z1"}, "m2": {"region": "r1", "zone": "z2"}, "m3": {"region": "r2", "zone": "z3"}}

AFFINITY_CASES: list[tuple[str, dict[str, Any], list[tuple[dict[str, Any], str]], dict[str, float] | None]] = [
    ("no terms anywhere: skipped", P("p", X), [(P("e", X), "m1")], None),
    ("preferred affinity: the matching pod's region", P("p", affinity={"podAffinity": pref((5, term("region", X)))}),
     [(P("e", X), "m1")], {"m1": 100, "m2": 100, "m3": 0}),
    ("preferred anti-affinity: away from the matching pod's host",
     P("p", affinity={"podAntiAffinity": pref((5, term(HOST, X)))}), [(P("e", X), "m1")],
     {"m1": 0, "m2": 100, "m3": 100}),
    ("weights add per node and stretch min-max, truncated (1 of 3: 33)",
     P("p", affinity={"podAffinity": pref((3, term(HOST, X)), (1, term(HOST, Y)))}),
     [(P("e", X), "m1"), (P("f", Y), "m2")], {"m1": 100, "m2": 33, "m3": 0}),
    # kube-scheduler computes 100 x (29 / 100) in floats: 28.999999999999996, truncated to 28
    ("the normalisation's float order: 29 of 100 is 28",
     P("p", affinity={"podAffinity": pref((29, term(HOST, X)), (100, term(HOST, Y)))}),
     [(P("e", X), "m1"), (P("f", Y), "m2")], {"m1": 28, "m2": 100, "m3": 0}),
    ("affinity and anti-affinity of one pod cancel: scored, all 0",
     P("p", affinity={"podAffinity": pref((2, term("region", X))), "podAntiAffinity": pref((2, term("region", X)))}),
     [(P("e", X), "m1")], {"m1": 0, "m2": 0, "m3": 0}),
    ("symmetry: an existing pod's required affinity matching the pod adds hardPodAffinityWeight", P("p", Y),
     [(P("e", affinity={"podAffinity": {REQUIRED: [term("zone", Y)]}}), "m1")], {"m1": 100, "m2": 0, "m3": 0}),
    ("symmetry: existing pods' preferred affinity and anti-affinity", P("p", Y),
     [(P("e", affinity={"podAffinity": pref((10, term("region", Y)))}), "m1"),
      (P("f", affinity={"podAntiAffinity": pref((4, term(HOST, Y)))}), "m3")], {"m1": 100, "m2": 100, "m3": 0}),
    ("an existing pod's required anti-affinity scores nothing (the filter's)",
     P("p", Y, node_selector={"region": "r1"}),
     [(P("e", affinity={"podAntiAffinity": {REQUIRED: [term(HOST, Y)]}}), "m3")], None),
    ("a pod of another namespace does not match", P("p", affinity={"podAffinity": pref((5, term(HOST, X)))}),
     [(P("e", X, namespace="other"), "m1")], None),
    ("unless the term lists its namespace",
     P("p", affinity={"podAffinity": pref((5, term(HOST, X, namespaces=["other"])))}),
     [(P("e", X, namespace="other"), "m1")], {"m1": 100, "m2": 0, "m3": 0}),
    ("namespaceSelector {}: every namespace",
     P("p", affinity={"podAffinity": pref((5, term(HOST, X, namespaceSelector={})))}),
     [(P("e", X, namespace="other"), "m1")], {"m1": 100, "m2": 0, "m3": 0}),
    ("a namespaceSelector selecting no known namespace scores nothing",
     P("p", affinity={"podAffinity": pref((5, term(HOST, X, namespaceSelector={"matchLabels": {"team": "a"}})))}),
     [(P("e", X, namespace="other"), "m1")], None),
    ("nor does an existing pod's", P("p", Y),
     [(P("e", affinity={"podAffinity": pref((5, term(HOST, Y, namespaceSelector={"matchLabels": {"t": "a"}})))}),
       "m1")], None),
    ("a node without the topologyKey adds nothing", P("p", affinity={"podAffinity": pref((5, term("rack", X)))}),
     [(P("e", X), "m1")], None),
    ("min and max over the candidates only", P("p", node_selector={"region": "r1"},
                                               affinity={"podAntiAffinity": pref((5, term(HOST, X)))}),
     [(P("e", X), "m3")], {"m1": 0, "m2": 0}),
]


@pytest.mark.parametrize(("incoming", "existing", "want"), [c[1:] for c in AFFINITY_CASES],
                         ids=[c[0] for c in AFFINITY_CASES])
def test_inter_pod_affinity_score(incoming: dict[str, Any], existing: list[tuple[dict[str, Any], str]],
                                  want: dict[str, float] | None) -> None:
    assert scores(InterPodAffinityScore(), incoming, cluster(M, existing)) == want


def test_hard_pod_affinity_weight_0_leaves_required_terms_out() -> None:
    existing = [(P("e", affinity={"podAffinity": {REQUIRED: [term("zone", Y)]}}), "m1")]
    assert scores(InterPodAffinityScore(0), P("p", Y), cluster(M, existing)) is None
    assert scores(InterPodAffinityScore(3), P("p", Y), cluster(M, existing)) == {"m1": 100, "m2": 0, "m3": 0}


def test_a_relabelled_or_removed_pod_no_longer_scores() -> None:
    e = P("e", affinity={"podAffinity": pref((10, term("region", Y)))})
    state = cluster(M, [(e, "m1")])
    assert scores(InterPodAffinityScore(), P("p", Y), state) == {"m1": 100, "m2": 100, "m3": 0}
    state.delete_pod(e["metadata"]["uid"])
    assert scores(InterPodAffinityScore(), P("p", Y), state) is None


# ---------------------------------------------------------------- PodTopologySpread

def soft(key: str = "zone", max_skew: int = 1, labels: dict[str, str] | None = X, **extra: Any) -> dict[str, Any]:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {} if labels is None else {"matchLabels": labels}, **extra}


ZONES = {"a1": {"zone": "a"}, "a2": {"zone": "a"}, "b1": {"zone": "b"}, "c1": {"zone": "c"}}

SPREAD_CASES: list[tuple[str, dict[str, Any], dict[str, dict[str, str]], list[tuple[dict[str, Any], str]],
                         dict[str, float] | None]] = [
    ("no constraint: skipped", P("p", X), ZONES, [(P("e", X), "a1")], None),
    ("DoNotSchedule only: the filter's, skipped", P("p", X, spread=[{**soft(), "whenUnsatisfiable": "DoNotSchedule"}]),
     ZONES, [], None),
    ("empty cluster: all 100", P("p", X, spread=[soft()]), ZONES, [], {"a1": 100, "a2": 100, "b1": 100, "c1": 100}),
    # 3 zones: weight ln 5; zone a: round(1.61) = 2, b and c 0 -> 100 x (2 + 0 - raw) // 2
    ("one in zone a: the others' zones", P("p", X, spread=[soft()]), ZONES, [(P("e", X), "a1")],
     {"a1": 0, "a2": 0, "b1": 100, "c1": 100}),
    # + maxSkew - 1 = 2 each: a round(3.61) = 4, b and c 2 -> 100 x (4 + 2 - raw) // 4
    ("maxSkew 3 waters the difference down", P("p", X, spread=[soft(max_skew=3)]), ZONES, [(P("e", X), "a1")],
     {"a1": 50, "a2": 50, "b1": 100, "c1": 100}),
    # 4 candidates: weight ln 6; a1 round(1.79) = 2, b1 round(3.58) = 4
    ("hostname: the node's own pods", P("p", X, spread=[soft(HOST)]), ZONES,
     [(P("e", X), "a1"), (P("f", X), "b1"), (P("g", X), "b1")], {"a1": 50, "a2": 100, "b1": 0, "c1": 100}),
    ("a candidate without the key scores 0", P("p", X, spread=[soft()]), {**ZONES, "nz": {}}, [],
     {"a1": 100, "a2": 100, "b1": 100, "c1": 100, "nz": 0}),
    # zone ln 5 + host ln 6: a1 3.40 -> 3, a2 1.61 -> 2, b1 3.40 -> 3, c1 0
    ("two constraints add up", P("p", X, spread=[soft(), soft(HOST)]), ZONES, [(P("e", X), "a1"), (P("f", X), "b1")],
     {"a1": 0, "a2": 33, "b1": 0, "c1": 100}),
    ("other namespaces, terminating pods and other labels do not count", P("p", X, spread=[soft()]), ZONES,
     [(P("e", X, namespace="other"), "a1"), (P("f", X, deleting=True), "a2"), (P("g", Y), "b1")],
     {"a1": 100, "a2": 100, "b1": 100, "c1": 100}),
    ("labelSelector {} counts no pod", P("p", X, spread=[soft(labels=None)]), ZONES, [(P("e", X), "a1")],
     {"a1": 100, "a2": 100, "b1": 100, "c1": 100}),
    ("nodeAffinityPolicy Honor: pods on nodes the pod may not use do not count",
     P("p", X, spread=[soft()], node_selector={"disk": "ssd"}),
     {"a1": {"zone": "a", "disk": "ssd"}, "a2": {"zone": "a"}, "b1": {"zone": "b", "disk": "ssd"}},
     [(P("e", X), "a2")], {"a1": 100, "b1": 100}),
    ("nodeAffinityPolicy Ignore: they do", P("p", X, spread=[soft(nodeAffinityPolicy="Ignore")],
                                            node_selector={"disk": "ssd"}),
     {"a1": {"zone": "a", "disk": "ssd"}, "a2": {"zone": "a"}, "b1": {"zone": "b", "disk": "ssd"}},
     [(P("e", X), "a2")], {"a1": 0, "b1": 100}),
    ("matchLabelKeys adds the pod's value", P("p", {"app": "x", "rev": "2"}, spread=[soft(matchLabelKeys=["rev"])]),
     ZONES, [(P("e", {"app": "x", "rev": "1"}), "a1"), (P("f", {"app": "x", "rev": "2"}), "b1")],
     {"a1": 100, "a2": 100, "b1": 0, "c1": 100}),
]


@pytest.mark.parametrize(("incoming", "nodes", "existing", "want"), [c[1:] for c in SPREAD_CASES],
                         ids=[c[0] for c in SPREAD_CASES])
def test_pod_topology_spread_score(incoming: dict[str, Any], nodes: dict[str, dict[str, str]],
                                   existing: list[tuple[dict[str, Any], str]], want: dict[str, float] | None) -> None:
    assert scores(PodTopologySpreadScore(), incoming, cluster(nodes, existing)) == want


# ---------------------------------------------------------------- in the decision, beside the measured speed

def plugins(store: ScoreStore) -> list[Any]:
    return [BenchmarkScore(store, 3600.0), LeastAllocated(), InterPodAffinityScore(), PodTopologySpreadScore()]


def store_with(*node_scores: Any) -> ScoreStore:
    store = ScoreStore("local", "kubernetes")
    for s in node_scores:
        store.put_score(s)
    return store


def test_a_pod_without_preferences_is_decided_as_before() -> None:
    """The two plugins skip it: its totals are the weighted mean of BenchmarkScore and LeastAllocated alone."""
    state = cluster({"a": {"zone": "a"}, "b": {"zone": "b"}}, [(P("e", X), "a")])
    store = store_with(score("a", 10, 50), score("b", 9.5, 50))
    p = PodInfo.from_dict(with_uid(pod("p", labels=X)))
    both = decide(p, state, plugins(store), Profile().weights(), random.Random(0))
    alone = decide(p, state, plugins(store)[:2], Profile().weights(), random.Random(0))
    assert both.candidates == alone.candidates and set(both.details["scores"]) == {"BenchmarkScore", "LeastAllocated"}


@pytest.mark.parametrize(("slower", "want"), [(9.9, "b"), (8.0, "a")])
def test_spread_preference_moves_a_pod_only_within_what_speed_allows(slower: float, want: str) -> None:
    """Default weights: a ScheduleAnyway spread preference (2) sends the pod to the empty zone when its node is within
    1% of the fastest, not when it is 20% slower (BenchmarkScore 5 dominates)."""
    state = cluster({"a": {"zone": "a"}, "b": {"zone": "b"}}, [(P("e", X), "a")])
    store = store_with(score("a", 10, 50), score("b", slower, 50))
    obj = with_uid(pod("p", labels=X))
    obj["spec"]["topologySpreadConstraints"] = [soft()]
    p = PodInfo.from_dict(obj)
    d = decide(p, state, plugins(store), Profile().weights(), random.Random(0))
    assert d.node == want, d
    assert d.details["scores"]["PodTopologySpread"] == (100.0 if want == "b" else 0.0)


def test_preferences_place_pods_through_the_scheduler(sim_factory: Any, scheduler_factory: Any) -> None:
    """Through the real scheduler and the emulator: b is half full, so resources alone (LeastAllocated) pick a, where
    an app=x pod runs; a preferred anti-affinity to it, or a ScheduleAnyway spread of app=x pods over hosts, picks b."""
    sim = sim_factory({"nodes": [{"name": n, "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
                                 for n in ("a", "b")]})
    sim.create(P("filler", cpu="2", node_name="b", scheduler="default-scheduler"))
    sim.create(P("peer", X, node_name="a", scheduler="default-scheduler"))
    scheduler_factory(sim.kubeconfig)

    def node_of(name: str) -> str:
        return str(((sim.get("pods", name, "default") or {}).get("spec") or {}).get("nodeName") or "")

    sim.create(P("plain"))
    sim.create(P("shy", affinity={"podAntiAffinity": pref((10, term(HOST, X)))}))
    sim.create(P("spread", {"app": "z"}, spread=[soft(HOST)]))  # not app=x: shy's anti-affinity would weigh too
    assert sim.wait_for(lambda: node_of("plain")) == "a"
    assert sim.wait_for(lambda: node_of("shy")) == "b"
    assert sim.wait_for(lambda: node_of("spread")) == "b"
