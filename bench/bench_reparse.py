"""Reparse memory: peak RSS of `reparse` (logs read in batches keyed by run id) against the anchor,
the former read (one query over every stored log, sorted, then fetched in batches).

Stores N raw logs (recorded sysbench output from tests/corpus) in a DuckDB file, then runs each
variant 3 times in a fresh process and prints the median peak RSS, time and the load average.

    python bench/bench_reparse.py [--count 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from podtax import events
from podtax.oneline_args import OneLineParser

REPO = Path(__file__).resolve().parents[1]
LOG = REPO / "tests" / "corpus" / "debian12-x86_64" / "sysbench-cpu-prime100000-1t.log"


def populate(db: Path, count: int) -> None:
    from podtax_analyzer.store import Store

    store = Store(db)
    text, now = LOG.read_text(), events.now()
    for start in range(0, count, 2000):
        # stderr: 8 KB of distinct noise per log, as real logs differ (identical ones compress to nothing)
        store.write_batch([events.raw_log(events.RawLog(
            run=events.RunSpec(run_id=f"run-{i:07d}", campaign="bench", node="n", env="host", test="sysbench-cpu",
                               params={"threads": 1, "max_prime": 100000, "events": 200}),
            stdout=text, stderr=os.urandom(4096).hex(), exit_code=0, started_at=now, ended_at=now), "bench")
            for i in range(start, min(count, start + 2000))])
    store.con.execute("CHECKPOINT")  # no WAL to replay when the children open it (that would dominate RSS)
    store.close()


def anchor(store, campaign: str | None = None) -> int:  # type: ignore[no-untyped-def]
    """The former reparse read: every log in one sorted query, fetched 1000 at a time."""
    from podtax.derive import derive
    from podtax_analyzer.reparse import _raw

    cur = store.cursor()
    cur.execute("""SELECT l.*, coalesce(r.sequence, 0) AS sequence FROM raw_logs l LEFT JOIN runs r USING (run_id)
                   WHERE $1::varchar IS NULL OR l.campaign = $1 ORDER BY l.started_at""", [campaign])
    cols = [d[0] for d in cur.description]
    n = 0
    while rows := cur.fetchmany(1000):
        outcomes = [derive(_raw(dict(zip(cols, row))), "podtax/reparse") for row in rows]
        store.replace_results(outcomes)
        n += len(outcomes)
    return n


def peak_rss_mb() -> float:
    """VmHWM of this process (ru_maxrss would include the parent's peak: Linux keeps it across exec)."""
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def child(db: str, variant: str) -> None:
    from podtax_analyzer.reparse import reparse
    from podtax_analyzer.store import Store

    store = Store(Path(db))
    opened = peak_rss_mb()
    if os.environ.get("BENCH_MEMORY_LIMIT"):
        store.con.execute(f"SET memory_limit = '{os.environ['BENCH_MEMORY_LIMIT']}'")
    t0 = time.perf_counter()
    n = anchor(store) if variant == "anchor" else reparse(store)["logs"]
    took = time.perf_counter() - t0
    store.close()
    peak = peak_rss_mb()
    print(json.dumps({"logs": n, "seconds": took, "peak_rss_mb": peak, "growth_mb": peak - opened}))


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(description=__doc__.splitlines()[0])
    p.add_argument("--count", type=int, default=20_000)
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-reparse-") as tmp:
        db = Path(tmp) / "bench.duckdb"
        populate(db, args.count)
        print(f"{args.count} raw logs stored ({db.stat().st_size / 2**20:.0f} MiB DuckDB); load average "
              f"{loadavg()}")
        out: dict[str, list[dict]] = {"anchor": [], "batched": []}
        for _ in range(3):
            for variant in out:
                proc = subprocess.run([sys.executable, __file__, "--child", str(db), variant], capture_output=True,
                                      text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "0"})
                out[variant].append(json.loads(proc.stdout.strip().splitlines()[-1]))
        med = {v: {k: statistics.median(r[k] for r in runs) for k in ("peak_rss_mb", "growth_mb", "seconds")}
               for v, runs in out.items()}
        for v, m in med.items():
            print(f"{v:8s} peak RSS {m['peak_rss_mb']:7.0f} MiB (+{m['growth_mb']:.0f} MiB during the reparse)   "
                  f"{m['seconds']:6.1f} s   (median of 3)")
        growth = med["batched"]["growth_mb"] / max(med["anchor"]["growth_mb"], 1)
        print(f"ratio batched/anchor: peak RSS x{med['batched']['peak_rss_mb'] / med['anchor']['peak_rss_mb']:.2f}, "
              f"growth x{growth:.2f}, "
              f"time x{med['batched']['seconds'] / med['anchor']['seconds']:.2f}; load average after "
              f"{loadavg()}")
        for variant in out:  # under a DuckDB memory cap: the one-query read cannot sort every log in it
            proc = subprocess.run([sys.executable, __file__, "--child", str(db), variant], capture_output=True,
                                  text=True, env={**os.environ, "BENCH_MEMORY_LIMIT": "100MB"})
            verdict = "completed" if proc.returncode == 0 else \
                "failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1][:100]
            print(f"{variant:8s} with DuckDB memory_limit=100MB: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
