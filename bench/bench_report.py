"""Benchmark: the shareable files of one campaign against the comparison table they are built on.

Builds a campaign in a temporary DuckDB file (bench_comparisons.build: lognormal host and pod sides,
a cell-specific true ratio), then times, each median of --repeat runs:
  anchor   compare_campaign (the JSON report's work),
  html     load_report_data + render_html (the /report page),
  xlsx     load_report_data + write_workbook,
  parquet  load_report_data + export_zip(parquet),
  csv      load_report_data + export_zip(csv) (text columns made printable and guarded against formulas),
and prints each with its ratio to the anchor, the page and file sizes, and the load average.
Prints figures; no assertions.

    .venv/bin/python bench/bench_report.py [--results N] [--cells C] [--repeat R]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_comparisons import build  # noqa: E402
from podtax.oneline_args import OneLineParser
from podtax_analyzer import duckcon  # noqa: E402
from podtax_analyzer.comparisons import compare_campaign  # noqa: E402
from podtax_analyzer.exports import export_zip  # noqa: E402
from podtax_analyzer.html_report import render_html  # noqa: E402
from podtax_analyzer.report_data import load_report_data  # noqa: E402
from podtax_analyzer.workbook import write_workbook  # noqa: E402


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> None:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=int, default=100_000)
    ap.add_argument("--cells", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.duckdb"
        build(path, args.results, args.cells)
        con = duckcon.connect(path, read_only=True)  # the analyzer's plan
        load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else ["?"] * 3
        anchor, report = timed(lambda: compare_campaign(con, "bench"), args.repeat)
        figures = {
            "html": timed(lambda: render_html(load_report_data(con, "bench")), args.repeat),
            "xlsx": timed(lambda: write_workbook(load_report_data(con, "bench")), args.repeat),
            "parquet": timed(lambda: export_zip(con, load_report_data(con, "bench").report, "parquet"), args.repeat),
            "csv": timed(lambda: export_zip(con, load_report_data(con, "bench").report, "csv"), args.repeat),
        }
        load_after = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else ["?"] * 3
        print(f"campaign: {args.results:,} results over {len(report.cells)} cells; median of {args.repeat} runs")
        print(f"load average before: {' '.join(load)}; after: {' '.join(load_after)}")
        print(f"anchor  compare_campaign     {anchor:7.2f} s")
        for name, (secs, out) in figures.items():
            size = len(out.encode()) if isinstance(out, str) else len(out)
            print(f"{name:7s} {'':20s} {secs:7.2f} s  x{secs / anchor:.2f} of the anchor  ({size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
