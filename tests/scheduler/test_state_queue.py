"""Quantities, the scheduling queue, the cluster state and its ledger (no API server)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from podtax_scheduler import quantity
from podtax_scheduler.filters import DEFAULT_FILTERS, NodeResourcesFit
from podtax_scheduler.model import PodInfo
from podtax_scheduler.queue import SchedulingQueue
from podtax_scheduler.state import ClusterState

from tests.scheduler.sched_objects import node, pod, with_uid


@pytest.mark.parametrize(("res", "text", "want"), [
    ("cpu", "500m", 500), ("cpu", "2", 2000), ("cpu", "0.1", 100), ("cpu", "1e3", 1_000_000),
    ("cpu", 1, 1000), ("memory", "1Gi", 2**30), ("memory", "1G", 10**9), ("memory", "1e3", 1000),
    ("memory", "128974848", 128974848), ("memory", "129M", 129_000_000), ("memory", "1.5Ki", 1536),
    ("memory", "100m", 1), ("pods", "110", 110), ("cpu", "1n", 1),
])
def test_quantities(res: str, text: Any, want: int) -> None:
    assert quantity.to_int(res, text) == want


@pytest.mark.parametrize("bad", ["", "1.2.3", "5 Gi", "Gi", "1Xi", "abc", "1K", "1e"])  # the client alone takes "1K"
def test_bad_quantities(bad: str) -> None:
    with pytest.raises(quantity.QuantityError):
        quantity.parse(bad)


def test_init_containers_and_overhead() -> None:
    obj = with_uid(pod("p", cpu="1"))
    obj["spec"]["initContainers"] = [{"name": "i", "resources": {"requests": {"cpu": "3"}}},
                                     {"name": "s", "restartPolicy": "Always",
                                      "resources": {"requests": {"memory": "1Gi"}}}]
    obj["spec"]["overhead"] = {"cpu": "100m"}
    assert PodInfo.from_dict(obj).requests == {"cpu": 3100, "memory": 2**30}


# ---------------------------------------------------------------- queue

class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def P(name: str, priority: int = 0) -> PodInfo:  # noqa: N802
    info = PodInfo.from_dict(with_uid(pod(name)))
    info.priority = priority
    return info


def test_queue_priority_then_fifo() -> None:
    q = SchedulingQueue()
    for name, prio in (("a", 0), ("b", 10), ("c", 0)):
        q.add(P(name, prio))
    assert [q.pop(0)[0].name for _ in range(3)] == ["b", "a", "c"]  # type: ignore[index]
    assert q.pop(0) is None


def waits_after_errors(wait_s: list[float | None]) -> list[float]:
    """How long a pod waits after each failed attempt (queue.error with each `wait_s`), on a fake clock."""
    clock = Clock()
    q = SchedulingQueue(clock=clock)
    p = P("a")
    q.add(p)
    assert q.pop(0) is not None
    waits = []
    for wait in wait_s:
        q.error(p.uid, wait)
        q.add(p)  # an informer update during backoff does not skip it
        start = clock.t
        while q.pop(0) is None:
            clock.t += 0.25
        waits.append(clock.t - start)
    return waits


def test_queue_backoff_doubles_to_ten_seconds() -> None:
    assert waits_after_errors([None] * 6) == [1, 2, 4, 8, 10, 10]


def test_queue_waits_what_the_api_server_said() -> None:
    # a bind answered 429 with Retry-After: N is tried again N s later, not after the 1, 2, 4 ... s backoff
    assert waits_after_errors([3.0, 0.5, 30.0]) == [3.0, 0.5, 30.0]


def test_unschedulable_waits_for_a_change_or_five_minutes() -> None:
    clock = Clock()
    q = SchedulingQueue(clock=clock)
    p = P("a")
    q.add(p)
    assert q.pop(0) is not None
    q.unschedulable(p.uid)
    clock.t += 30
    assert q.pop(0) is None  # nothing changed
    assert q.move_all_to_active() == 1
    assert q.pop(0) is not None
    q.unschedulable(p.uid)
    clock.t += 299
    assert q.pop(0) is None
    clock.t += 2
    assert q.pop(0) is not None


def test_unschedulable_honours_backoff_after_a_change() -> None:
    clock = Clock()
    q = SchedulingQueue(clock=clock)
    p = P("a")
    q.add(p)
    q.pop(0)
    q.unschedulable(p.uid)
    q.move_all_to_active()  # a change right away: still backs off 1 s
    assert q.pop(0) is None
    clock.t += 1.01
    assert q.pop(0) is not None


@pytest.mark.parametrize("move", ["move_all_to_active", "move_pod_waiters_to_active"])
def test_a_change_during_an_attempt_is_not_lost(move: str) -> None:
    """Review r2: a pod landing (or a node changing) while an attempt ran woke no one (the pod was in flight, not yet
    unschedulable), and the attempt, decided before the change, parked the pod until the next change or 5 minutes.
    Now it is tried again after its backoff, as kube-scheduler's moveRequestCycle does."""
    clock = Clock()
    q = SchedulingQueue(clock=clock)
    p = P("a")
    q.add(p)
    assert q.pop(0) is not None
    assert getattr(q, move)() == 0  # the change arrives during the attempt
    q.unschedulable(p.uid)
    assert q.counts()["backoff"] == 1 and q.pop(0) is None
    clock.t += 1.01
    assert q.pop(0) is not None  # without a new change
    q.unschedulable(p.uid)  # no change during this attempt: parked
    clock.t += 30
    assert q.counts()["unschedulable"] == 1 and q.pop(0) is None


