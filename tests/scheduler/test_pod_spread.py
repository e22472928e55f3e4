"""PodTopologySpread for whenUnsatisfiable: DoNotSchedule, table-driven like kube-scheduler's podtopologyspread
filtering tests: an incoming pod, nodes (name -> labels, taints) and existing pods -> each node's reason, read both
from the vector path (ClusterState.feasible) and the explaining one (ClusterState.explain)."""

from __future__ import annotations

from typing import Any

import pytest
from podtax_scheduler.model import PodInfo
from podtax_scheduler.podspread import CONSTRAINTS_REASON as SKEW
from podtax_scheduler.podspread import MISSING_LABEL_REASON as MISSING

from tests.scheduler.conftest import events_for
from tests.scheduler.sched_objects import cluster, node, term_pod

X = {"app": "x"}
TAINT = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}


def spread(key: str = "zone", max_skew: int = 1, labels: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": X if labels is None else labels}, **extra}


def P(name: str, labels: dict[str, str] | None = None, constraints: list[dict[str, Any]] | None = None,  # noqa: N802
      namespace: str = "default", cpu: str = "100m", deleting: bool = False, **kw: Any) -> dict[str, Any]:
    return term_pod(name, labels, namespace=namespace, cpu=cpu, deleting=deleting, spread=constraints, **kw)


ZONES = {"a1": {"zone": "a"}, "a2": {"zone": "a"}, "b1": {"zone": "b"}, "c1": {"zone": "c"}}

CASES: list[tuple[str, dict[str, Any], dict[str, dict[str, Any]], list[tuple[dict[str, Any], str]],
                  dict[str, str | None]]] = [
    ("empty cluster: every zone", P("p", X, [spread()]), ZONES, [],
     {"a1": None, "a2": None, "b1": None, "c1": None}),
    ("one in zone a: a would be 2 against 0", P("p", X, [spread()]), ZONES, [(P("e", X), "a1")],
     {"a1": SKEW, "a2": SKEW, "b1": None, "c1": None}),
    ("maxSkew 2 allows it", P("p", X, [spread(max_skew=2)]), ZONES, [(P("e", X), "a1")],
     {"a1": None, "a2": None, "b1": None, "c1": None}),
    ("a node without the key fails, and is no domain", P("p", X, [spread()]), {**ZONES, "nz": {}},
     [(P("e", X), "a1"), (P("f", X), "b1"), (P("g", X), "c1")],
     {"a1": None, "a2": None, "b1": None, "c1": None, "nz": MISSING}),
    # kube-scheduler's countPodsMatchSelector counts no pod for an empty selector: it never blocks (review r2)
    ("labelSelector {} counts no pod", P("p", X, [spread(labels={})]), ZONES, [(P("e", X), "a1"), (P("f", X), "a2")],
     {"a1": None, "a2": None, "b1": None, "c1": None}),
    ("the pod not matching its selector adds nothing", P("p", {"app": "y"}, [spread()]), ZONES,
     [(P("e", X), "a1")], {"a1": None, "a2": None, "b1": None, "c1": None}),
    ("pods of other namespaces or labels do not count", P("p", X, [spread()]), ZONES,
     [(P("e", X, namespace="other"), "a1"), (P("f", {"app": "y"}), "b1")],
     {"a1": None, "a2": None, "b1": None, "c1": None}),
    ("terminating and finished pods do not count", P("p", X, [spread()]), ZONES,
     [(P("e", X, phase="Succeeded"), "a1"), (P("f", X, deleting=True), "b1")],
     {"a1": None, "a2": None, "b1": None, "c1": None}),
    ("minDomains above the domains: the minimum is 0", P("p", X, [spread(max_skew=2, minDomains=4)]), ZONES,
     [(P("e", X), "a1"), (P("f", X), "b1"), (P("g", X), "c1"), (P("h", X), "c1")],
     {"a1": None, "a2": None, "b1": None, "c1": SKEW}),
    ("without minDomains the minimum is 1", P("p", X, [spread(max_skew=2)]), ZONES,
     [(P("e", X), "a1"), (P("f", X), "b1"), (P("g", X), "c1"), (P("h", X), "c1")],
     {"a1": None, "a2": None, "b1": None, "c1": None}),
    ("nodeAffinityPolicy Honor: zones the pod cannot use are no domains",
     P("p", X, [spread()], node_selector={"disk": "ssd"}),
     {"a1": {"zone": "a", "disk": "ssd"}, "b1": {"zone": "b", "disk": "ssd"}, "c1": {"zone": "c"}},
     [(P("e", X), "a1")], {"a1": SKEW, "b1": None, "c1": "node(s) didn't match Pod's node affinity/selector"}),
    ("nodeAffinityPolicy Ignore: they are, with their 0",
     P("p", X, [spread(nodeAffinityPolicy="Ignore")], node_selector={"disk": "ssd"}),
     {"a1": {"zone": "a", "disk": "ssd"}, "b1": {"zone": "b", "disk": "ssd"}, "c1": {"zone": "c"}},
     [(P("e", X), "a1"), (P("f", X), "b1")],
     {"a1": SKEW, "b1": SKEW, "c1": "node(s) didn't match Pod's node affinity/selector"}),
    ("nodeTaintsPolicy Honor: a tainted zone is no domain", P("p", X, [spread(nodeTaintsPolicy="Honor")]),
     {"a1": {"zone": "a"}, "b1": {"zone": "b"}, "c1": {"zone": "c", "taint": "1"}},
     [(P("e", X), "a1"), (P("f", X), "b1")],
     {"a1": None, "b1": None, "c1": "node(s) had untolerated taint {dedicated: db}"}),
    ("nodeTaintsPolicy Ignore (default): it is, with its 0", P("p", X, [spread()]),
     {"a1": {"zone": "a"}, "b1": {"zone": "b"}, "c1": {"zone": "c", "taint": "1"}},
     [(P("e", X), "a1"), (P("f", X), "b1")],
     {"a1": SKEW, "b1": SKEW, "c1": "node(s) had untolerated taint {dedicated: db}"}),
    ("two constraints: zone and host", P("p", X, [spread(), spread("kubernetes.io/hostname")]), ZONES,
     [(P("e", X), "a1"), (P("f", X), "b1")], {"a1": SKEW, "a2": SKEW, "b1": SKEW, "c1": None}),
    ("matchLabelKeys adds the pod's value", P("p", {"app": "x", "rev": "2"}, [spread(matchLabelKeys=["rev"])]),
     ZONES, [(P("e", {"app": "x", "rev": "1"}), "a1"), (P("f", {"app": "x", "rev": "2"}), "b1")],
     {"a1": None, "a2": None, "b1": SKEW, "c1": None}),
    ("ScheduleAnyway is not checked", P("p", X, [{**spread(), "whenUnsatisfiable": "ScheduleAnyway"}]), ZONES,
     [(P("e", X), "a1"), (P("f", X), "a2")], {"a1": None, "a2": None, "b1": None, "c1": None}),
]



@pytest.mark.parametrize(("incoming", "nodes", "existing", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_pod_topology_spread(incoming: dict[str, Any], nodes: dict[str, dict[str, Any]],
                             existing: list[tuple[dict[str, Any], str]], want: dict[str, str | None]) -> None:
    s = cluster(nodes, existing, TAINT)
    p = PodInfo.from_dict(incoming)
    assert s.explain(p) == want
    assert {str(s.names[i]) for i in s.feasible(p)} == {n for n, r in want.items() if r is None}


def test_spread_replicas_land_evenly_and_the_one_too_many_waits(sim_factory: Any, scheduler_factory: Any) -> None:
    """Through the real scheduler and the emulator: with maxSkew 1 over hostnames and two nodes, a node takes its
    second replica only once the other has its first; a replica that only fits where it would break the skew stays
    Pending with kube-scheduler's reason."""
    sim = sim_factory({"nodes": [{"name": "a", "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
                                 {"name": "b", "capacity": {"cpu": "1", "memory": "8Gi", "pods": "110"}}]})
    scheduler_factory(sim.kubeconfig)
    c = [spread("kubernetes.io/hostname")]

    def node_of(name: str) -> str:
        return str(((sim.get("pods", name, "default") or {}).get("spec") or {}).get("nodeName") or "")

    for i in range(4):  # 400m each: b (1 cpu) takes two
        sim.create(P(f"r{i}", X, c, cpu="400m"))
        sim.wait_for(lambda i=i: node_of(f"r{i}"))
    placed = sorted(node_of(f"r{i}") for i in range(4))
    assert placed == ["a", "a", "b", "b"], placed
    sim.create(P("r4", X, c, cpu="400m"))  # fits a only (b is full); a would hold 3 against b's 2: skew 1, allowed
    assert sim.wait_for(lambda: node_of("r4")) == "a"
    sim.create(P("r5", X, c, cpu="400m"))  # a would hold 4 against 2: skew 2
    failed = sim.wait_for(lambda: [e for e in events_for(sim, "r5") if e["reason"] == "FailedScheduling"])
    assert failed[0]["message"] == f"0/2 nodes are available: 1 Insufficient cpu, 1 {SKEW}.", failed
    assert not node_of("r5")


def test_domains_follow_nodes_added_removed_and_relabelled() -> None:
    exists = [{**spread(), "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}}]
    s = cluster(ZONES, [(P("e", X), "a1"), (P("f", {"app": "y"}), "b1")], TAINT)
    p = PodInfo.from_dict(P("p", X, exists))
    assert {str(s.names[i]) for i in s.feasible(p)} == {"c1"}  # a 1, b 1, c 0: only c
    s.delete_node("c1")
    assert {str(s.names[i]) for i in s.feasible(p)} == {"a1", "a2", "b1"}  # a 1, b 1
    s.upsert_node(node("d1", labels={"zone": "d"}))  # takes c1's slot
    assert s.explain(p) == {"a1": SKEW, "a2": SKEW, "b1": SKEW, "d1": None}
    assert {str(s.names[i]) for i in s.feasible(p)} == {"d1"}
    s.upsert_node(node("d1", labels={"zone": "a"}))
    assert {str(s.names[i]) for i in s.feasible(p)} == {"a1", "a2", "b1", "d1"}
