"""Cost of one scheduling decision for pods WITH pod affinity and topology spread terms, at scale.

bench_scheduler.py measures the scheduler end to end, with pods that carry no terms. This one calls the
scheduler's own decision (`algorithm.decide`: filters, the four score plugins, the profile's weights) in
process, on a `ClusterState` of `--sizes` nodes (10 zones, label `topology.kubernetes.io/zone`) holding
`--placed` bound pods of `--apps` apps (label `app`), and times `--decisions` decisions in a row, each
followed by `assume` as the scheduler does (so the counts move), then forgets them. Scenarios:

- none: the same pods without terms: the anchor, measured in the same run;
- pref-anti: preferred pod anti-affinity (weight 100) on kubernetes.io/hostname against the pod's own app;
- spread: topologySpreadConstraints on kubernetes.io/hostname and on the zone, each DoNotSchedule
  (maxSkew 1) and ScheduleAnyway (maxSkew 1);
- req-anti: required pod anti-affinity on kubernetes.io/hostname against the pod's own app;
- all: the three together;
- all-nss: the same pods as all, their affinity terms selecting namespaces by label (namespaceSelector team=bench,
  which the pods' namespace and 24 of the other 49 carry) instead of their own namespace: the figure is also given
  as a ratio of all's (the cost of resolving namespaceSelectors).

In each scenario the placed pods carry the same terms as the incoming ones (they are the same workloads),
so the symmetry paths (existing pods' terms) are measured too. Each figure is the median of 3 runs,
interleaved (none, pref-anti, ..., none, ...), with the load average.

    .venv/bin/python bench/bench_scheduler_affinity.py                 # 1,000 and 5,000 nodes
    .venv/bin/python bench/bench_scheduler_affinity.py --quick         # 1,000 nodes, fewer decisions
    .venv/bin/python bench/bench_scheduler_affinity.py --profile all --sizes 5000   # cProfile of decide()

Prints figures only; no assertions.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import sys
import time
from collections.abc import Callable
from typing import Any

from anchor import interleave, line, loadavg, median, runs
from podtax.events import NodeScore, now
from podtax.oneline_args import OneLineParser
from podtax_scheduler.affinity_score import InterPodAffinityScore
from podtax_scheduler.algorithm import decide
from podtax_scheduler.model import PodInfo
from podtax_scheduler.profile import Profile
from podtax_scheduler.scorestore import ScoreStore
from podtax_scheduler.scoring import BenchmarkScore, LeastAllocated
from podtax_scheduler.spread_score import PodTopologySpreadScore
from podtax_scheduler.state import ClusterState

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
ZONES = 10
TEST = "sysbench-cpu"
SCENARIOS = ("none", "pref-anti", "spread", "req-anti", "all", "all-nss")
NSS = {"matchLabels": {"team": "bench"}}  # the all-nss scenario's namespaceSelector
NAMESPACES = [{"metadata": {"name": "default", "labels": {"team": "bench"}}}] + [
    {"metadata": {"name": f"ns-{k:02d}", "labels": {"team": "bench" if k % 2 else "other"}}} for k in range(49)]


def node_object(i: int) -> dict[str, Any]:
    name = f"node-{i:05d}"
    alloc = {"cpu": "64", "memory": "256Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {HOST: name, "kubernetes.io/arch": "amd64",
                                                  ZONE: f"zone-{i % ZONES}"}},
            "spec": {"taints": [], "unschedulable": False},
            "status": {"allocatable": alloc, "capacity": alloc, "conditions": [{"type": "Ready", "status": "True"}]}}


def terms(scenario: str, app: str) -> dict[str, Any]:
    """The spec fields of `scenario` for a pod of `app`."""
    own = {"matchLabels": {"app": app}}
    spec: dict[str, Any] = {}
    anti: dict[str, Any] = {}
    term: dict[str, Any] = {"labelSelector": own, "topologyKey": HOST}
    if scenario.endswith("-nss"):
        scenario, term = scenario.removesuffix("-nss"), {**term, "namespaceSelector": NSS}
    if scenario in ("pref-anti", "all"):
        anti["preferredDuringSchedulingIgnoredDuringExecution"] = [{"weight": 100, "podAffinityTerm": term}]
    if scenario in ("req-anti", "all"):
        anti["requiredDuringSchedulingIgnoredDuringExecution"] = [term]
    if anti:
        spec["affinity"] = {"podAntiAffinity": anti}
    if scenario in ("spread", "all"):
        spec["topologySpreadConstraints"] = [
            {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": own}
            for key in (HOST, ZONE) for when in ("DoNotSchedule", "ScheduleAnyway")]
    return spec


def pod_object(name: str, app: str, scenario: str, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "benchmark-scheduler", "containers": [
        {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}],
        **terms(scenario, app)}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                         "labels": {"app": app, "test": TEST}},
            "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


def build_state(nodes: int, placed: int, apps: int, scenario: str) -> ClusterState:
    state = ClusterState(capacity=nodes)
    state.namespaces.sync(NAMESPACES)
    for i in range(nodes):
        state.upsert_node(node_object(i))
    rng = random.Random(1)
    for k in range(placed):
        state.upsert_pod(pod_object(f"placed-{k}", f"app-{k % apps}", scenario, f"node-{rng.randrange(nodes):05d}"))
    return state


def store_for(nodes: int) -> ScoreStore:
    store = ScoreStore("local", "kubernetes")
    for i in range(nodes):
        m = 1000.0 + (i * 7919) % 997
        n = 5 + i % 50
        ci = (m * 0.99, m * 1.01) if n >= 6 else (None, None)
        store.put_score(NodeScore(cluster="local", node=f"node-{i:05d}", env="kubernetes", test=TEST,
                                  params_key="threads=1", metric="events_per_second", unit="events/s",
                                  higher_is_better=True, median=m, mean=m, n=n, ci_low=ci[0], ci_high=ci[1],
                                  updated_at=now()))
    return store


class Scenario:
    """A state holding the scenario's placed pods, and `decisions` incoming pods decided one after another."""

    def __init__(self, name: str, nodes: int, placed: int, apps: int, decisions: int, store: ScoreStore) -> None:
        self.name = name
        self.state = build_state(nodes, placed, apps, name)
        self.pods = [PodInfo.from_dict(pod_object(f"in-{j}", f"app-{j % apps}", name)) for j in range(decisions)]
        self.plugins = [BenchmarkScore(store, 3600.0), LeastAllocated(), InterPodAffinityScore(),
                        PodTopologySpreadScore()]
        self.weights = Profile().weights()
        self.unplaced = 0

    def run(self) -> float:
        """Milliseconds per decision over the incoming pods (each assumed where it goes; all forgotten after)."""
        rng = random.Random(0)
        spent, self.unplaced = 0.0, 0
        with self.state.lock:
            for p in self.pods:
                t0 = time.perf_counter()
                d = decide(p, self.state, self.plugins, self.weights, rng)
                spent += time.perf_counter() - t0
                if d.node is None:
                    self.unplaced += 1
                else:
                    self.state.assume(p, d.node)
            for p in self.pods:
                self.state.forget(p.uid)
        return spent * 1000 / len(self.pods)


