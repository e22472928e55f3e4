"""Benchmark: `podtax campaign submit`'s check for an earlier campaign of its name on a large store.

The store of bench_comparisons (1,000,000 results over 500 cells, runs generated in SQL), its runs spread
over 100 campaigns of 10,000 runs. Timed through the real analyzer app (FastAPI TestClient, in process):
the list of every campaign (GET /api/campaigns, the check's former source: it aggregates over every run and
joins metrics) against the lookup of one (GET /api/campaigns/{campaign}) for a name the store holds (200) and
for a new one (404, what a submit usually asks). Median of three, interleaved, with the load average and the
ratios; no assertions. Submit gives up on the analyzer after 10 s (podtax.cli.earlier.TIMEOUT_S).

    .venv/bin/python bench/bench_campaign_lookup.py [--results N] [--campaigns K] [--quick]
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from anchor import interleave, line, loadavg, median, runs
from bench_comparisons import build
from fastapi.testclient import TestClient
from podtax.oneline_args import OneLineParser
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store


def timed_get(client: TestClient, path: str, status: int) -> Callable[[], float]:
    def measure() -> float:
        start = time.perf_counter()
        resp = client.get(path)
        took = time.perf_counter() - start
        if resp.status_code != status:
            raise SystemExit(f"GET {path}: HTTP {resp.status_code}, expected {status}: {resp.text[:200]}")
        return took
    return measure


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=int, default=1_000_000)
    ap.add_argument("--campaigns", type=int, default=100)
    ap.add_argument("--quick", action="store_true", help="200,000 results")
    args = ap.parse_args(argv)
    if args.quick:
        args.results = 200_000
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.duckdb"
        t0 = time.perf_counter()
        build(path, args.results, 500)
        store = Store(path)
        store.cursor().execute("UPDATE runs SET campaign = 'c-' || (sequence % $k)", {"k": args.campaigns})
        build_s = time.perf_counter() - t0
        try:
            client = TestClient(create_app(store))
            measures = {"list": timed_get(client, "/api/campaigns", 200),
                        "held": timed_get(client, "/api/campaigns/c-7", 200),
                        "new": timed_get(client, "/api/campaigns/new", 404)}
            first = {name: measure() for name, measure in measures.items()}  # warm the caches alike
            figures = interleave(measures, 3)
            load = loadavg()
            held = client.get("/api/campaigns/c-7").json()
        finally:
            store.close()
    print(f"results: {args.results:,} over {args.campaigns} campaigns (c-7: {held['runs_ok']:,} ok, {held['cells']} "
          f"cells); build {build_s:.1f} s; first calls " + ", ".join(f"{k} {v:.3f} s" for k, v in first.items()))
    list_s = median(figures["list"])
    for name, what in (("new", "lookup of a new name (404)"), ("held", "lookup of a held name (200)")):
        value = median(figures[name])
        print(line(what, value, "s", "GET /api/campaigns (every campaign)", list_s, load, higher_is_better=False))
        print(f"  {name} {runs(figures[name])}, list {runs(figures['list'])}; list/{name} = {list_s / value:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
