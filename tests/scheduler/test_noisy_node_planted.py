"""Planted campaigns through the analyzer's scores into a whole scheduling decision: a noisy node is not preferred.

Each campaign: four nodes, runs written into a real DuckDB store (tests/analysis/analysis_synth), node scores from the
analyzer's node_scores (median, 95% interval of the median, flags), put into a ScoreStore and ranked by decide() with
the default profile (BenchmarkScore + LeastAllocated, equal resources). Three nodes are steady (1-2% run-to-run
noise), one is noisy (10-20%). The noisy node's median is the highest of the four by chance in about half of such
campaigns; ranked by the median alone it would take about that share of the pods. A pick tied at the top counts as
1/ties for each tied node (decide breaks ties at random).
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from podtax_analyzer.scores import node_scores
from podtax_scheduler.algorithm import decide
from podtax_scheduler.model import PodInfo
from podtax_scheduler.profile import Profile
from podtax_scheduler.scorestore import ScoreStore
from podtax_scheduler.scoring import BenchmarkScore, LeastAllocated
from podtax_scheduler.state import ClusterState

from tests.analysis.analysis_synth import CellSpec, SideSpec, insert_cells, open_db
from tests.scheduler.sched_objects import node, pod, with_uid

NODES = ("n0", "n1", "n2", "noisy")
CAMPAIGNS = 40
TTL = 30 * 86400.0  # the planted runs are hours apart: none is stale


class _Nth(random.Random):
    """decide()'s tie-breaker, made to pick the i-th tied node; records how many were tied."""

    def __init__(self, i: int) -> None:
        super().__init__(0)
        self.i, self.ties = i, 1

    def randrange(self, n: int) -> int:  # type: ignore[override]
        self.ties = n
        return self.i


def _picks(store: ScoreStore, now: float) -> list[str]:
    """Every node decide() may pick for a benchmark pod (all of them when tied at the top)."""
    state = ClusterState()
    for n in NODES:
        state.upsert_node(node(n))
    plugins = [BenchmarkScore(store, TTL, clock=lambda: now), LeastAllocated()]
    pi, weights = PodInfo.from_dict(with_uid(pod("p", test="sysbench-cpu"))), Profile().weights()
    first = _Nth(0)
    picked = [decide(pi, state, plugins, weights, first).node]
    picked += [decide(pi, state, plugins, weights, _Nth(i)).node for i in range(1, first.ties)]
    return [str(p) for p in picked]


def _shares(tmp_path: Path, speeds: dict[str, float], noisy_cv: float, steady_cv: float, runs: int,
            seed: int) -> dict[str, float]:
    """Each node's share of the picks over CAMPAIGNS planted campaigns (one cluster each)."""
    rng = np.random.default_rng(seed)
    con = open_db(tmp_path / "runs.duckdb")
    for c in range(CAMPAIGNS):
        cells = []
        for n in NODES:
            cv = noisy_cv if n == "noisy" else steady_cv
            host, kube = (speeds[n] * np.exp(rng.normal(0.0, cv, runs)) for _ in range(2))
            cells.append(CellSpec(n, SideSpec(host), SideSpec(kube), metric="events_per_second",
                                  cluster=f"c{c}", campaign=f"c{c}"))
        insert_cells(con, cells, seed=seed * 1000 + c)
    scores = node_scores(con, env="kubernetes")
    con.close()
    shares = dict.fromkeys(NODES, 0.0)
    for c in range(CAMPAIGNS):
        store = ScoreStore(f"c{c}", "kubernetes")
        mine = [s for s in scores if s.cluster == f"c{c}"]
        assert len(mine) == len(NODES) and all(store.put_score(s) for s in mine)
        picked = _picks(store, max(s.updated_at.timestamp() for s in mine) + 1.0)
        for n in picked:
            shares[n] += 1.0 / len(picked) / CAMPAIGNS
    return shares


EQUAL = dict.fromkeys(NODES, 1000.0)
STEADY_FASTER = {**EQUAL, "n0": 1050.0}
# (speeds, noisy cv, steady cv, runs per node, seed, at most this share for the noisy node, at least for n0)
CASES = [
    ("equal speeds, noisy 10% vs 1%, 10 runs", EQUAL, 0.10, 0.01, 10, 1, 0.32, 0.0),
    ("equal speeds, noisy 20% vs 2%, 10 runs", EQUAL, 0.20, 0.02, 10, 2, 0.32, 0.0),
    ("equal speeds, noisy 15% vs 1.5%, 6 runs", EQUAL, 0.15, 0.015, 6, 3, 0.32, 0.0),
    ("equal speeds, noisy 15% vs 1.5%, 20 runs", EQUAL, 0.15, 0.015, 20, 4, 0.32, 0.0),
    ("n0 5% faster and steady, noisy 10% vs 1%, 10 runs", STEADY_FASTER, 0.10, 0.01, 10, 5, 0.25, 0.70),
    ("n0 5% faster and steady, noisy 20% vs 2%, 10 runs", STEADY_FASTER, 0.20, 0.02, 10, 6, 0.25, 0.70),
]


@pytest.mark.parametrize(("speeds", "noisy_cv", "steady_cv", "runs", "seed", "noisy_at_most", "n0_at_least"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_noisy_node_does_not_win_by_chance(tmp_path: Path, speeds: dict[str, float], noisy_cv: float,
                                             steady_cv: float, runs: int, seed: int, noisy_at_most: float,
                                             n0_at_least: float) -> None:
    shares = _shares(tmp_path, speeds, noisy_cv, steady_cv, runs, seed)
    assert shares["noisy"] <= noisy_at_most, shares  # fair share among four equal nodes: 0.25
    assert shares["n0"] >= n0_at_least, shares
