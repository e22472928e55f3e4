"""Cost of one scheduling decision when many nodes carry PreferNoSchedule taints (TaintToleration's score).

cluster-autoscaler puts `DeletionCandidateOfClusterAutoscaler:PreferNoSchedule` on many nodes at once, so a large
share of the candidates can be tainted. This calls the scheduler's own decision (`algorithm.decide` with its five
score plugins and the default profile's weights) in process on `--nodes` nodes, with no node tainted (the anchor,
measured in the same run), half of them and all of them tainted (one or two PreferNoSchedule taints), for pods with
no tolerations. Each figure is the median of 3 interleaved runs of `--decisions` decisions, with the load average.

    .venv/bin/python bench/bench_taint_score.py
    .venv/bin/python bench/bench_taint_score.py --nodes 1000 --decisions 50

Prints figures only; no assertions.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
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
from podtax_scheduler.taint_score import TaintTolerationScore

TEST = "sysbench-cpu"
TAINTS = ([{"key": "DeletionCandidateOfClusterAutoscaler", "value": "1700000000", "effect": "PreferNoSchedule"}],
          [{"key": "DeletionCandidateOfClusterAutoscaler", "value": "1700000000", "effect": "PreferNoSchedule"},
           {"key": "maintenance", "value": "soon", "effect": "PreferNoSchedule"}])
SHARES = {"none": 0.0, "half": 0.5, "all": 1.0}


def node_object(i: int, taints: list[dict[str, str]]) -> dict[str, Any]:
    name = f"node-{i:05d}"
    alloc = {"cpu": "64", "memory": "256Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/arch": "amd64"}},
            "spec": {"taints": taints, "unschedulable": False},
            "status": {"allocatable": alloc, "capacity": alloc, "conditions": [{"type": "Ready", "status": "True"}]}}


def pod_object(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": {"test": TEST}},
            "spec": {"schedulerName": "benchmark-scheduler", "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}]},
            "status": {"phase": "Pending"}}


def store_for(nodes: int) -> ScoreStore:
    store = ScoreStore("local", "kubernetes")
    for i in range(nodes):
        m = 1000.0 + (i * 7919) % 997
        store.put_score(NodeScore(cluster="local", node=f"node-{i:05d}", env="kubernetes", test=TEST,
                                  params_key="threads=1", metric="events_per_second", unit="events/s",
                                  higher_is_better=True, median=m, mean=m, n=20, ci_low=m * 0.99, ci_high=m * 1.01,
                                  updated_at=now()))
    return store


class Case:
    def __init__(self, share: float, nodes: int, decisions: int, store: ScoreStore) -> None:
        rng = random.Random(1)
        self.state = ClusterState(capacity=nodes)
        for i in range(nodes):
            self.state.upsert_node(node_object(i, rng.choice(TAINTS) if rng.random() < share else []))
        self.pods = [PodInfo.from_dict(pod_object(f"in-{j}")) for j in range(decisions)]
        self.plugins = [BenchmarkScore(store, 3600.0), LeastAllocated(), InterPodAffinityScore(),
                        PodTopologySpreadScore(), TaintTolerationScore()]
        self.weights = Profile().weights()

    def run(self) -> float:
        """Milliseconds per decision (each pod assumed where it goes; all forgotten after)."""
        rng, spent = random.Random(0), 0.0
        with self.state.lock:
            for p in self.pods:
                t0 = time.perf_counter()
                d = decide(p, self.state, self.plugins, self.weights, rng)
                spent += time.perf_counter() - t0
                if d.node is not None:
                    self.state.assume(p, d.node)
            for p in self.pods:
                self.state.forget(p.uid)
        return spent * 1000 / len(self.pods)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--decisions", type=int, default=100, help="decisions timed per run")
    args = ap.parse_args(argv)
    store = store_for(args.nodes)
    cases = {name: Case(share, args.nodes, args.decisions, store) for name, share in SHARES.items()}
    for case in cases.values():
        case.run()  # warm the caches
    figures = interleave({name: case.run for name, case in cases.items()}, 3)
    load, anchor = loadavg(), median(figures["none"])
    print(f"{args.nodes} nodes, PreferNoSchedule taints on none / half / all of them, {args.decisions} decisions "
          "per run", flush=True)
    for name in SHARES:
        text = line(f"{name:4s} tainted: ms per decision", median(figures[name]), "ms", "none tainted", anchor, load,
                    higher_is_better=False)
        print(f"  {text} {runs(figures[name])}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
