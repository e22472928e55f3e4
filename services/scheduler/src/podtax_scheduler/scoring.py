"""Score plugins: each returns 0..100 per candidate node; the profile weighs them.

BenchmarkScore ranks nodes by the analyzer's per-run statistic (a mean or median per run, never a
sum), direction-aware, with few-run nodes pulled toward the fleet average (weight n/(n+k)), inside
one (test, metric, params) group. Stale or missing scores get a low neutral score, never exclusion.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np
from podtax import templates

from podtax_scheduler.model import PARAMS_ANNOTATION, PodInfo
from podtax_scheduler.quantity import CPU, MEMORY
from podtax_scheduler.scorestore import Group, ScoreStore
from podtax_scheduler.state import ClusterState

Cycle = dict[str, Any]


class ScorePlugin(Protocol):
    name: ClassVar[str]

    def score(self, pod: PodInfo, state: ClusterState, idx: np.ndarray, cycle: Cycle) -> np.ndarray: ...


@dataclass(slots=True)
class _Columns:
    layout_gen: int
    version: int
    value: np.ndarray  # per slot; NaN where the node has no score
    n: np.ndarray
    ts: np.ndarray


def wanted_metric(test: str, params_key: str) -> str | None:
    """The metric a template ranks by for these parameters (None for unknown templates)."""
    template = templates.REGISTRY.get(test)
    if template is None:
        return None
    try:
        params = template.validate(templates.parse_params(params_key))
    except (ValueError, templates.TemplateError):
        params = template.params()
    return template.primary_metric(params)


class BenchmarkScore:
    name = "BenchmarkScore"

    def __init__(self, store: ScoreStore, ttl_s: float, *, shrink_runs: float = 3.0, missing_score: float = 20.0,
                 statistic: str = "mean", clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.ttl_s = ttl_s
        self.shrink_runs = shrink_runs
        self.missing_score = missing_score
        self.statistic = statistic
        self.clock = clock
        self._cache: dict[Group, _Columns] = {}
        self._metric_ok: dict[Group, bool] = {}

    def _columns(self, group: Group, version: int, state: ClusterState) -> _Columns:
        cached = self._cache.get(group)
        if cached is not None and cached.layout_gen == state.layout_gen and cached.version == version:
            return cached
        version, scores = self.store.snapshot(group)
        size = state.size
        value = np.full(size, np.nan)
        n = np.zeros(size)
        ts = np.zeros(size)
        for node, s in scores.items():
            i = state.slot.get(node)
            if i is None:
                continue
            value[i] = s.mean if self.statistic == "mean" else s.median
            n[i] = s.n
            ts[i] = s.updated_ts
            if not s.higher_is_better:
                value[i] = -value[i]  # direction-aware: larger is always better below
        cols = _Columns(state.layout_gen, version, value, n, ts)
        self._cache[group] = cols
        return cols

    def _groups(self, pod: PodInfo, test: str) -> dict[Group, int]:
        groups = self.store.groups_for(test)
        wanted_params = pod.annotations.get(PARAMS_ANNOTATION)
        if wanted_params:
            try:
                key = templates.params_key(templates.parse_params(wanted_params))
            except ValueError:
                key = wanted_params
            groups = {g: v for g, v in groups.items() if g[2] == key}
        out = {}
        for g, v in groups.items():
            ok = self._metric_ok.get(g)
            if ok is None:
                metric = wanted_metric(g[0], g[2])
                ok = self._metric_ok[g] = metric is None or metric == g[1]
            if ok:
                out[g] = v
        return out

    def score(self, pod: PodInfo, state: ClusterState, idx: np.ndarray, cycle: Cycle) -> np.ndarray:
        out = np.full(len(idx), self.missing_score, dtype=float)
        test = pod.benchmark
        if test is None or len(idx) == 0:
            return out
        now = self.clock()
        best: tuple[int, float, Group] | None = None
        best_cols: _Columns | None = None
        for group, version in sorted(self._groups(pod, test).items()):
            cols = self._columns(group, version, state)
            fresh = ~np.isnan(cols.value[idx]) & (now - cols.ts[idx] <= self.ttl_s)
            covered = int(fresh.sum())
            rank = (covered, float(cols.n[idx][fresh].sum()), group)
            if covered and (best is None or rank[:2] > best[:2]):
                best, best_cols = rank, cols
        if best is None or best_cols is None:
            cycle["benchmark"] = {"test": test, "group": None, "covered": 0}
            return out
        cols = best_cols
        alive = ~np.isnan(cols.value) & (now - cols.ts <= self.ttl_s)
        fleet = float(cols.value[alive].mean())
        v, n = cols.value[idx], cols.n[idx]
        fresh = ~np.isnan(v) & (now - cols.ts[idx] <= self.ttl_s)
        k = self.shrink_runs
        shrunk = (n[fresh] * v[fresh] + k * fleet) / (n[fresh] + k)
        lo, hi = float(shrunk.min()), float(shrunk.max())
        out[fresh] = 100.0 * (shrunk - lo) / (hi - lo) if hi > lo else 100.0
        cycle["benchmark"] = {"test": test, "metric": best[2][1], "params_key": best[2][2], "covered": best[0]}
        return out


class LeastAllocated:
    """kube-scheduler's NodeResourcesLeastAllocated: free share of cpu and memory after placing the pod."""

    name = "LeastAllocated"
    RESOURCES = (CPU, MEMORY)

    def score(self, pod: PodInfo, state: ClusterState, idx: np.ndarray, cycle: Cycle) -> np.ndarray:
        total = np.zeros(len(idx))
        for res in self.RESOURCES:
            if res not in state.alloc:
                continue
            alloc = state.alloc[res][idx].astype(float)
            used = state.req[res][idx] + pod.requests.get(res, 0)
            with np.errstate(divide="ignore", invalid="ignore"):
                free = np.where(alloc > 0, (alloc - used) / alloc, 0.0)
            total += np.clip(free, 0.0, 1.0)
        return total * (100.0 / len(self.RESOURCES))