def test_removed_pod_is_not_popped() -> None:
    q = SchedulingQueue()
    p = P("a")
    q.add(p)
    q.remove(p.uid)
    assert q.pop(0) is None and len(q) == 0


# ---------------------------------------------------------------- state and ledger

def test_ledger_counts_assumed_pods_once() -> None:
    s = ClusterState()
    s.upsert_node(node("n1", cpu="2"))
    obj = with_uid(pod("p", cpu="1500m"))
    p, _ = s.upsert_pod(obj)
    s.assume(p, "n1")
    other = PodInfo.from_dict(with_uid(pod("q", cpu="1")))
    assert len(s.feasible(other)) == 0  # the ledger holds 1.5 cores
    bound = dict(obj, spec=dict(obj["spec"], nodeName="n1"))
    s.upsert_pod(bound)  # the informer sees it bound: counted once, ledger entry gone
    assert s.assumed == {} and s.nodes["n1"].requested["cpu"] == 1500
    assert int(s.req["cpu"][s.slot["n1"]]) == 1500
    s.upsert_pod(dict(bound, status={"phase": "Succeeded"}))  # terminal pods free their requests
    assert s.nodes["n1"].requested["cpu"] == 0 and len(s.feasible(other)) == 1


def test_forget_undoes_assume() -> None:
    s = ClusterState()
    s.upsert_node(node("n1", cpu="2"))
    p, _ = s.upsert_pod(with_uid(pod("p", cpu="2")))
    s.assume(p, "n1")
    s.forget(p.uid)
    assert s.nodes["n1"].requested["cpu"] == 0 and int(s.count[0]) == 0


def test_pods_seen_before_their_node_are_counted() -> None:
    s = ClusterState()
    s.upsert_pod(with_uid(pod("p", cpu="3", node_name="late")))
    s.upsert_node(node("late", cpu="4"))
    assert s.nodes["late"].requested["cpu"] == 3000 and int(s.req["cpu"][s.slot["late"]]) == 3000


def test_static_cache_invalidated_by_node_change() -> None:
    s = ClusterState()
    s.upsert_node(node("n1"))
    p = PodInfo.from_dict(with_uid(pod("p")))
    assert len(s.feasible(p)) == 1
    s.upsert_node(node("n1", unschedulable=True))
    assert len(s.feasible(p)) == 0
    assert not s.upsert_node(node("n1", unschedulable=True))  # no relevant change


def test_many_nodes_grow_columns() -> None:
    s = ClusterState(capacity=4)
    for i in range(50):
        s.upsert_node(node(f"n{i}"))
    assert len(s.feasible(PodInfo.from_dict(with_uid(pod("p", cpu="1"))))) == 50


_res = st.sampled_from(["100m", "1", "2", "3500m", None])
_mem = st.sampled_from(["1Gi", "3Gi", "512Mi", None])


@settings(max_examples=60, deadline=None)
@given(nodes=st.lists(st.tuples(st.sampled_from(["1", "2", "4"]), st.sampled_from(["2Gi", "4Gi"]),
                                st.integers(1, 3), st.booleans(), st.booleans()), min_size=1, max_size=6),
       bound=st.lists(st.tuples(st.integers(0, 5), _res, _mem), max_size=10),
       new=st.tuples(_res, _mem, st.sampled_from([None, "1"])))
def test_vector_fit_equals_the_plugin(nodes: list[Any], bound: list[Any], new: Any) -> None:
    """The numpy fast path gives exactly the pure plugins' answers."""
    s = ClusterState()
    for i, (cpu, mem, pods, cordoned, gpu) in enumerate(nodes):
        s.upsert_node(node(f"n{i}", cpu=cpu, memory=mem, pods=pods, unschedulable=cordoned,
                           extra={"example.com/gpu": "1"} if gpu else None))
    for j, (ni, cpu, mem) in enumerate(bound):
        s.upsert_pod(with_uid(pod(f"b{j}", cpu=cpu, memory=mem, node_name=f"n{ni % len(nodes)}")))
    cpu, mem, gpu = new
    p = PodInfo.from_dict(with_uid(pod("p", cpu=cpu, memory=mem,
                                       extra_requests={"example.com/gpu": gpu} if gpu else None)))
    fast = {s.names[i] for i in s.feasible(p)}
    pure = {n for n, info in s.nodes.items() if all(f.filter(p, info) is None for f in DEFAULT_FILTERS)}
    assert fast == pure
    fit = NodeResourcesFit()
    assert {s.names[i] for i in np.flatnonzero(s.fit_mask(p))} == \
        {n for n, info in s.nodes.items() if fit.filter(p, info) is None}
