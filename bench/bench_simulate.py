"""Placement policies compared by `podtax_scheduler.simulate` on study-shaped data, and its speed.

The data has the shape of examples/campaigns/study.yaml: nodes x86-b, x86-c, rpi-1, rpi-2, pod-side
sysbench-cpu events/s per run. x86-b's centre is the corpus figure (183 events/s at max_prime
100000, 1 thread: tests/corpus/debian12-x86_64); x86-c is 8% slower, the two arm boards about 4.6x
slower; x86 runs have 1% noise and stopped at 10-12 runs, the boards 3% and ran to 40 (the adaptive
repetitions of study.yaml). These are SYNTHETIC draws around those centres, not a measured campaign.
Each node is copied `--copies` times; jobs of 60 s at the fleet's median speed arrive at `--rate`.

    .venv/bin/python bench/bench_simulate.py [--seeds 20] [--copies 5] [--rate 0.5]

Prints the table (mean [95% CI] over seeds), the seconds per simulated seed and policy, the load
average, and an anchor: the same simulation's cost with the `random` policy (no scoring), and the ratio.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from podtax.oneline_args import OneLineParser
from podtax_scheduler.simulate import JobClass, Measured, Workload, evaluate, run_once

CENTRES = {"x86-b": (183.0, 0.01, 10), "x86-c": (168.4, 0.01, 12), "rpi-1": (40.0, 0.03, 40),
           "rpi-2": (37.5, 0.03, 40)}


def study_workload(copies: int, rate: float, duration: float, seed: int = 7) -> Workload:
    rng = np.random.default_rng(seed)
    values = {n: c * np.exp(rng.normal(0, cv, runs)) for n, (c, cv, runs) in CENTRES.items()}
    m = Measured("sysbench-cpu", "max_prime=100000 threads=1", "events_per_second", "events/s", True, values)
    names = {f"{n}-{k}": n for n in CENTRES for k in range(copies)}
    return Workload(list(names), names, {"cpu": "4", "memory": "8Gi"}, duration, 0.05,
                    [JobClass("sysbench-cpu 1 thread", m, rate, 60.0, {"cpu": "1", "memory": "512Mi"})])


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--copies", type=int, default=5)
    ap.add_argument("--rate", type=float, default=0.5, help="jobs per second")
    ap.add_argument("--duration", type=float, default=1800.0, help="seconds of arrivals")
    args = ap.parse_args(argv)
    w = study_workload(args.copies, args.rate, args.duration)
    t0 = time.perf_counter()
    res = evaluate(w, ["default", "random", "prototype", "podtax"], range(args.seeds))
    spent = time.perf_counter() - t0
    print(f"{len(w.nodes)} nodes, {args.rate} jobs/s for {args.duration:.0f} s, {args.seeds} seeds; "
          f"mean [95% CI]")
    print(f"{'policy':10s} {'mean JCT s':>24s} {'p95 JCT s':>24s} {'jobs/h':>24s} {'regret %':>22s} "
          f"{'JCT vs default':>24s}")

    def ci(v: list[float], f: str = "{:.1f}") -> str:
        return f"{f.format(v[0])} [{f.format(v[1])}, {f.format(v[2])}]"

    for name, r in res.items():
        print(f"{name:10s} {ci(r['mean_jct_s']):>24s} {ci(r['p95_jct_s']):>24s} {ci(r['jobs_per_h']):>24s} "
              f"{ci(r['regret_pct']):>22s} {ci(r['jct_vs_default'], '{:.3f}'):>24s}")
    runs = args.seeds * len(res)
    timing = []
    for _ in range(3):
        a0 = time.perf_counter()
        run_once(w, "random", 0)
        a1 = time.perf_counter()
        run_once(w, "podtax", 0)
        timing.append((a1 - a0, time.perf_counter() - a1))
    anchor, podtax = (float(np.median([t[i] for t in timing])) for i in (0, 1))
    print(f"{spent / runs:.3f} s per simulated seed and policy ({runs} runs); one seed: podtax {podtax:.3f} s, "
          f"anchor random {anchor:.3f} s, ratio {podtax / anchor:.2f} (median of 3; load average "
          f"{os.getloadavg()[0]:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
