"""The analyzer's cost per batch as its history grows: does storing 1,000 results cost more when the
store already holds a million runs?

Run as `python bench/bench_store_history.py [--history 1000000] [--quick]`. Prints figures only.
A store is filled with N runs of history (real raw logs and results of another campaign, copied in SQL:
raw_logs, runs and metrics as the analyzer writes them), then a batch of 1,000 new raw logs and their
results is stored as the service stores it (`Store.write_batch`, overlap marking included) and folded
into the store's `ScoreCache` (`update`, as after each publication; loaded once by a warm-up batch, as a
running analyzer's cache is). The anchor is the same batch into a store
with no history. Both are timed three times each, interleaved, with fresh run ids each time; the medians,
N-history / empty and the load average are printed.
A store whose per-batch cost grows with N slows the pipeline as the history grows. The history's runs
share the new batch's nodes and tests (another campaign): each touched score key holds N/100 runs.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from anchor import interleave, line, loadavg, median, runs
from podtax.oneline_args import OneLineParser

BATCH = 1000


def _events(first: int) -> list:
    from bench_pipeline import raw_logs
    from podtax.derive import derive

    logs = raw_logs(BATCH, start=first, chunk=BATCH)[0]
    return [e for log in logs for e in (log, derive(log.data))]


def filled(path: Path, history: int) -> object:
    """A store holding `history` runs of campaign `old` (copies of one real batch)."""
    from podtax_analyzer.store import Store

    store = Store(path)
    if history:
        store.write_batch(_events(10**9))  # the seed rows, run ids bench-1000000000...
        con = store.cursor()
        copies = history // BATCH
        for table in ("raw_logs", "runs", "metrics"):
            cols = [c for (c,) in con.execute("SELECT column_name FROM information_schema.columns WHERE "
                                               "table_name = ? ORDER BY ordinal_position", [table]).fetchall()]
            select = ", ".join("run_id || '-old-' || i::VARCHAR" if c == "run_id" else
                               "'old'" if c == "campaign" else c for c in cols)
            con.execute(f"INSERT INTO {table} SELECT {select} FROM {table}, range(1, {copies}) t(i)"  # noqa: S608
                        " WHERE run_id LIKE 'bench-%'")
        con.execute("CHECKPOINT")
        con.close()
    return store


def one_batch(store: object, cache: object, first: int, parts: dict[str, list[float]]) -> float:
    """Seconds to store one batch and fold it into the store's score cache (warm: as in the service);
    the two steps' seconds are appended to `parts`."""
    batch = _events(first)
    start = time.perf_counter()
    new = store.write_batch(batch)
    stored = time.perf_counter()
    cache.update(store, new)
    done = time.perf_counter()
    parts["write_batch"].append(stored - start)
    parts["cache.update"].append(done - stored)
    return done - start


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--history", type=int, default=1_000_000, help="runs already stored (default 1,000,000)")
    ap.add_argument("--quick", action="store_true", help="a history of 200,000 runs")
    ap.add_argument("--cache-values", type=int, default=None,
                    help="the score cache's value budget (PODTAX_ANALYZER_SCORE_CACHE_VALUES; default the service's)")
    args = ap.parse_args(argv)
    from podtax_analyzer.score_cache import ScoreCache

    history = 200_000 if args.quick else args.history
    with tempfile.TemporaryDirectory(prefix="podtax-bench-") as tmp:
        started = time.perf_counter()
        full, empty = filled(Path(tmp) / "full.duckdb", history), filled(Path(tmp) / "empty.duckdb", 0)
        print(f"  (history of {history:,} runs built in {time.perf_counter() - started:.0f} s)", file=sys.stderr)
        counter = iter(range(0, 10**8, BATCH))
        caches = {"full": ScoreCache(args.cache_values), "empty": ScoreCache(args.cache_values)}
        parts: dict[str, dict[str, list[float]]] = {n: {"write_batch": [], "cache.update": []} for n in caches}
        measures: dict[str, Callable[[], float]] = {
            "full": lambda: one_batch(full, caches["full"], next(counter), parts["full"]),
            "empty": lambda: one_batch(empty, caches["empty"], next(counter), parts["empty"])}
        for measure in measures.values():  # warm-up: the caches load their keys' history once
            measure()
        for p in parts.values():
            p["write_batch"].clear()
            p["cache.update"].clear()
        figures = interleave(measures, 3)
        load = loadavg()
        budget = caches["full"].max_values
        print(line(f"one batch of {BATCH:,} results stored and scored, {history:,} runs stored before "
                   f"(score cache {budget:,} values)",
                   median(figures["full"]), "s", "the same into an empty store", median(figures["empty"]), load,
                   higher_is_better=False))
        print(f"  with history {runs(figures['full'])} s, empty {runs(figures['empty'])} s; "
              "target: the ratio near 1x (the cost of a batch does not grow with the history)")
        for step in ("write_batch", "cache.update"):
            print("  " + line(f"of which {step}", median(parts["full"][step]), "s", "empty",
                              median(parts["empty"][step]), load, higher_is_better=False))
        full.close()
        empty.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
