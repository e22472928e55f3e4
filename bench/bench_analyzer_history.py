"""The analyzer's memory over a long history: does it level off once its bounds are reached?

Run as `python bench/bench_analyzer_history.py [--count 200000] [--quick]`. Prints figures only.
Each run is a fresh process that stores N recorded sysbench raw logs and their results through
`Store.write_batch` (1,000 events of each kind a commit) and folds every third batch's new runs into
a `ScoreCache`, as the service publishes, with the batch services' process settings and the modules the
service imports (not the bench's scipy.stats: ~45 MB more RSS, which passed for the analyzer's). It reports the
RSS at each fiftieth of the run. "Bounded" is the service's design with small bounds, so they are reached
within the run: DuckDB's memory limit (PODTAX_ANALYZER_MEMORY_MB; here its floor, 128 MB), the file's blocks
it keeps (store.CACHE_MB; here 8 MB, the file's size at ~35,000 results) and the score cache's value budget
(score_cache.MAX_VALUES; here 400,000 values, 50,000 runs). The anchor is the same run unbounded: DuckDB's
default limit (80% of the RAM), which keeps every block of the file, and a cache that keeps every value. The figure is
the growth over the second half of the run in MB per 100,000 results (the Theil-Sen slope through the
RSS samples of the second half: transients, such as a dropped score-cache key read back, do not pass for
growth); both alternate three times and the medians and bounded/unbounded are printed with the load
average, and where the RSS goes: DuckDB's own accounting (duckdb_memory(), its keys apart) at each tenth,
the growth of each part, the score cache's values at the end, and the RSS by allocator (allocators.py:
glibc malloc held and kept free, DuckDB's jemalloc held and resident, Python's small-object arenas),
the highest RSS between two flushes (after each batch and each publication) and its growth, and, at the
end of each run, the RSS once DuckDB's limit is lowered to 16 MB: how much of it was DuckDB's
block cache (evictable, bounded by its limit) and the freed pages its allocator kept (a new limit returns them).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from allocators import readings
from anchor import interleave, line, loadavg, median, proc_peak_rss_mb, proc_rss_mb, runs
from podtax.oneline_args import OneLineParser

if TYPE_CHECKING:
    from podtax_analyzer.store import Store

BATCH = 1000
SAMPLES = 50  # RSS samples a run (each fiftieth); the slope is fitted through the second half
TENTH = SAMPLES // 10
DUCKDB_MB = 128  # the service's floor (PODTAX_ANALYZER_MEMORY_MB >= 128): at 64 MB a key's reload runs out
CACHE_MB = 8  # the file's blocks DuckDB keeps (store.CACHE_MB is 32): reached within a --quick run
CACHE_VALUES = 400_000
EVICT_MB = 16  # DuckDB's limit at the end of a run, to show how much of the RSS was its evictable block cache


def child(count: int, bounded: bool) -> dict[str, list[float] | float]:
    from bench_pipeline import raw_logs
    from podtax.batchtuning import tune_for_batches
    from podtax.derive import derive
    from podtax_analyzer import comparisons  # noqa: F401 - the service imports it at its first publication
    from podtax_analyzer.score_cache import ScoreCache
    from podtax_analyzer.store import FLUSH_BATCHES, Store

    tune_for_batches()
    rss: list[float] = []
    duck: list[float] = []
    keys: list[float] = []
    dead: list[float] = []
    settled: list[float] = []  # RSS right after each flush, before a publication reads anything (bounded only)
    peaks: list[float] = []  # the highest RSS after a batch or a publication, per FLUSH_BATCHES batches
    peak_now = 0.0
    parts: list[dict[str, float | None]] = []
    with tempfile.TemporaryDirectory(prefix="podtax-bench-") as tmp:
        store = Store(Path(tmp) / "bench.duckdb", memory_mb=DUCKDB_MB if bounded else None, cache_mb=CACHE_MB)
        cache = ScoreCache(max_values=CACHE_VALUES if bounded else 2**62)
        pending: set[str] = set()
        step = max(BATCH, count // SAMPLES)
        for first in range(0, count, BATCH):
            logs = raw_logs(min(BATCH, count - first), start=first, chunk=BATCH)[0]
            pending |= store.write_batch([e for log in logs for e in (log, derive(log.data))])
            if store.batches % FLUSH_BATCHES == 0:
                peaks.append(peak_now)
                peak_now = 0.0
                if bounded:  # the unbounded store never flushes
                    settled.append(proc_rss_mb(os.getpid()))
            peak_now = max(peak_now, proc_rss_mb(os.getpid()))
            if (first // BATCH) % 3 == 2:
                cache.update(store, pending)
                pending = set()
                peak_now = max(peak_now, proc_rss_mb(os.getpid()))
            if (first + BATCH) % step == 0:
                rss.append(proc_rss_mb(os.getpid()))
                tags = dict(store.cursor().execute("SELECT tag, memory_usage_bytes FROM duckdb_memory()").fetchall())
                duck.append(sum(tags.values()) / 2**20)  # DuckDB's own accounting (its block cache, mostly)
                keys.append(tags.get("ART_INDEX", 0) / 2**20)  # the keys' index: evictable once checkpointed
                dead.append(store.cursor().execute("SELECT sum(dead_nodes) FROM duckdb_eviction_queues()"
                                                   ).fetchone()[0])  # ~0.8 KB of C++ heap each (store.CACHE_MB)
                parts.append(readings())
        peak = proc_peak_rss_mb(os.getpid())
        # DuckDB's block cache is evictable, and a new limit also makes its allocator return the pages it
        # kept: the limit lowered to EVICT_MB at the end shows how much of the RSS both were.
        store.cursor().execute(f"SET memory_limit = '{EVICT_MB}MB'")
        evicted = [proc_rss_mb(os.getpid()), _duckdb_mb(store), readings()["duckdb_resident"]]
        store.close()
    return {"rss": rss, "duckdb": duck, "keys": keys, "dead": dead, "settled": settled, "peaks": peaks, "parts": parts,
            "cache": cache.held * 16 / 2**20, "peak": peak, "evicted": evicted}


def _duckdb_mb(store: Store) -> float:
    return store.cursor().execute("SELECT sum(memory_usage_bytes) FROM duckdb_memory()").fetchone()[0] / 2**20


def measure(count: int, bounded: bool, out: list[dict]) -> float:
    argv = [sys.executable, __file__, "--child", str(count)] + (["--bounded"] if bounded else [])
    done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=Path(__file__).parent)
    if done.returncode:
        raise SystemExit(f"the {'bounded' if bounded else 'unbounded'} run failed (exit {done.returncode}):\n"
                         + "\n".join(done.stderr.strip().splitlines()[-8:]))
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    out.append(figures)
    return _slope(count, figures["rss"])


def _slope(count: int, samples: list[float], part: int = 2) -> float:
    """MB per 100,000 results over the last 1/`part` of the run (the second half by default): the
    Theil-Sen slope (the median of the pairwise slopes), so a transient (a dropped score-cache key read
    back, +20 to +35 MB for a moment at 100,000 results) does not pass for growth as a least-squares fit would."""
    from scipy.stats import theilslopes  # here, not in the children: its import alone is ~60 MB of their RSS

    tail = samples[len(samples) - len(samples) // part - 1:]
    if len(tail) < 2:  # too few samples (a short --count): no slope
        return math.nan
    return float(theilslopes(tail, np.arange(len(tail)) * count / len(samples))[0]) * 100_000


def _by_allocator(count: int, figures: list[dict]) -> str:
    """Each allocator's figure at the end of the run and its growth (see allocators.py), medians of the runs."""
    out = []
    for part in ("glibc_in_use", "glibc_free", "duckdb_allocated", "duckdb_resident", "pymalloc"):
        series = [[p[part] for p in f["parts"]] for f in figures]
        if any(v is None for s in series for v in s):
            out.append(f"{part} n/a")
            continue
        end, growth = median([s[-1] for s in series]), median([_slope(count, s) for s in series])
        out.append(f"{part} {end:.0f} ({growth:+.1f})")
    return ", ".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=200_000, help="results a run stores (default 200,000)")
    ap.add_argument("--quick", action="store_true", help="100,000 results a run")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--bounded", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(args.child, args.bounded)))
        return 0
    count = 100_000 if args.quick else args.count
    bounded: list[dict] = []
    unbounded: list[dict] = []
    growth = interleave({"bounded": lambda: measure(count, True, bounded),
                         "unbounded": lambda: measure(count, False, unbounded)}, 3)
    print(line(f"analyzer memory growth over the second half of {count:,} results (store + score cache)",
               median(growth["bounded"]), "MB per 100,000 results",
               "unbounded: DuckDB's default limit, every value cached", median(growth["unbounded"]), loadavg(),
               higher_is_better=False))
    print(f"  bounded {runs(growth['bounded'])}, unbounded {runs(growth['unbounded'])}")
    last = {name: median([_slope(count, f["rss"], 4) for f in figures])
            for name, figures in (("bounded", bounded), ("unbounded", unbounded))}
    print(f"  over the last quarter: bounded {last['bounded']:+.1f}, unbounded {last['unbounded']:+.1f} MB per "
          "100,000 results (the bounds are reached late in a run: --count 600000 shows the growth past them)")
    for name, figures in (("bounded", bounded), ("unbounded", unbounded)):
        tenths = [median([f["rss"][i] for f in figures]) for i in range(TENTH - 1, len(figures[0]["rss"]), TENTH)]
        duck = [median([f["duckdb"][i] for f in figures]) for i in range(len(figures[0]["duckdb"]))]
        keys = [median([f["keys"][i] for f in figures]) for i in range(len(figures[0]["keys"]))]
        duck_tenths, key_tenths = duck[TENTH - 1::TENTH], keys[TENTH - 1::TENTH]
        print(f"  {name}: RSS MB at each tenth {' '.join(f'{v:.0f}' for v in tenths)}; "
              f"peak {median([f['peak'] for f in figures]):.0f} MB")
        print(f"  {name}: of which DuckDB (duckdb_memory()) {' '.join(f'{v:.0f}' for v in duck_tenths)}; "
              f"score cache at the end {median([f['cache'] for f in figures]):.0f} MB")
        outside = median([_slope(count, [r - d for r, d in zip(f["rss"], f["duckdb"])]) for f in figures])
        print(f"  {name}: of which the tables' keys (ART_INDEX) {' '.join(f'{v:.0f}' for v in key_tenths)}"
              f"; growth per 100,000 results: DuckDB's accounting {_slope(count, duck):+.1f} MB (keys"
              f" {_slope(count, keys):+.1f}), the rest of the RSS {outside:+.1f} MB")
        dead = [median([f["dead"][i] for f in figures]) for i in range(TENTH - 1, len(figures[0]["dead"]), TENTH)]
        print(f"  {name}: dead nodes in DuckDB's eviction queues at each tenth {' '.join(f'{v:,.0f}' for v in dead)}"
              " (~0.8 KB of its C++ heap each, in glibc malloc's 'in use')")
        settled = [median([f["settled"][i] for f in figures]) for i in range(len(figures[0]["settled"]))]
        if settled:  # bounded runs of FLUSH_BATCHES batches or more
            print(f"  {name}: RSS right after each flush (store.FLUSH_BATCHES) {' '.join(f'{v:.0f}' for v in settled)}"
                  f"; growth over the second half {median([_slope(count, f['settled']) for f in figures]):+.1f} MB "
                  "per 100,000 results (the steady state: between flushes DuckDB's caches and a publication's freed "
                  "pages come and go)")
        peaks = [median([f["peaks"][i] for f in figures]) for i in range(len(figures[0]["peaks"]))]
        if peaks:
            print(f"  {name}: highest RSS between flushes (after a batch or a publication, per FLUSH_BATCHES batches) "
                  f"{' '.join(f'{v:.0f}' for v in peaks)}; growth over the second half "
                  f"{median([_slope(count, f['peaks']) for f in figures]):+.1f} MB per 100,000 results")
        rss_end, duck_end = median([f["rss"][-1] for f in figures]), median([f["duckdb"][-1] for f in figures])
        rss_ev, duck_ev = (median([f["evicted"][i] for f in figures]) for i in (0, 1))
        resident = [(f["parts"][-1]["duckdb_resident"], f["evicted"][2]) for f in figures]
        jemalloc = ("n/a" if any(None in r for r in resident) else
                    f"{median([r[0] for r in resident]):.0f} -> {median([r[1] for r in resident]):.0f} MB")
        print(f"  {name}: at the end, DuckDB's limit lowered to {EVICT_MB} MB: its accounting {duck_end:.0f} -> "
              f"{duck_ev:.0f} MB, its allocator's resident pages {jemalloc}, the RSS {rss_end:.0f} -> {rss_ev:.0f} MB")
        print(f"  {name}: by allocator (MB at the end, growth per 100,000 results): {_by_allocator(count, figures)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
