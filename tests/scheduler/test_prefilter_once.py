"""PreFilter once per pod: decide() ran InterPodAffinity's and PodTopologySpread's PreFilter (every counted pod,
every node) in feasible(), again in explain() when nothing fit, and again in BenchmarkScore's explain() of the
better-measured nodes passed over. Now decide() computes it once (ClusterState.prefilter) and hands it to both.
Tables (the affinity, namespace and spread filter tables, each incoming pod also carrying a benchmark whose best
scores are on the nodes it cannot take): decide()'s feasible count, failure message and passed-over reasons agree
with explain(), and each PreFilter ran once per decision."""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from typing import Any

import pytest
from podtax_scheduler import podspread
from podtax_scheduler.algorithm import decide
from podtax_scheduler.filters import count_reasons, failure_message
from podtax_scheduler.model import PodInfo
from podtax_scheduler.podaffinity import prefilter as affinity_prefilter
from podtax_scheduler.profile import Profile
from podtax_scheduler.scorestore import ScoreStore
from podtax_scheduler.scoring import BenchmarkScore, LeastAllocated

from tests.scheduler import test_pod_affinity, test_pod_namespaces, test_pod_spread
from tests.scheduler.sched_objects import cluster, score

TABLES = {"affinity": (test_pod_affinity.CASES, None, False), "namespaces": (test_pod_namespaces.FILTER_CASES,
                                                                             None, True),
          "spread": (test_pod_spread.CASES, test_pod_spread.TAINT, False)}
ROWS = [(table, case) for table, (cases, _, _) in TABLES.items() for case in cases]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many times each PreFilter ran: the functions wrapped wherever a scheduler module holds them."""
    counted = {"affinity": 0, "spread": 0}

    def wrapped(kind: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            counted[kind] += 1
            return real(*args, **kwargs)
        return run

    for name, module in list(sys.modules.items()):
        if name.startswith("podtax_scheduler") and getattr(module, "prefilter", None) is affinity_prefilter:
            monkeypatch.setattr(module, "prefilter", wrapped("affinity", affinity_prefilter))
    monkeypatch.setattr(podspread, "prefilter", wrapped("spread", podspread.prefilter))
    return counted


@pytest.mark.parametrize(("table", "case"), ROWS, ids=[f"{t}: {c[0]}" for t, c in ROWS])
def test_decide_and_explain_agree_with_one_prefilter(table: str, case: tuple[Any, ...],
                                                     calls: dict[str, int]) -> None:
    _, incoming, nodes, existing, want = case
    _, taint, namespaced = TABLES[table]
    s = cluster(nodes, existing, taint)
    if namespaced:
        test_pod_namespaces.with_namespaces(s)
    incoming = {**incoming, "metadata": {**incoming["metadata"],
                                         "labels": {**incoming["metadata"]["labels"], "test": "sysbench-cpu"}}}
    p = PodInfo.from_dict(incoming)
    store = ScoreStore("local", "kubernetes")
    for rank, name in enumerate(sorted(nodes, key=lambda n: (want[n] is None, n))):  # the best where it cannot go
        store.put_score(score(name, 1000.0 - 100 * rank, 12))
    explained = s.explain(p)
    assert explained == want
    before = dict(calls)
    d = decide(p, s, [BenchmarkScore(store, 3600.0), LeastAllocated()], Profile().weights(), random.Random(0))
    ran = {k: calls[k] - before[k] for k in calls}
    assert ran["affinity"] <= 1 and ran["spread"] <= 1, ran
    fits = {n for n, r in want.items() if r is None}
    assert d.feasible == len(fits)
    if not fits:
        assert d.node is None and d.message == failure_message(len(nodes), count_reasons(explained.values()))
        return
    assert d.node in fits
    passed = d.details["benchmark"]["passed_over"]
    better = sorted(n for n in nodes if want[n] is not None)[:3]
    assert passed == {n: r if isinstance(r, str) else ", ".join(r) for n in better if (r := explained[n])}
    assert "prefilter" not in d.details
