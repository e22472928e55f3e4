"""InterPodAffinity for required terms, table-driven like kube-scheduler's interpodaffinity filtering tests: an
incoming pod, nodes (name -> labels) and existing pods (bound, or assumed by this scheduler) -> each node's reason,
read both from the vector path (ClusterState.feasible) and the explaining one (ClusterState.explain)."""

from __future__ import annotations

from typing import Any

import pytest
from podtax_scheduler.model import PodInfo
from podtax_scheduler.podaffinity import AFFINITY_REASON as AFF
from podtax_scheduler.podaffinity import ANTI_AFFINITY_REASON as ANTI
from podtax_scheduler.podaffinity import EXISTING_ANTI_AFFINITY_REASON as EXIST
from podtax_scheduler.podaffinity import LabelSelector
from podtax_scheduler.queue import SchedulingQueue
from podtax_scheduler.state import ClusterState

from tests.scheduler.conftest import events_for
from tests.scheduler.sched_objects import cluster, node, pod, with_uid

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
HOST = "kubernetes.io/hostname"


def term(key: str = HOST, labels: dict[str, str] | None = None, exprs: list[dict[str, Any]] | None = None,
         **extra: Any) -> dict[str, Any]:
    selector: dict[str, Any] = {}
    if labels is not None:
        selector["matchLabels"] = labels
    if exprs is not None:
        selector["matchExpressions"] = exprs
    return {"labelSelector": selector, "topologyKey": key, **extra}


