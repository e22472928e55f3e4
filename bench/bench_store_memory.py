"""The analyzer's write path in memory: peak and final RSS while storing N results in one process.

Run as `python bench/bench_store_memory.py [--count 100000] [--quick]`. Prints figures only.
Each run is a fresh process that writes N recorded sysbench raw logs and their results through
`Store.write_batch`, 1,000 events of each kind a commit (the analyzer's batch), with the batch
services' process settings (podtax.batchtuning), and reports its peak (VmHWM) and final RSS. The
anchor is the same run with DuckDB's default checkpoint behaviour (`max_vacuum_tasks` 100: row groups
merged, rewriting their strings in memory), which the store turns off outside a reparse (store.py).
Both alternate, three times each; medians and ours/anchor are printed with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from anchor import interleave, line, loadavg, median, proc_peak_rss_mb, proc_rss_mb, runs
from podtax.oneline_args import OneLineParser

BATCH = 1000


def child(count: int, vacuum_tasks: int | None) -> dict[str, float]:
    """Store `count` results in a fresh DuckDB file; the store's setting unless `vacuum_tasks` is given."""
    from bench_pipeline import raw_logs
    from podtax.batchtuning import tune_for_batches
    from podtax.derive import derive
    from podtax_analyzer.store import Store

    tune_for_batches()
    with tempfile.TemporaryDirectory(prefix="podtax-bench-") as tmp:
        store = Store(Path(tmp) / "bench.duckdb")
        if vacuum_tasks is not None:
            store.con.execute(f"SET GLOBAL max_vacuum_tasks = {vacuum_tasks}")
        start, t0 = proc_rss_mb(os.getpid()), time.perf_counter()
        for first in range(0, count, BATCH):
            logs = raw_logs(min(BATCH, count - first), start=first, chunk=BATCH)[0]
            store.write_batch([e for log in logs for e in (log, derive(log.data))])
        seconds, end = time.perf_counter() - t0, proc_rss_mb(os.getpid())
        store.close()
    return {"start": start, "peak": proc_peak_rss_mb(os.getpid()), "end": end, "seconds": seconds}


def measure(count: int, vacuum_tasks: int | None, out: list[dict[str, float]]) -> float:
    argv = [sys.executable, __file__, "--child", str(count)]
    if vacuum_tasks is not None:
        argv += ["--vacuum-tasks", str(vacuum_tasks)]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=Path(__file__).parent)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    out.append(figures)
    return figures["peak"]


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=100_000, help="results a run stores (default 100,000)")
    ap.add_argument("--quick", action="store_true", help="40,000 results a run (the first merges show by then)")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--vacuum-tasks", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(args.child, args.vacuum_tasks)))
        return 0
    count = 40_000 if args.quick else args.count
    ours: list[dict[str, float]] = []
    default: list[dict[str, float]] = []
    peaks = interleave({"ours": lambda: measure(count, None, ours),
                        "default": lambda: measure(count, 100, default)}, 3)
    print(line(f"analyzer write path, {count:,} results in one process: peak RSS", median(peaks["ours"]), "MB",
               "DuckDB's default checkpoints (row groups merged)", median(peaks["default"]), loadavg()))
    print(f"  ours {runs(peaks['ours'])}, default {runs(peaks['default'])}; "
          f"RSS at the start {median([r['start'] for r in ours]):,.0f} MB, at the end "
          f"{median([r['end'] for r in ours]):,.0f} vs {median([r['end'] for r in default]):,.0f} MB; "
          f"seconds {median([r['seconds'] for r in ours]):.1f} vs {median([r['seconds'] for r in default]):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
