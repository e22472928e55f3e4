"""Benchmark: the full comparison table of a campaign with 1,000,000 results over 500 cells.

Builds a DuckDB file in a temporary directory (runs generated in SQL, values from numpy: per cell a
lognormal host side and a pod side with a cell-specific true ratio), then times
``compare_campaign`` end to end (grouped query, bootstrap, rank tests, flags, summary).
Prints figures; no assertions. Target: under 10 s on 2 cores.

    .venv/bin/python bench/bench_comparisons.py [--results N] [--cells C]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from importlib.resources import files
from pathlib import Path

import duckdb
import numpy as np
from podtax_analyzer.comparisons import compare_campaign


def schema_sql() -> str:
    return (files("podtax_analyzer") / "schema.sql").read_text()


def build(path: Path, n_results: int, n_cells: int, seed: int = 0) -> None:
    con = duckdb.connect(str(path))
    con.execute(schema_sql())
    con.execute("""
        INSERT INTO runs (run_id, event_id, campaign, cluster, node, env, test, params, params_key, attempt,
                          sequence, status, tool, tool_version, flags, started_at, ended_at, nr_throttled,
                          stored_at)
        SELECT 'r' || i, 'e' || i, 'bench', 'local', 'node-' || (i % $cells) % 50,
               CASE WHEN (i // $cells) % 2 = 0 THEN 'host' ELSE 'kubernetes' END,
               'sysbench-cpu', '{}', 'threads=' || ((i % $cells) // 50 + 1), 1, (i // $cells)::INTEGER, 'ok',
               'sysbench', '1.0.20', []::VARCHAR[],
               TIMESTAMPTZ '2025-01-06 08:00:00+00' + to_seconds(30 * (i // $cells)),
               TIMESTAMPTZ '2025-01-06 08:00:10+00' + to_seconds(30 * (i // $cells)),
               CASE WHEN (i // $cells) % 2 = 1 THEN 0 END, now()
        FROM range($n) t(i)""", {"n": n_results, "cells": n_cells})
    rng = np.random.default_rng(seed)
    i = np.arange(n_results)
    cell = i % n_cells
    pod = (i // n_cells) % 2 == 1
    truth = rng.uniform(0.94, 1.02, n_cells)
    values = 1000.0 * np.where(pod, truth[cell], 1.0) * np.exp(rng.normal(0, 0.01, n_results))
    con.execute("""
        INSERT INTO metrics
        SELECT 'r' || (range - 1), 'events_per_sec', v, 'events/s', true
        FROM (SELECT unnest($1) AS v, unnest(range(1, $2 + 1)) AS range)""", [values.tolist(), n_results])
    con.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=int, default=1_000_000)
    ap.add_argument("--cells", type=int, default=500)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.duckdb"
        t0 = time.perf_counter()
        build(path, args.results, args.cells)
        t1 = time.perf_counter()
        con = duckdb.connect(str(path), read_only=True)
        n = con.execute("SELECT count(*) FROM metrics").fetchone()[0]
        t2 = time.perf_counter()
        report = compare_campaign(con, "bench")
        t3 = time.perf_counter()
        verdicts: dict[str, int] = {}
        for c in report.cells:
            verdicts[c.verdict] = verdicts.get(c.verdict, 0) + 1
        print(f"cpus available: {len(os.sched_getaffinity(0))}")
        print(f"results: {n:,} over {len(report.cells)} cells ({args.cells} requested)")
        print(f"build time: {t1 - t0:.2f} s")
        print(f"comparison time (compare_campaign, end to end): {t3 - t2:.2f} s  (target < 10 s)")
        print(f"verdicts: {verdicts}; summary sentences: {len(report.summary)}")


if __name__ == "__main__":
    main()
