"""The analyzer's commit of a burst of host facts or placements: 1,000 of either in one batch.

Run as `python bench/bench_store_events.py [--rows 1000] [--quick]`. Prints figures only.
Each kind is stored as the service stores it (`Store.write_batch`, one transaction, fresh event ids each time)
into a real DuckDB file, three times each, interleaved with the anchor: the same number of results (runs and their
metrics: one columnar INSERT per table, store_insert.py) into another store of the same run. Rows per second
(medians), the ratio to the anchor and the load average are printed. The scheduler publishes one placement per pod
(a 1,000-pod deployment is one burst), every host agent its facts; a batch that commits slowly holds the pipeline
back, and one that outlasts the analyzer's stop grace is cut short.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from anchor import interleave, line, loadavg, median, runs
from podtax.oneline_args import OneLineParser


def _facts(n: int, first: int) -> list:
    from podtax import events

    return [events.host_facts(events.HostFacts(
        node=f"node-{i % 50}", kernel="6.1.0-28-amd64", os="Debian GNU/Linux 12 (bookworm)",
        cpu_model="Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz", hw_threads=56, arch="x86_64",
        tool_versions={"sysbench": "sysbench 1.0.20", "fio": "fio-3.33", "iperf3": f"iperf 3.12 #{i}"}), "bench")
        for i in range(first, first + n)]


def _placements(n: int, first: int) -> list:
    from podtax import events

    return [events.PlacementMadeV1(subject="podtax.placement.made", data=events.PlacementMade(
        namespace="default", pod=f"web-{i}", pod_uid=f"uid-{i}", node=f"node-{i % 50}", test="sysbench-cpu",
        candidates=[events.Candidate(node=f"node-{(i + k) % 50}", score=90.0 - k) for k in range(3)],
        message=f"placed on node-{i % 50}")) for i in range(first, first + n)]


def _results(n: int, first: int) -> list:
    from bench_pipeline import raw_logs
    from podtax.derive import derive

    return [derive(log.data) for log in raw_logs(n, start=first, chunk=n)[0]]


def _timed(store: object, batch: list) -> float:
    """Rows per second of one write_batch of `batch`."""
    start = time.perf_counter()
    store.write_batch(batch)
    return len(batch) / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1000, help="events in each batch (default 1,000)")
    ap.add_argument("--quick", action="store_true", help="batches of 200 events")
    args = ap.parse_args(argv)
    if args.rows < 1:
        print("--rows: give a positive number of events", file=sys.stderr)
        return 2
    from podtax_analyzer.store import Store

    n = 200 if args.quick else args.rows
    counter = iter(range(0, 10**9, n))
    with tempfile.TemporaryDirectory(prefix="podtax-bench-") as tmp:
        stores = {k: Store(Path(tmp) / f"{k}.duckdb") for k in ("facts", "placements", "results")}
        makers: dict[str, Callable[[int, int], list]] = {"facts": _facts, "placements": _placements,
                                                         "results": _results}
        for kind, store in stores.items():  # warm-up: imports, the first statement of each table
            store.write_batch(makers[kind](10, 10**9 + next(counter)))
        measures = {kind: (lambda kind=kind: _timed(stores[kind], makers[kind](n, next(counter))))
                    for kind in stores}
        figures = interleave(measures, 3)
        load = loadavg()
        anchor = median(figures["results"])
        for kind, what in (("facts", "host facts"), ("placements", "placements")):
            print(line(f"{n:,} {what} in one batch (Store.write_batch)", median(figures[kind]), "rows/s",
                       f"{n:,} results, runs + metrics", anchor, load))
            print(f"  {what} {runs(figures[kind])} rows/s, results {runs(figures['results'])} rows/s")
        for store in stores.values():
            store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
