"""The placement policies `podtax simulate` compares (simulate.py), each choosing a pod's node among the feasible
ones: ``podtax`` (the real scheduler code on scores built as the analyzer builds them: node_scores), ``default``
(kube-scheduler's default scoring), ``random``, ``prototype`` (the study's prototype) and ``oracle`` (the reference:
the true fastest node)."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

import numpy as np
from podtax.events import NodeScore
from scipy.stats import binom

from podtax_scheduler.affinity_score import InterPodAffinityScore
from podtax_scheduler.algorithm import decide
from podtax_scheduler.model import PodInfo
from podtax_scheduler.profile import Profile
from podtax_scheduler.scorestore import ScoreStore
from podtax_scheduler.scoring import BenchmarkScore, LeastAllocated
from podtax_scheduler.spread_score import PodTopologySpreadScore
from podtax_scheduler.state import ClusterState
from podtax_scheduler.taint_score import TaintTolerationScore

if TYPE_CHECKING:
    from podtax_scheduler.simulate import Workload

POLICIES = ("default", "random", "prototype", "podtax")
CLUSTER = "sim"


class Policy(Protocol):
    name: str

    def choose(self, pod: PodInfo, state: ClusterState, idx: np.ndarray) -> int: ...


def median_interval(sorted_x: np.ndarray, confidence: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free interval of the median (order statistics), as the analyzer computes it."""
    n = len(sorted_x)
    if n < 6:
        return None
    j = max(1, int(binom.ppf((1.0 - confidence) / 2.0, n, 0.5)))
    return float(sorted_x[j - 1]), float(sorted_x[n - j])


def node_scores(w: Workload) -> list[NodeScore]:
    """The evidence the podtax policy sees: one score per simulated node and group (pod side)."""
    out = []
    stamp = datetime.now(UTC)
    for group in {c.group.test + c.group.params_key: c.group for c in w.classes}.values():
        for node in w.nodes:
            vals = group.values.get(w.measured_node[node])
            if vals is None or len(vals) == 0:
                continue
            x = np.sort(np.asarray(vals, dtype=float))
            ci = median_interval(x)
            out.append(NodeScore(cluster=CLUSTER, node=node, env="kubernetes", test=group.test,
                                 params_key=group.params_key, metric=group.metric, unit=group.unit,
                                 higher_is_better=group.higher_is_better, median=float(np.median(x)),
                                 mean=float(x.mean()), n=len(x), ci_low=ci[0] if ci else None,
                                 ci_high=ci[1] if ci else None, updated_at=stamp))
    return out


class PodtaxPolicy:
    """The real plugin code and decision function of the scheduler service."""

    name = "podtax"

    def __init__(self, w: Workload, seed: int, profile: Profile | None = None) -> None:
        profile = profile or Profile()
        store = ScoreStore(CLUSTER, "kubernetes")
        for s in node_scores(w):
            store.put_score(s)
        b = profile.score.BenchmarkScore
        self.plugins = [BenchmarkScore(store, 365 * 86400.0, shrink_runs=b.shrink_runs, missing_score=b.missing_score,
                                       statistic=b.statistic, sensitivity=b.sensitivity, unmeasured=b.unmeasured,
                                       ignore_flags=b.ignore_flags, no_interval_noise=b.no_interval_noise),
                        LeastAllocated(),
                        InterPodAffinityScore(profile.score.InterPodAffinity.hard_pod_affinity_weight),
                        PodTopologySpreadScore(), TaintTolerationScore()]
        self.weights = profile.weights()
        self.rng = random.Random(seed)

    def choose(self, pod: PodInfo, state: ClusterState, idx: np.ndarray) -> int:
        node = decide(pod, state, self.plugins, self.weights, self.rng).node
        return int(np.flatnonzero(idx == state.slot[node])[0])


class DefaultPolicy:
    """kube-scheduler's default scores: LeastAllocated + BalancedAllocation (cpu, memory), weight 1 each."""

    name = "default"

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.least = LeastAllocated()

    def choose(self, pod: PodInfo, state: ClusterState, idx: np.ndarray) -> int:
        fractions = []
        for res in ("cpu", "memory"):
            alloc = state.alloc[res][idx].astype(float)
            used = state.req[res][idx] + pod.requests.get(res, 0)
            fractions.append(np.clip(np.divide(used, alloc, out=np.ones_like(alloc), where=alloc > 0), 0, 1))
        balanced = 100.0 * (1.0 - np.abs(fractions[0] - fractions[1]) / 2.0)
        total = self.least.score(pod, state, idx, {}) + balanced
        ties = np.flatnonzero(total >= total.max() - 1e-9)
        return int(ties[self.rng.randrange(len(ties))])


class RandomPolicy:
    name = "random"

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def choose(self, pod: PodInfo, state: ClusterState, idx: np.ndarray) -> int:
        return self.rng.randrange(len(idx))


class PrototypePolicy:
    """The study's prototype: sum of each node's results for the benchmark, read once at start-up."""

    name = "prototype"

    def __init__(self, w: Workload, seed: int) -> None:
        self.sums = {(c.group.test, node): float(np.sum(c.group.values.get(w.measured_node[node], [])))
                     for c in w.classes for node in w.nodes}
        self.rng = random.Random(seed)

    def choose(self, pod: PodInfo, state: ClusterState, idx: np.ndarray) -> int:
        sums = np.array([self.sums.get((pod.benchmark, str(state.names[i])), 0.0) for i in idx])
        ties = np.flatnonzero(sums >= sums.max())
        return int(ties[self.rng.randrange(len(ties))])


class OraclePolicy:
    """Knows every node's true mean speed; picks the fastest feasible node (ties: most free resources)."""

    name = "oracle"

    def __init__(self, mean_speed: dict[tuple[int, str], float], cls_of: dict[str, int]) -> None:
        self.mean_speed, self.cls_of, self.least = mean_speed, cls_of, LeastAllocated()

    def expected(self, pod: PodInfo, state: ClusterState, idx: np.ndarray) -> np.ndarray:
        c = self.cls_of[pod.name]
        return np.array([self.mean_speed[(c, str(state.names[i]))] for i in idx])

    def choose(self, pod: PodInfo, state: ClusterState, idx: np.ndarray) -> int:
        speed = self.expected(pod, state, idx)
        best = np.flatnonzero(speed >= speed.max() * (1 - 1e-12))
        free = self.least.score(pod, state, idx[best], {})
        return int(best[int(np.argmax(free))])


def make_policy(name: str, w: Workload, seed: int, profile: Profile | None = None) -> Policy:
    """`profile`: the podtax policy's (the default profile when None); the other policies have none."""
    if name == "podtax":
        return PodtaxPolicy(w, seed, profile)
    if name == "default":
        return DefaultPolicy(seed)
    if name == "random":
        return RandomPolicy(seed)
    if name == "prototype":
        return PrototypePolicy(w, seed)
    raise ValueError(f"unknown policy {name!r}; use {', '.join(POLICIES)}")