def aff(*terms: dict[str, Any], anti: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if terms:
        out["podAffinity"] = {REQUIRED: list(terms)}
    if anti:
        out["podAntiAffinity"] = {REQUIRED: list(anti)}
    return out


def P(name: str, labels: dict[str, str] | None = None, affinity: dict[str, Any] | None = None,  # noqa: N802
      namespace: str = "default", **kw: Any) -> dict[str, Any]:
    return with_uid(pod(name, cpu="100m", labels=labels, affinity=affinity, namespace=namespace, test=None, **kw))


X = {"app": "x"}
Y = {"app": "y"}
THREE = {"n1": {"zone": "a"}, "n2": {"zone": "a"}, "n3": {"zone": "b"}}
NOKEY = {"n1": {"zone": "a"}, "n2": {}}

CASES: list[tuple[str, dict[str, Any], dict[str, dict[str, str]], list[tuple[dict[str, Any], str]],
                  dict[str, str | None]]] = [
    ("no affinity, nothing placed", P("p"), THREE, [], {"n1": None, "n2": None, "n3": None}),
    ("affinity to a pod on n1 by hostname", P("p", affinity=aff(term(labels=X))), THREE, [(P("e", X), "n1")],
     {"n1": None, "n2": AFF, "n3": AFF}),
    ("affinity by zone: the whole zone", P("p", affinity=aff(term("zone", X))), THREE, [(P("e", X), "n1")],
     {"n1": None, "n2": None, "n3": AFF}),
    ("affinity: a node without the key fails", P("p", affinity=aff(term("zone", X))), NOKEY, [(P("e", X), "n1")],
     {"n1": None, "n2": AFF}),
    ("affinity: no match anywhere, the pod matches its own term", P("p", X, aff(term("zone", X))), NOKEY, [],
     {"n1": None, "n2": AFF}),
    ("affinity: no match anywhere, nor itself", P("p", Y, aff(term("zone", X))), NOKEY, [],
     {"n1": AFF, "n2": AFF}),
    ("affinity: a match elsewhere ends the first-pod exception", P("p", X, aff(term(labels=X))), THREE,
     [(P("e", X), "n3")], {"n1": AFF, "n2": AFF, "n3": None}),
    ("affinity: a match in another namespace is no match", P("p", Y, aff(term(labels=X))), THREE,
     [(P("e", X, namespace="other"), "n1")], {"n1": AFF, "n2": AFF, "n3": AFF}),
    ("affinity: namespaces names the other one", P("p", Y, aff(term(labels=X, namespaces=["other"]))), THREE,
     [(P("e", X, namespace="other"), "n1")], {"n1": None, "n2": AFF, "n3": AFF}),
    ("affinity: namespaceSelector {} is every namespace", P("p", Y, aff(term(labels=X, namespaceSelector={}))),
     THREE, [(P("e", X, namespace="other"), "n2")], {"n1": AFF, "n2": None, "n3": AFF}),
    ("affinity: one pod must match ALL terms", P("p", affinity=aff(term(labels=X), term(labels={"tier": "db"}))),
     THREE, [(P("e1", X), "n1"), (P("e2", {"app": "x", "tier": "db"}), "n2"), (P("e3", {"tier": "db"}), "n3")],
     {"n1": AFF, "n2": None, "n3": AFF}),
    ("matchExpressions In, NotIn, Exists, DoesNotExist", P("p", affinity=aff(term(exprs=[
        {"key": "app", "operator": "In", "values": ["x", "z"]}, {"key": "tier", "operator": "NotIn", "values": ["db"]},
        {"key": "team", "operator": "Exists"}, {"key": "canary", "operator": "DoesNotExist"}]))), THREE,
     [(P("e1", {"app": "x", "team": "t"}), "n1"), (P("e2", {"app": "x", "team": "t", "tier": "db"}), "n2"),
      (P("e3", {"app": "z", "team": "t", "canary": "1"}), "n3")], {"n1": None, "n2": AFF, "n3": AFF}),
    ("anti-affinity by hostname", P("p", affinity=aff(anti=(term(labels=X),))), THREE, [(P("e", X), "n1")],
     {"n1": ANTI, "n2": None, "n3": None}),
    ("anti-affinity by zone; a node without the key passes", P("p", affinity=aff(anti=(term("zone", X),))),
     {**THREE, "n4": {}}, [(P("e", X), "n2")], {"n1": ANTI, "n2": ANTI, "n3": None, "n4": None}),
    ("anti-affinity to labels nobody has", P("p", affinity=aff(anti=(term(labels=Y),))), THREE,
     [(P("e", X), "n1")], {"n1": None, "n2": None, "n3": None}),
    ("anti-affinity without labelSelector matches nothing",
     P("p", affinity=aff(anti=({"topologyKey": HOST},))), THREE, [(P("e", X), "n1")],
     {"n1": None, "n2": None, "n3": None}),
    ("anti-affinity with labelSelector {} matches every pod", P("p", affinity=aff(anti=(term(),))), THREE,
     [(P("e", Y), "n3")], {"n1": None, "n2": None, "n3": ANTI}),
    ("existing pod's anti-affinity (symmetry)", P("p", X), THREE,
     [(P("e", Y, aff(anti=(term("zone", X),))), "n3")], {"n1": None, "n2": None, "n3": EXIST}),
    ("existing pod's anti-affinity does not match the pod", P("p", Y), THREE,
     [(P("e", Y, aff(anti=(term("zone", X),))), "n3")], {"n1": None, "n2": None, "n3": None}),
    ("existing pod's anti-affinity covers its own namespace only", P("p", X, namespace="other"), THREE,
     [(P("e", Y, aff(anti=(term("zone", X),))), "n1")], {"n1": None, "n2": None, "n3": None}),
    ("existing pod's namespaceSelector: a namespace not known has no labels", P("p", X, namespace="other"), THREE,
     [(P("e", Y, aff(anti=(term("zone", X, namespaceSelector={"matchLabels": {"team": "t"}}),))), "n1")],
     {"n1": None, "n2": None, "n3": None}),
    ("anti-affinity matchLabelKeys: only the pod's own revision", P("p", {"app": "x", "rev": "2"}, aff(anti=(
        term(labels=X, matchLabelKeys=["rev"]),))), THREE,
     [(P("e1", {"app": "x", "rev": "1"}), "n1"), (P("e2", {"app": "x", "rev": "2"}), "n2")],
     {"n1": None, "n2": ANTI, "n3": None}),
    ("affinity mismatchLabelKeys: beside another tenant's pod", P("p", {"app": "x", "tenant": "a"}, aff(
        term(labels=X, mismatchLabelKeys=["tenant"]))), THREE,
     [(P("e1", {"app": "x", "tenant": "a"}), "n1"), (P("e2", {"app": "x", "tenant": "b"}), "n2")],
     {"n1": AFF, "n2": None, "n3": AFF}),
    ("matchLabelKeys leaves an absent labelSelector matching nothing", P("p", {"rev": "2"}, aff(anti=(
        {"topologyKey": HOST, "matchLabelKeys": ["rev"]},))), THREE, [(P("e", {"rev": "2"}), "n1")],
     {"n1": None, "n2": None, "n3": None}),
    ("affinity is reported before anti-affinity, anti-affinity before existing pods'",
     P("p", X, aff(term("zone", {"db": "1"}), anti=(term(labels=X),))), THREE,
     [(P("db", {"db": "1"}, aff(anti=(term(labels=X),))), "n1"), (P("e", X), "n2")],
     {"n1": EXIST, "n2": ANTI, "n3": AFF}),
]



def verdicts(s: ClusterState, incoming: PodInfo) -> tuple[dict[str, Any], set[str]]:
    explained = s.explain(incoming)
    feasible = {str(s.names[i]) for i in s.feasible(incoming)}
    return explained, feasible


@pytest.mark.parametrize(("incoming", "nodes", "existing", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_inter_pod_affinity(incoming: dict[str, Any], nodes: dict[str, dict[str, str]],
                            existing: list[tuple[dict[str, Any], str]], want: dict[str, str | None]) -> None:
    explained, feasible = verdicts(cluster(nodes, existing), PodInfo.from_dict(incoming))
    assert explained == want
    assert feasible == {n for n, r in want.items() if r is None}


def test_assumed_pods_count_and_forgotten_ones_stop_counting() -> None:
    s = cluster(THREE, [])
    obj = P("r1", X, aff(anti=(term(labels=X),)))
    s.upsert_pod(obj)  # pending, as the informer saw it
    replica = PodInfo.from_dict(obj)
    s.assume(replica, "n2")  # bound by this scheduler, the informer has not seen it yet
    second = PodInfo.from_dict(P("r2", X, aff(anti=(term(labels=X),))))
    assert verdicts(s, second) == ({"n1": None, "n2": ANTI, "n3": None}, {"n1", "n3"})
    s.forget(replica.uid)
    assert verdicts(s, second) == ({"n1": None, "n2": None, "n3": None}, {"n1", "n2", "n3"})


def test_finished_and_deleted_pods_do_not_count() -> None:
    done = P("done", X, phase="Succeeded")
    gone = P("gone", X)
    s = cluster(THREE, [(done, "n1"), (gone, "n2")])
    s.delete_pod(gone["metadata"]["uid"])
    incoming = PodInfo.from_dict(P("p", affinity=aff(anti=(term(labels=X),))))
    assert verdicts(s, incoming) == ({"n1": None, "n2": None, "n3": None}, {"n1", "n2", "n3"})


def test_a_placed_pods_new_labels_count() -> None:
    e = P("e", Y)
    guard = P("guard", Y, aff(anti=(term("zone", X),)))
    s = cluster(THREE, [(e, "n1"), (guard, "n3")])
    incoming = PodInfo.from_dict(P("p", affinity=aff(anti=(term(labels=X),))))
    assert verdicts(s, incoming)[1] == {"n1", "n2", "n3"}
    e["metadata"]["labels"] = X
    s.upsert_pod(e)
    assert verdicts(s, incoming)[1] == {"n2", "n3"}
    e["metadata"]["labels"] = Y
    s.upsert_pod(e)
    guard["metadata"]["labels"] = {"app": "z"}
    s.upsert_pod(guard)  # relabelled, its anti-affinity still holds
    assert verdicts(s, PodInfo.from_dict(P("q", X))) == ({"n1": None, "n2": None, "n3": EXIST}, {"n1", "n2"})


def test_a_relabelled_node_moves_between_domains() -> None:
    s = cluster(THREE, [(P("e", X), "n1")])
    incoming = PodInfo.from_dict(P("p", affinity=aff(term("zone", X))))
    assert verdicts(s, incoming)[1] == {"n1", "n2"}
    s.upsert_node(node("n3", labels={"zone": "a"}))
    assert verdicts(s, incoming)[1] == {"n1", "n2", "n3"}


@pytest.mark.parametrize(("raw", "labels", "want"), [
    (None, {}, False),
    ({}, {}, True),
    ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
    ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
    ({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}, {"a": "2"}, False),
])
def test_label_selector(raw: dict[str, Any] | None, labels: dict[str, str], want: bool) -> None:
    assert LabelSelector.parse(raw).matches(labels) is want


def test_affinity_waiting_pods_move_when_asked() -> None:
    q = SchedulingQueue(initial_backoff_s=0.0)
    waiting = PodInfo.from_dict(P("w", affinity=aff(term(labels=X))))
    # anti-affinity too: a placed pod relabelled out of its selector lets it fit (review r2)
    shunning = PodInfo.from_dict(P("s", affinity=aff(anti=(term(labels=X),))))
    plain = PodInfo.from_dict(P("plain"))
    for p in (waiting, shunning, plain):
        q.add(p)
        popped = q.pop(0.1)
        assert popped is not None
        q.unschedulable(popped[0].uid)
    assert q.move_pod_waiters_to_active() == 2
    assert q.counts() == {"active": 2, "backoff": 0, "unschedulable": 1, "inflight": 0}
    assert q.move_pod_waiters_to_active() == 0


def test_anti_affinity_spreads_replicas_and_affinity_waits_for_its_pod(sim_factory: Any,
                                                                       scheduler_factory: Any) -> None:
    """Through the real scheduler and the emulator: three replicas that must not share a node land on three nodes,
    a fourth stays Pending with kube-scheduler's reason in its FailedScheduling Event, and a pod with affinity to a
    pod not yet there is placed beside it once it is (without waiting out the five-minute unschedulable timeout)."""
    sim = sim_factory({"nodes": [{"name": n, "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
                                 for n in ("a", "b", "c")]})
    scheduler_factory(sim.kubeconfig)
    web = {"app": "web"}
    spread = aff(anti=(term(labels=web),))
    for i in range(4):
        sim.create(pod(f"web-{i}", cpu="100m", labels=web, affinity=spread))

    def node_of(name: str) -> str:
        return str(((sim.get("pods", name, "default") or {}).get("spec") or {}).get("nodeName") or "")

    placed = sim.wait_for(lambda: (lambda got: got if len(got) == 3 else None)(
        {n: node_of(n) for n in (f"web-{i}" for i in range(4)) if node_of(n)}))
    assert sorted(placed.values()) == ["a", "b", "c"], placed
    left = next(f"web-{i}" for i in range(4) if f"web-{i}" not in placed)
    failed = sim.wait_for(lambda: [e for e in events_for(sim, left) if e["reason"] == "FailedScheduling"])
    assert failed[0]["message"] == f"0/3 nodes are available: 3 {ANTI}.", failed
    assert not node_of(left)

    sim.create(pod("cache", cpu="100m", labels={"app": "cache"}, affinity=aff(term(labels={"app": "db"}))))
    sim.wait_for(lambda: [e for e in events_for(sim, "cache") if e["reason"] == "FailedScheduling"])
    assert not node_of("cache")
    sim.create(pod("db", cpu="100m", labels={"app": "db"}))
    db_node = sim.wait_for(lambda: node_of("db"))
    assert sim.wait_for(lambda: node_of("cache")) == db_node
    assert not node_of(left)
