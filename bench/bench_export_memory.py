"""The exports' peak memory: peak RSS of a fresh process making a campaign's export.zip or HTML report.

Run as `python bench/bench_export_memory.py [--results N] [--cells C] [--quick]`. Prints figures only.
Builds a campaign of N results over C cells in a temporary DuckDB file (bench_comparisons.build), then
runs each case in a fresh process and reads its peak RSS (VmHWM: ru_maxrss would carry this process's
own peak across the fork):
  stream      compare_campaign + exports.zip_file, read CHUNK at a time (what the API sends),
  bytes       compare_campaign + exports.export_zip, the whole zip held as bytes (the API's body before),
  comparison  compare_campaign alone (what the export needs before its files),
  html        load_report_data + html_report.html_file, read CHUNK at a time (the /report page as sent),
  html-str    load_report_data + render_html, encoded (the page as one string and its bytes, as sent before),
  data        load_report_data alone (what the page needs before it is written),
  connect     importing and connecting only (the floor).
Interleaved, three times each; medians, stream/bytes, html/html-str and the load average are printed.
The default campaign has 20,000 cells, 50 results each, as the HTML report's figures came from. --quick: 100,000
results over 2,000 cells, and only stream, bytes, html, html-str and connect, twice each (it took 3.5-9 minutes).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from anchor import interleave, line, loadavg, median, proc_peak_rss_mb, runs
from podtax.oneline_args import OneLineParser

CASES = ("stream", "bytes", "comparison", "html", "html-str", "data", "connect")
QUICK = ("stream", "bytes", "html", "html-str", "connect")  # the two ratios printed and the floor


def child(db: Path, case: str) -> str:
    from podtax_analyzer import duckcon
    from podtax_analyzer.comparisons import compare_campaign
    from podtax_analyzer.exports import chunks, export_zip, zip_file
    from podtax_analyzer.html_report import html_file, render_html
    from podtax_analyzer.report_data import load_report_data

    con = duckcon.connect(db, read_only=True)
    size = 0
    if case == "stream":
        out, _ = zip_file(con, compare_campaign(con, "bench"), "csv")
        with out:
            size = sum(len(chunk) for chunk in chunks(out))
    elif case == "bytes":
        size = len(export_zip(con, compare_campaign(con, "bench"), "csv"))
    elif case == "comparison":
        compare_campaign(con, "bench")
    elif case == "html":
        out, _ = html_file(load_report_data(con, "bench"))
        with out:
            size = sum(len(chunk) for chunk in chunks(out))
    elif case == "html-str":
        size = len(render_html(load_report_data(con, "bench")).encode())
    elif case == "data":
        load_report_data(con, "bench")
    return f"{proc_peak_rss_mb(os.getpid()):.1f} {size}"


def measure(db: Path, case: str, sizes: dict[str, int]) -> float:
    done = subprocess.run([sys.executable, __file__, "--child", str(db), case], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).parent)
    peak, size = done.stdout.split()
    sizes[case] = int(size)
    return float(peak)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=int, default=1_000_000)
    ap.add_argument("--cells", type=int, default=20_000)
    ap.add_argument("--quick", action="store_true",
                    help="100,000 results over 2,000 cells; stream, bytes, html, html-str and connect, twice each")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(child(Path(args.child[0]), args.child[1]))
        return 0
    cases, rounds = CASES, 3
    if args.quick:
        args.results, args.cells = 100_000, 2_000
        cases, rounds = QUICK, 2
    from bench_comparisons import build

    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="podtax-bench-") as tmp:
        db = Path(tmp) / "bench.duckdb"
        build(db, args.results, args.cells)
        peaks = interleave({case: (lambda case=case: measure(db, case, sizes)) for case in cases}, rounds)
    load = loadavg()
    what = f"{args.results:,} results over {args.cells:,} cells"
    print(line(f"CSV export.zip of {what} ({sizes['stream']:,} bytes): peak RSS, streamed", median(peaks["stream"]),
               "MB", "held as bytes", median(peaks["bytes"]), load, higher_is_better=False))
    print(line(f"HTML report of {what} ({sizes['html']:,} bytes): peak RSS, streamed", median(peaks["html"]), "MB",
               "one string", median(peaks["html-str"]), load, higher_is_better=False))
    print("  " + "; ".join(f"{case} {runs(peaks[case])} MB" for case in cases))
    return 0


if __name__ == "__main__":
    sys.exit(main())
