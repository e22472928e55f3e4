"""Benchmark: the full comparison table of a campaign with 1,000,000 results over 500 cells.

Builds a DuckDB file in a temporary directory (runs generated in SQL, values from numpy: per cell a
lognormal host side and a pod side with a cell-specific true ratio), then times
``compare_campaign`` end to end (grouped query, bootstrap, rank tests, flags, summary).
Beside it, interleaved, the anchor: one DuckDB SQL pass computing the median of each cell's sides
over the same data, and the same comparison with its cells analyzed in one process
(PODTAX_ANALYZER_WORKERS=1; the default spreads them over the idle cores, podtax_analyzer.cell_pool).
Prints the medians of three runs each, the ratio and the load average; no assertions. The first
call, which also starts multiprocessing's fork server, is timed apart. Targets: < 2.5 s and <= 8x
the SQL pass.

    .venv/bin/python bench/bench_comparisons.py [--results N] [--cells C] [--quick]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from importlib.resources import files
from pathlib import Path

import numpy as np
from anchor import interleave, line, loadavg, median, runs
from podtax.oneline_args import OneLineParser
from podtax_analyzer import duckcon
from podtax_analyzer.cell_pool import WORKERS_ENV, workers
from podtax_analyzer.comparisons import compare_campaign


def schema_sql() -> str:
    return (files("podtax_analyzer") / "schema.sql").read_text()


def build(path: Path, n_results: int, n_cells: int, seed: int = 0) -> None:
    con = duckcon.connect(path)
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


SQL_MEDIANS = """
    SELECT r.node, r.test, r.params_key, m.name, r.env, median(m.value), count(*)
    FROM runs r JOIN metrics m ON m.run_id = r.run_id
    WHERE r.campaign = $campaign AND r.status = 'ok'
    GROUP BY ALL"""


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=int, default=1_000_000)
    ap.add_argument("--cells", type=int, default=500)
    ap.add_argument("--quick", action="store_true", help="200,000 results over 100 cells")
    args = ap.parse_args(argv)
    if args.quick:
        args.results, args.cells = 200_000, 100
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.duckdb"
        t0 = time.perf_counter()
        build(path, args.results, args.cells)
        t1 = time.perf_counter()
        con = duckcon.connect(path, read_only=True)  # the analyzer's plan
        n = con.execute("SELECT count(*) FROM metrics").fetchone()[0]
        reports = []

        def full() -> float:
            start = time.perf_counter()
            reports.append(compare_campaign(con, "bench"))
            return time.perf_counter() - start

        def serial() -> float:
            os.environ[WORKERS_ENV] = "1"
            try:
                return full()
            finally:
                del os.environ[WORKERS_ENV]

        def sql() -> float:
            start = time.perf_counter()
            con.execute(SQL_MEDIANS, {"campaign": "bench"}).fetchall()
            return time.perf_counter() - start

        first = full()
        figures = interleave({"full": full, "serial": serial, "sql": sql}, 3)
        load = loadavg()
        report = reports[-1]
        verdicts: dict[str, int] = {}
        for c in report.cells:
            verdicts[c.verdict] = verdicts.get(c.verdict, 0) + 1
        print(f"results: {n:,} over {len(report.cells)} cells ({args.cells} requested), "
              f"{len(os.sched_getaffinity(0))} cpus, {workers()} analysis workers now; build time {t1 - t0:.2f} s; "
              f"first call {first:.2f} s")
        full_s, sql_s = median(figures["full"]), median(figures["sql"])
        print(line("comparison (compare_campaign, end to end)", full_s, "s", "DuckDB SQL median per cell",
                   sql_s, load, higher_is_better=False))
        print(f"  full {runs(figures['full'])}, SQL {runs(figures['sql'])}; full/SQL = {full_s / sql_s:.1f} "
              f"(targets < 2.5 s at 1M results / 500 cells and <= 8x the SQL pass)")
        serial_s = median(figures["serial"])
        print(f"  cells analyzed in one process: {serial_s:.3g} s {runs(figures['serial'])}; "
              f"serial/SQL = {serial_s / sql_s:.1f}")
        print(f"  verdicts: {verdicts}; summary sentences: {len(report.summary)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
