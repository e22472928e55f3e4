"""A pod affinity term's namespaceSelector, read as kube-scheduler reads it: the term covers its `namespaces` and every
namespace whose labels the selector matches (`{}`: every namespace). The incoming pod's selectors are unrolled into
the namespaces they select; an existing pod's is matched against the labels of the incoming pod's namespace (none when
it is not known). Tables for the filter and the score (ClusterState with namespaces and their labels), the queue's
retry when a namespace is relabelled (only of the pods whose fit reads namespace labels: review 6, every
unschedulable pod was moved), and, end to end through the emulator, a pending pod placed once its namespace's labels
change while a pending pod that reads no namespace labels is not tried again."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from podtax_scheduler.affinity_score import InterPodAffinityScore
from podtax_scheduler.kube import api_client
from podtax_scheduler.model import PodInfo
from podtax_scheduler.podaffinity import AFFINITY_REASON as AFF
from podtax_scheduler.podaffinity import ANTI_AFFINITY_REASON as ANTI
from podtax_scheduler.podaffinity import EXISTING_ANTI_AFFINITY_REASON as EXIST
from podtax_scheduler.queue import SchedulingQueue
from podtax_scheduler.state import ClusterState

from tests.scheduler.conftest import events_for
from tests.scheduler.sched_objects import cluster, pod, term_pod
from tests.scheduler.test_pod_affinity import NOKEY, THREE, X, Y, aff, term
from tests.scheduler.test_pod_scores import M, pref, scores
from tests.scheduler.test_state_queue import Clock

TEAM_A = {"matchLabels": {"team": "a"}}
# namespace -> labels, as the namespace informer keeps them
NS = {"default": {}, "a1": {"team": "a"}, "a2": {"team": "a"}, "b1": {"team": "b"}, "listed": {}}


def P(name: str, labels: dict[str, str] | None = None, affinity: dict[str, Any] | None = None,  # noqa: N802
      namespace: str = "default") -> dict[str, Any]:
    return term_pod(name, labels, namespace=namespace, affinity=affinity)


def namespace(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def with_namespaces(s: ClusterState, labels: dict[str, dict[str, str]] = NS) -> ClusterState:
    s.namespaces.sync([namespace(n, lab) for n, lab in labels.items()])
    return s


FILTER_CASES: list[tuple[str, dict[str, Any], dict[str, dict[str, str]], list[tuple[dict[str, Any], str]],
                         dict[str, str | None]]] = [
    ("affinity: the selector matches the existing pod's namespace",
     P("p", Y, aff(term(labels=X, namespaceSelector=TEAM_A))), THREE, [(P("e", X, namespace="a1"), "n1")],
     {"n1": None, "n2": AFF, "n3": AFF}),
    ("affinity: the selector does not match it", P("p", Y, aff(term(labels=X, namespaceSelector=TEAM_A))), THREE,
     [(P("e", X, namespace="b1"), "n1")], {"n1": AFF, "n2": AFF, "n3": AFF}),
    ("affinity: the selector does not take the pod's own namespace",
     P("p", Y, aff(term(labels=X, namespaceSelector=TEAM_A))), THREE, [(P("e", X), "n1")],
     {"n1": AFF, "n2": AFF, "n3": AFF}),
    ("affinity: the union of namespaces and the selected ones",
     P("p", Y, aff(term(labels=X, namespaces=["listed"], namespaceSelector=TEAM_A))), THREE,
     [(P("e1", X, namespace="listed"), "n1"), (P("e2", X, namespace="a2"), "n2"), (P("e3", X, namespace="b1"), "n3")],
     {"n1": None, "n2": None, "n3": AFF}),
    ("affinity: matchExpressions on namespace labels",
     P("p", Y, aff(term(labels=X, namespaceSelector={"matchExpressions": [
         {"key": "team", "operator": "NotIn", "values": ["a"]}]}))), THREE,
     [(P("e1", X, namespace="a1"), "n1"), (P("e2", X, namespace="b1"), "n2")], {"n1": AFF, "n2": None, "n3": AFF}),
    ("affinity: namespaceSelector {} is every namespace", P("p", Y, aff(term(labels=X, namespaceSelector={}))),
     THREE, [(P("e", X, namespace="b1"), "n3")], {"n1": AFF, "n2": AFF, "n3": None}),
    ("affinity: no match anywhere, the pod's namespace selected: the first of its group",
     P("p", X, aff(term("zone", X, namespaceSelector=TEAM_A)), namespace="a1"), NOKEY, [], {"n1": None, "n2": AFF}),
    ("affinity: no match anywhere, the pod's namespace not selected",
     P("p", X, aff(term("zone", X, namespaceSelector=TEAM_A)), namespace="b1"), NOKEY, [], {"n1": AFF, "n2": AFF}),
    ("anti-affinity: the selector matches", P("p", Y, aff(anti=(term(labels=X, namespaceSelector=TEAM_A),))),
     THREE, [(P("e1", X, namespace="a1"), "n1"), (P("e2", X, namespace="b1"), "n2")],
     {"n1": ANTI, "n2": None, "n3": None}),
    ("existing pod's anti-affinity selects the incoming pod's namespace", P("p", X, namespace="a2"), THREE,
     [(P("e", Y, aff(anti=(term("zone", X, namespaceSelector=TEAM_A),))), "n1")],
     {"n1": EXIST, "n2": EXIST, "n3": None}),
    ("existing pod's anti-affinity does not select it", P("p", X, namespace="b1"), THREE,
     [(P("e", Y, aff(anti=(term("zone", X, namespaceSelector=TEAM_A),))), "n1")],
     {"n1": None, "n2": None, "n3": None}),
    ("existing pod's anti-affinity: namespaces and selector, the pod's in the list", P("p", X, namespace="listed"),
     THREE, [(P("e", Y, aff(anti=(term("zone", X, namespaces=["listed"], namespaceSelector=TEAM_A),))), "n3")],
     {"n1": None, "n2": None, "n3": EXIST}),
    ("existing pod's NotIn selector: a namespace not known has no labels, so it is selected",
     P("p", X, namespace="ghost"), THREE, [(P("e", Y, aff(anti=(term("zone", X, namespaceSelector={
         "matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["a"]}]}),))), "n3")],
     {"n1": None, "n2": None, "n3": EXIST}),
]


@pytest.mark.parametrize(("incoming", "nodes", "existing", "want"), [c[1:] for c in FILTER_CASES],
                         ids=[c[0] for c in FILTER_CASES])
def test_namespace_selector_filter(incoming: dict[str, Any], nodes: dict[str, dict[str, str]],
                                   existing: list[tuple[dict[str, Any], str]], want: dict[str, str | None]) -> None:
    s = with_namespaces(cluster(nodes, existing))
    p = PodInfo.from_dict(incoming)
    assert s.explain(p) == want
    assert {str(s.names[i]) for i in s.feasible(p)} == {n for n, r in want.items() if r is None}


SCORE_CASES: list[tuple[str, dict[str, Any], list[tuple[dict[str, Any], str]], dict[str, float] | None]] = [
    ("preferred affinity: the selected namespace's pod",
     P("p", affinity={"podAffinity": pref((5, term("region", X, namespaceSelector=TEAM_A)))}),
     [(P("e1", X, namespace="a1"), "m1"), (P("e2", X, namespace="b1"), "m3")], {"m1": 100, "m2": 100, "m3": 0}),
    ("preferred anti-affinity: the selected namespace's pod",
     P("p", affinity={"podAntiAffinity": pref((5, term("kubernetes.io/hostname", X, namespaceSelector=TEAM_A)))}),
     [(P("e", X, namespace="a2"), "m2")], {"m1": 100, "m2": 0, "m3": 100}),
    ("preferred affinity: no pod in a selected namespace", P(
        "p", affinity={"podAffinity": pref((5, term("region", X, namespaces=["listed"], namespaceSelector=TEAM_A)))}),
     [(P("e", X, namespace="b1"), "m1")], None),
    ("symmetry: an existing pod's preferred term selecting the pod's namespace", P("p", Y, namespace="a1"),
     [(P("e", affinity={"podAffinity": pref((5, term("zone", Y, namespaceSelector=TEAM_A)))}), "m3")],
     {"m1": 0, "m2": 0, "m3": 100}),
    ("symmetry: one not selecting it", P("p", Y, namespace="b1"),
     [(P("e", affinity={"podAffinity": pref((5, term("zone", Y, namespaceSelector=TEAM_A)))}), "m3")], None),
]


@pytest.mark.parametrize(("incoming", "existing", "want"), [c[1:] for c in SCORE_CASES],
                         ids=[c[0] for c in SCORE_CASES])
def test_namespace_selector_score(incoming: dict[str, Any], existing: list[tuple[dict[str, Any], str]],
                                  want: dict[str, float] | None) -> None:
    assert scores(InterPodAffinityScore(), incoming, with_namespaces(cluster(M, existing))) == want


def test_a_relabelled_namespace_is_read_at_the_next_attempt() -> None:
    s = with_namespaces(cluster(THREE, [(P("e", X, namespace="b1"), "n1")]))
    p = PodInfo.from_dict(P("p", Y, aff(term(labels=X, namespaceSelector=TEAM_A))))
    assert len(s.feasible(p)) == 0
    assert s.namespaces.upsert(namespace("b1", {"team": "a"})) == {"b1"}  # relabelled: worth another try
    assert {str(s.names[i]) for i in s.feasible(p)} == {"n1"}
    assert not s.namespaces.upsert(namespace("b1", {"team": "a"}))  # the same labels: nothing new
    assert not s.namespaces.upsert(namespace("b1", {}), deleted=True)  # gone: no pod left there to place
    assert len(s.feasible(p)) == 0


def test_a_relabelled_namespace_retries_only_the_pods_whose_fit_reads_namespace_labels() -> None:
    """Review 6: a namespace added or relabelled moved every unschedulable pod back to the queue. Now only a pod with
    a required term whose namespaceSelector is non-empty, and a pod in that namespace (an existing pod's required
    anti-affinity may select it by its namespace's labels); moved ones wait out their backoff (fake clock)."""
    pods = {name: PodInfo.from_dict(obj) for name, obj in {
        "plain": P("plain", Y),
        "listed": P("listed", Y, aff(term(labels=X, namespaces=["b1"]))),  # names its namespaces: reads no labels
        "preferred": P("preferred", Y, {"podAffinity": pref((5, term("zone", X, namespaceSelector=TEAM_A)))}),
        "selects": P("selects", Y, aff(term(labels=X, namespaceSelector=TEAM_A))),
        "anti-selects": P("anti-selects", Y, aff(anti=(term(labels=X, namespaceSelector=TEAM_A),))),
        "in-b1": P("in-b1", Y, namespace="b1"),
        "in-b1-plain": P("in-b1-plain", namespace="b1"),
    }.items()}
    q = SchedulingQueue(clock=Clock())
    for p in pods.values():
        q.add(p)
    while (item := q.pop(0)) is not None:
        q.unschedulable(item[0].uid)
    assert q.move_namespace_waiters_to_active({"b1"}) == 4
    where = {name: q.status(p.uid) for name, p in pods.items()}
    assert where == {"plain": ("unschedulable", 1), "listed": ("unschedulable", 1),
                     "preferred": ("unschedulable", 1), "selects": ("backoff", 1), "anti-selects": ("backoff", 1),
                     "in-b1": ("backoff", 1), "in-b1-plain": ("backoff", 1)}, where


def test_a_pending_pod_is_placed_once_its_namespace_is_selected(sim_factory: Any, scheduler_factory: Any) -> None:
    """End to end: the scheduler watches namespaces through the kubernetes client; a pod whose required affinity
    selects namespaces labelled team=a waits, Unschedulable, until the namespace of the pod it wants is labelled so
    (patched through the kubernetes client), then is placed beside that pod. A pending pod too big for any node,
    whose fit reads no namespace labels, is not tried again (review 6: it was, and before the other: its attempts
    went to 2)."""
    sim = sim_factory({"nodes": [{"name": n, "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
                                 for n in ("a", "b")]})
    sim.create(namespace("db", {"team": "b"}))
    queue = scheduler_factory(sim.kubeconfig).scheduler.queue
    sim.create(pod("db", namespace="db", cpu="100m", labels={"app": "db"}), namespace="db")
    db_node = sim.wait_for(lambda: (sim.get("pods", "db", "db") or {})["spec"].get("nodeName"))
    sim.create(pod("big", cpu="8"))
    big = sim.get("pods", "big", "default")["metadata"]["uid"]
    sim.wait_for(lambda: queue.status(big) == ("unschedulable", 1))
    near = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        term(labels={"app": "db"}, namespaceSelector=TEAM_A)]}}
    sim.create(pod("web", cpu="100m", affinity=near))
    failed = sim.wait_for(lambda: [e for e in events_for(sim, "web") if e["reason"] == "FailedScheduling"])
    assert "didn't match pod affinity rules" in failed[0]["message"], failed
    assert not sim.get("pods", "web", "default")["spec"].get("nodeName")
    with api_client(sim.kubeconfig) as api:
        client.CoreV1Api(api).patch_namespace("db", {"metadata": {"labels": {"team": "a"}}})
    assert sim.wait_for(lambda: sim.get("pods", "web", "default")["spec"].get("nodeName"), timeout=20) == db_node
    assert queue.status(big) == ("unschedulable", 1)
