"""Score plugins: each returns 0..100 per candidate node; the profile weighs them.

BenchmarkScore scores nodes from measured values and their uncertainty, inside one benchmark group
(test, metric, params_key); nodes are never compared across groups.

1. The group. A pod names its benchmark by label and may name parameters with the
   ``podtax.io/params`` annotation (e.g. ``threads=4``). That selects every stored group of the
   test whose parameters include all the named ones (a subset match, values compared by value:
   ``reverse=True`` matches ``reverse=true``, ``bs=4K`` ``bs=4k``).
   Among the selected groups (all groups of the test when the pod names no parameters), the rule
   is: a group whose parameters are exactly the named ones first, then the one with usable
   results for the most feasible nodes, then the most runs on them, then the first by parameter
   text. When parameters are named and no group matches, the pod is placed by resources alone and
   a Warning Event says so.
2. Usable evidence: a node's score in the group that is fresh (its newest run ended within the
   TTL) and not flagged by the analyzer (``ignore_flags``: CONFOUNDED, BIMODAL, OVERLAP, THROTTLED, EMULATED: a
   tool executable the node's kernel ran through qemu-user measured the emulator; a score is also taken as EMULATED
   when every tool architecture it names runs only emulated on its node's 64-bit kubernetes.io/arch label, as an
   amd64 image's x86_64 tool on an arm64 node, whose runs the analyzer cannot tell: mixed_arch.emulated_here; the
   Event says so apart, "taken as EMULATED from the node's kubernetes.io/arch label", the analyzer's score has no flag).
   Stale and flagged evidence is ignored and the Event says which and why. Nodes of one machine architecture (their
   ``kubernetes.io/arch`` label) are compared only when their scores come from tool executables built for one
   architecture (the score's tool_archs; a score naming none, from an older wrapper or agent, is compared with any):
   when the candidates' usable scores on nodes of one label name more than one (a 32-bit armhf sysbench's score on
   some arm64 nodes, the arm64 one's on others), the speed differences may be the code's, so the group ranks nothing
   for this pod: it is placed by resources alone and a Warning Event (reason ``BenchmarkMixedArch``) names the nodes
   of each architecture (such a group counts no usable evidence in point 1's rule). Nodes of different labels (an
   x86 server and a Raspberry Pi, each scored by its own native build) are ranked: each build is its node's speed.
   A node without the label may be of any kind; only builds of one family mix (mixed_arch.py). A score whose own
   runs interleave builds is flagged CONFOUNDED by the analyzer; after a clean switch it counts the newest build's
   runs alone (its left_out says what was left: the analyzer's build_switch.py), and is read as any score. The
   newest build needs 3 runs (build_switch.MIN_KEPT: 1 or 2 runs of a one-off trial of another binary after 30 do not
   replace the score): below, every run is counted, CONFOUNDED, ignored; runs naming no tool architecture never make
   a build the newest (after a switch, those of its version are counted with it).
3. Each usable node's statistic (the median per run by default) becomes a speed, direction-aware
   (the value for a higher-is-better metric, 1/value for a duration), pulled toward the group's
   median speed by weight n/(n+k) (k = ``shrink_runs``) so a node with one lucky run is not trusted
   like one with a hundred.
4. The reference is the best lower bound among the nodes: the lower end of the 95% interval of a
   node's median speed (its shrunk speed where it is lower). A score without interval (the analyzer
   publishes none under 6 runs) is not taken as exact: its lower bound is its speed x (1 -
   ``no_interval_noise`` / sqrt(n)) for its n runs, default 5% at one run, 2.2% at five (the noise of a
   mean of n runs), so 5 runs 1% apart (or one run each 4% apart) do not decide, while 5 runs 8% apart
   and 3 runs 2x apart do (services/scheduler/README.md says why). An interval reaching 0 (6-8 runs,
   min..max, one run of 0; for a duration, an upper end missing or not above 0) bounds the speed by 0: the
   least certain evidence sets no reference, as one from 1 up would not either (the others' bounds decide).
   score = 100 x clip(1 - sensitivity x max(0, 1 - speed / reference), 0, 1): every
   node whose estimate reaches the best node's lower bound, i.e. lies within its noise, scores 100
   and resources decide between them; a node x% below it loses sensitivity x x points (default 5:
   10% slower scores 50). No min-max stretching: a 0.1% difference is not 100 against 0.
5. A node without usable evidence scores ``missing_score`` and, unless ``unmeasured: compete``,
   ranks after every node with evidence (``cycle["evidence"]``, read by algorithm.decide).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np
from podtax import templates
from podtax.parsers.base import same_value

from podtax_scheduler import prefilter
from podtax_scheduler.mixed_arch import (
    MIXED_ARCH,
    ToolArchs,
    emulated_by_label,
    may_mix,
    mixed_archs,
    mixed_said,
    same_build,
)
from podtax_scheduler.model import PARAMS_ANNOTATION, PodInfo
from podtax_scheduler.prefilter import PreFilter
from podtax_scheduler.quantity import CPU, MEMORY
from podtax_scheduler.scorestore import Group, ScoreStore
from podtax_scheduler.state import ClusterState

Cycle = dict[str, Any]
IGNORE_FLAGS = ("CONFOUNDED", "BIMODAL", "OVERLAP", "THROTTLED", "EMULATED")
NO_INTERVAL_NOISE = 0.05  # relative noise of one run assumed for a score without interval (the module doc, point 4)
NAMES_SHOWN = 3


class ScorePlugin(Protocol):
    """`score` gives 0..100 per candidate, or None when the plugin has nothing to say about this pod (kube-scheduler's
    PreScore Skip: InterPodAffinity and PodTopologySpread for a pod without preferences): it then neither scores nor
    weighs in the weighted mean."""

    name: ClassVar[str]

    def score(self, pod: PodInfo, state: ClusterState, idx: np.ndarray, cycle: Cycle) -> np.ndarray | None: ...


@dataclass(slots=True)
class _Columns:
    layout_gen: int
    version: int
    speed: np.ndarray  # per slot, larger is better; NaN where the node has no score
    low: np.ndarray  # lower 95% bound of the speed (the noise band without an interval); NaN: no score
    n: np.ndarray
    ts: np.ndarray
    blocked: np.ndarray  # bool: evidence the analyzer flagged
    flags: dict[int, tuple[str, ...]]  # slot -> the analyzer's flags that block it
    archs: ToolArchs  # the tool architectures the scores name, by slot (mixed_arch.py)
    by_label: dict[int, str] = field(default_factory=dict)  # slot -> "<tool archs> on <label>": EMULATED by the label
    label_blocked: np.ndarray | None = None  # blocked, and by_label's slots (BenchmarkScore._blocked, at label_gen)
    label_gen: int = -1


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


def _as_text(params: dict[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in params.items()}


def params_of(key: str) -> dict[str, str]:
    try:
        return _as_text(templates.parse_params(key))
    except ValueError:
        return {}


def params_match(wanted: dict[str, str], key: str) -> bool:
    """Whether the group with parameter text ``key`` has every wanted parameter (a subset match), each
    value compared as the parsers compare a log's echo with its request (``reverse=True`` is the stored
    ``reverse=true``, ``bs=4K`` is ``bs=4k``: parsers.base.same_value)."""
    have = params_of(key)
    return all(k in have and same_value(v, have[k]) for k, v in wanted.items())


def shortfall_score(speed: np.ndarray, reference: float, sensitivity: float) -> np.ndarray:
    """100 x clip(1 - sensitivity x max(0, 1 - speed / reference), 0, 1) (see the module doc)."""
    if not reference > 0:  # no node has a lower bound above 0 (every interval reaches 0): nothing to fall short of
        return np.full(len(speed), 100.0)
    short = np.clip(1.0 - speed / reference, 0.0, None)
    return 100.0 * np.clip(1.0 - sensitivity * short, 0.0, 1.0)


def _names(state: ClusterState, slots: Iterable[int]) -> list[str]:
    return [str(state.names[i]) for i in slots]


def describe(bench: dict[str, Any]) -> str:
    """What the benchmark evidence did for one decision, for the Event and PlacementMade message."""
    parts = []
    if bench.get("metric") and bench.get("covered"):
        parts.append(f"ranked by {bench['test']} {bench['metric']} [{bench['params_key']}] "
                     f"({bench.get('statistic', 'median')} per run, {bench['covered']} node(s) with evidence)")
    elif bench.get("metric"):
        parts.append(f"no usable evidence of {bench['test']} {bench['metric']} [{bench['params_key']}]: "
                     f"resources decided")
    flagged = bench.get("flagged", 0)
    if flagged:
        shown = ", ".join(f"{node} ({'/'.join(f)})" for node, f in bench["flagged_names"].items())
        more = f" and {flagged - NAMES_SHOWN} more" if flagged > NAMES_SHOWN else ""
        parts.append(f"evidence not used, flagged by the analyzer: {shown}{more}")
    labelled = bench.get("emulated_by_label", 0)
    if labelled:
        shown = ", ".join(f"{node} ({arch})" for node, arch in bench["emulated_by_label_names"].items())
        more = f" and {labelled - NAMES_SHOWN} more" if labelled > NAMES_SHOWN else ""
        parts.append(f"evidence not used, taken as EMULATED from the node's kubernetes.io/arch label (its tool "
                     f"builds run there only through an emulator; the analyzer's score is not flagged): {shown}{more}")
    stale = bench.get("stale", 0)
    if stale:
        hours = bench.get("ttl_s", 0) / 3600.0
        more = f" and {stale - NAMES_SHOWN} more" if stale > NAMES_SHOWN else ""
        parts.append(f"{stale} node(s) have results older than the {hours:g} h score TTL, ignored: "
                     f"{', '.join(bench['stale_names'])}{more}")
    if bench.get("passed_over"):
        shown = ", ".join(f"{node} ({why})" for node, why in bench["passed_over"].items())
        parts.append(f"better measured but not feasible: {shown}")
    if bench.get("warning"):
        parts.append(bench["warning"])
    return "; ".join(parts)


class BenchmarkScore:
    name = "BenchmarkScore"

    def __init__(self, store: ScoreStore, ttl_s: float, *, shrink_runs: float = 3.0, missing_score: float = 20.0,
                 statistic: str = "median", sensitivity: float = 5.0, unmeasured: str = "last",
                 ignore_flags: Iterable[str] = IGNORE_FLAGS, no_interval_noise: float = NO_INTERVAL_NOISE,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.ttl_s = ttl_s
        self.shrink_runs = shrink_runs
        self.missing_score = missing_score
        self.statistic = statistic
        self.sensitivity = sensitivity
        self.unmeasured = unmeasured
        self.ignore_flags = frozenset(ignore_flags)
        self.no_interval_noise = no_interval_noise
        self.clock = clock
        self._cache: dict[Group, _Columns] = {}
        self._metric_ok: dict[Group, bool] = {}

    def _columns(self, group: Group, version: int, state: ClusterState) -> _Columns:
        cached = self._cache.get(group)
        if cached is not None and cached.layout_gen == state.layout_gen and cached.version == version:
            return cached
        version, scores = self.store.snapshot(group)
        size = state.size
        speed, low = np.full(size, np.nan), np.full(size, np.nan)
        n, ts = np.zeros(size), np.zeros(size)
        blocked = np.zeros(size, dtype=bool)
        flags: dict[int, tuple[str, ...]] = {}
        archs: dict[int, str] = {}
        for node, s in scores.items():
            i = state.slot.get(node)
            v = s.mean if self.statistic == "mean" else s.median
            if i is None or not v > 0:
                continue
            lo, hi = s.ci_low, s.ci_high
            band = 1.0 - self.no_interval_noise / max(s.n, 1) ** 0.5  # a score without interval (point 4)
            no_interval = lo is None and hi is None
            if s.higher_is_better:
                speed[i] = v
                # an interval reaching 0 (or with no lower end) bounds the speed by 0: it sets no reference
                low[i] = v * band if no_interval else lo if lo is not None and lo > 0 else 0.0
            else:  # a duration: speed is its inverse, the lower speed bound comes from the upper bound
                speed[i] = 1.0 / v
                # no upper end (or one not above 0, which the analyzer never sends): no bound on the time, none set
                low[i] = band / v if no_interval else 1.0 / hi if hi is not None and hi > 0 else 0.0
            if not np.isfinite(speed[i]):  # 1/5e-324: no evidence, as a value that is not positive
                speed[i], low[i] = np.nan, np.nan
                continue
            n[i], ts[i] = s.n, s.updated_ts
            bad = tuple(f for f in s.flags if f in self.ignore_flags)
            if bad:
                blocked[i], flags[i] = True, bad
            if s.tool_archs:
                archs[i] = "+".join(s.tool_archs)
        cols = _Columns(state.layout_gen, version, speed, low, n, ts, blocked, flags, ToolArchs(archs))
        self._cache[group] = cols
        return cols

    def _blocked(self, cols: _Columns, state: ClusterState) -> np.ndarray:
        """cols.blocked and the scores taken as EMULATED from their node's label (mixed_arch.emulated_here; one the
        analyzer flagged is named by its flags), read again when a node's labels may change: not the whole columns."""
        if "EMULATED" not in self.ignore_flags:
            return cols.blocked
        if cols.label_blocked is None or cols.label_gen != state.static_gen:
            by_label = emulated_by_label(cols.archs.by_slot, cols.flags, state)
            label_blocked = cols.blocked.copy()
            label_blocked[list(by_label)] = True
            cols.by_label, cols.label_blocked, cols.label_gen = by_label, label_blocked, state.static_gen
        return cols.label_blocked

    def _metric_groups(self, test: str) -> dict[Group, int]:
        out = {}
        for g, v in self.store.groups_for(test).items():
            ok = self._metric_ok.get(g)
            if ok is None:
                metric = wanted_metric(g[0], g[2])
                ok = self._metric_ok[g] = metric is None or metric == g[1]
            if ok:
                out[g] = v
        return out

    def _unmeasured(self, test: str) -> str:
        """Why a pod's benchmark ranks nothing: its label names no podtax test, or no results of it are stored."""
        if test not in templates.REGISTRY:
            return (f"{test!r} is not a podtax test (the pod's label test or podtax.io/benchmark; tests: "
                    f"{', '.join(sorted(templates.REGISTRY))}); placed by resources alone")
        if self.store.unavailable:
            return f"no benchmark scores to rank by: {self.store.unavailable}; placed by resources alone"
        stored = self.store.tests()
        return (f"no benchmark results of {test} in this cluster's {self.store.env} scores (results of: "
                f"{', '.join(stored[:8]) or 'none yet'}); placed by resources alone")

    def _choose(self, pod: PodInfo, test: str, state: ClusterState, idx: np.ndarray, now: float,
                cycle: Cycle) -> tuple[Group, _Columns] | None:
        groups = self._metric_groups(test)
        if not groups:
            cycle["warning"], cycle["warning_reason"] = self._unmeasured(test), "BenchmarkUnmeasured"
            return None
        named = pod.annotations.get(PARAMS_ANNOTATION)
        wanted: dict[str, str] | None = None
        if named:
            try:
                wanted = _as_text(templates.parse_params(named))
            except ValueError as exc:
                cycle["warning"] = (f"the {PARAMS_ANNOTATION} annotation {named!r} is not valid ({exc}); "
                                    f"placed by resources alone")
                return None
            groups = {g: v for g, v in groups.items() if params_match(wanted, g[2])}
            if not groups:
                stored = sorted({g[2] for g in self._metric_groups(test)})
                cycle["warning"] = (f"no benchmark results of {test} match {PARAMS_ANNOTATION}={named!r} "
                                    f"(stored: {', '.join(stored[:5]) or 'none'}); placed by resources alone")
                return None
        best: tuple[Any, ...] | None = None
        chosen: tuple[Group, _Columns] | None = None
        for group, version in sorted(groups.items()):  # strict ">" below: ties go to the first by text
            cols = self._columns(group, version, state)
            usable = ~np.isnan(cols.speed[idx]) & (now - cols.ts[idx] <= self.ttl_s) & ~self._blocked(cols, state)[idx]
            if may_mix(cols.archs, state) and mixed_archs(cols.archs, state, idx[usable]):  # ranks nothing for it
                usable[:] = False
            exact = wanted is not None and params_of(group[2]).keys() == wanted.keys()  # matched: same values
            rank = (exact, int(usable.sum()), float(cols.n[idx][usable].sum()))
            if best is None or rank > best:
                best, chosen = rank, (group, cols)
        return chosen

    def _passed_over(self, pod: PodInfo, state: ClusterState, idx: np.ndarray, cols: _Columns, now: float,
                     candidates: np.ndarray, pre: PreFilter | None) -> dict[str, str]:
        """The nodes not feasible for the pod whose usable evidence beats every candidate's, best first (at most
        NAMES_SHOWN), each with its first failing filter's reason: why the best-measured node was not chosen.
        `candidates`: the usable candidates' slots; a node whose score would mix tool architectures with theirs
        (mixed_archs) is not better measured, only otherwise built: left out. `pre`: the pod's PreFilter as decide()
        computed it (computed again when None)."""
        usable = ~np.isnan(cols.speed) & (now - cols.ts <= self.ttl_s) & ~self._blocked(cols, state)
        usable[idx] = False
        if candidates.size:
            usable &= cols.speed > float(cols.speed[candidates].max())
        slots = np.flatnonzero(usable)
        if slots.size and candidates.size and may_mix(cols.archs, state):
            slots = np.array(same_build(cols.archs, candidates, slots), dtype=np.int64)
        best = [str(state.names[i]) for i in slots[np.argsort(-cols.speed[slots])][:NAMES_SHOWN]]
        return {name: reason if isinstance(reason, str) else ", ".join(reason)
                for name, reason in state.explain(pod, best, pre).items()
                if reason}  # none: excluded by no filter's word

    def score(self, pod: PodInfo, state: ClusterState, idx: np.ndarray, cycle: Cycle) -> np.ndarray:
        out = np.full(len(idx), self.missing_score, dtype=float)
        test = pod.benchmark
        if test is None or len(idx) == 0:
            return out
        now = self.clock()
        bench: dict[str, Any] = {"test": test, "group": None, "covered": 0, "ttl_s": self.ttl_s,
                                 "statistic": self.statistic}
        cycle["benchmark"] = bench
        chosen = self._choose(pod, test, state, idx, now, bench)
        if chosen is None:
            return out
        group, cols = chosen
        speed = cols.speed[idx]
        has = ~np.isnan(speed)
        fresh = has & (now - cols.ts[idx] <= self.ttl_s)
        blocked_at = self._blocked(cols, state)[idx]
        usable = fresh & ~blocked_at
        stale, blocked = idx[has & ~fresh], idx[fresh & blocked_at]
        flagged = [int(i) for i in blocked if int(i) in cols.flags]
        labelled = [int(i) for i in blocked if int(i) not in cols.flags]
        bench.update(metric=group[1], params_key=group[2], covered=int(usable.sum()), stale=len(stale),
                     stale_names=_names(state, stale[:NAMES_SHOWN]), flagged=len(flagged),
                     flagged_names={str(state.names[i]): cols.flags[i] for i in flagged[:NAMES_SHOWN]},
                     emulated_by_label=len(labelled),
                     emulated_by_label_names={str(state.names[i]): cols.by_label[i] for i in labelled[:NAMES_SHOWN]},
                     passed_over=self._passed_over(pod, state, idx, cols, now, idx[usable],
                                                   cycle.get(prefilter.KEY)))
        if not usable.any():
            return out
        mixed = mixed_archs(cols.archs, state, idx[usable])
        if mixed:
            bench["covered"] = 0
            bench["warning"], bench["warning_reason"] = mixed_said(state, mixed), MIXED_ARCH
            return out
        scale = float(speed[usable].max())  # only ratios count: as shares of the fastest, 1e308s cannot overflow
        v, n, low = speed[usable] / scale, cols.n[idx][usable], cols.low[idx][usable] / scale
        k = self.shrink_runs
        shrunk = (n * v + k * float(np.median(v))) / (n + k)
        reference = float(np.max(np.fmin(low, shrunk)))  # fmin: a NaN bound gives the shrunk value
        out[usable] = shortfall_score(shrunk, reference, self.sensitivity)
        if self.unmeasured == "last":
            cycle["evidence"] = usable
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