def profile_decide(sc: Scenario, top: int = 25) -> None:
    prof = cProfile.Profile()
    prof.enable()
    sc.run()
    prof.disable()
    print(f"cProfile of decide(), scenario {sc.name}, {len(sc.pods)} decisions:", flush=True)
    pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative").print_stats(top)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,5000", help="comma-separated node counts")
    ap.add_argument("--placed", type=int, default=3000, help="bound pods in the cluster before the decisions")
    ap.add_argument("--apps", type=int, default=50, help="apps the pods belong to (label app)")
    ap.add_argument("--decisions", type=int, default=200, help="decisions timed per run")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated, of " + ", ".join(SCENARIOS))
    ap.add_argument("--profile", metavar="SCENARIO", help="print a cProfile of decide() in this scenario instead")
    ap.add_argument("--quick", action="store_true", help="1,000 nodes, 1,000 placed pods, 50 decisions")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.placed, args.decisions = "1000", 1000, 50
    names = [s for s in args.scenarios.split(",") if s]
    if "none" not in names:
        names.insert(0, "none")
    print(f"scheduling decisions with pod affinity / topology spread terms: {args.placed} placed pods of "
          f"{args.apps} apps, {args.decisions} decisions per run, {ZONES} zones", flush=True)
    for nodes in [int(s) for s in args.sizes.split(",") if s]:
        store = store_for(nodes)
        t0 = time.monotonic()
        if args.profile:
            sc = Scenario(args.profile, nodes, args.placed, args.apps, args.decisions, store)
            sc.run()  # warm the caches
            profile_decide(sc)
            continue
        scenarios = {n: Scenario(n, nodes, args.placed, args.apps, args.decisions, store) for n in names}
        for sc in scenarios.values():
            sc.run()  # warm the caches (static masks, label domains, score columns)
        print(f"{nodes} nodes (set-up {time.monotonic() - t0:.1f}s)", flush=True)
        measures: dict[str, Callable[[], float]] = {n: sc.run for n, sc in scenarios.items()}
        figures = interleave(measures, 3)
        load = loadavg()
        anchor = median(figures["none"])
        for n in names:
            ms = median(figures[n])
            unplaced = f", {scenarios[n].unplaced} of {args.decisions} unplaced" if scenarios[n].unplaced else ""
            print(f"  {line(f'{n:9s} ms per decision', ms, 'ms', 'no terms', anchor, load, higher_is_better=False)}"
                  f"  = {1000 / ms:,.0f} decisions/s {runs(figures[n])}{unplaced}", flush=True)
            if n.endswith("-nss") and (plain := n.removesuffix("-nss")) in figures:
                print(f"    {n} / {plain} (namespaceSelector vs the pod's own namespace): "
                      f"x{ms / median(figures[plain]):.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
