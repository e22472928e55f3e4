"""`podtax import` throughput: manifest rows checked and turned into publishable events per second,
against the floor of that work, parsing the same logs with parsers.parse_run alone.

Run as `python bench/bench_import.py [--quick] [--rows N]`. Prints figures only (no assertions).
A manifest of N rows (default 20,000; 4,000 with --quick) is written to a temporary folder beside
three recorded logs from tests/corpus (sysbench cpu, sysbench memory, stress-ng), each row its own
node. The import path is everything `podtax import` does before and while publishing, without the
NATS server: read_manifest, the all-or-nothing check that every event fits the server's max payload
(1 MiB), then each event built and encoded as the bus encodes it for publishing. (The figure before
check_events, each event built twice, came from this script as of commit a09da3d run on d6e01e7's
parent.) The anchor is parsers.parse_run over the same N logs, texts already in memory: one parse per
row, which the import cannot avoid. Both run interleaved three times; medians, the ratio
import/anchor and the load average are printed. Then memory: the peak RSS of `podtax import --dry-run`
over the manifest, each a process of its own, beside the same command over one row (its fixed cost),
and the bytes a row that leaves.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from anchor import interleave, line, loadavg, median, runs, timed
from podtax import events, parsers
from podtax.cli import importer
from podtax.oneline_args import OneLineParser

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "corpus"
LOGS = [  # name in the manifest folder, corpus file, test, params
    ("cpu.log", "debian12-x86_64/sysbench-cpu-prime100000-1t.log", "sysbench-cpu",
     "threads=1 max_prime=100000 events=200 time=0"),
    ("memory.log", "debian12-x86_64/sysbench-memory-write-1t.log", "sysbench-memory", "threads=1"),
    ("stress.log", "debian12-x86_64/stress-ng-cpu-1-ops3000-brief.log", "stress-ng-cpu", "threads=1 ops=3000"),
]
LIMIT = 1_048_576  # nats-server's default max_payload


def write_manifest(folder: Path, count: int) -> Path:
    for name, source, _, _ in LOGS:
        shutil.copyfile(CORPUS / source, folder / name)
    lines = [",".join(importer.HEADER)]
    for i in range(count):
        name, _, test, params = LOGS[i % len(LOGS)]
        lines.append(f"{name},node-{i},host,{test},{params},2024-03-01T10:00:00Z,")
    manifest = folder / "manifest.csv"
    manifest.write_text("\n".join(lines) + "\n")
    return manifest


def import_path(manifest: Path, campaign: str = "bench") -> int:
    """What `podtax import` does for every row, minus the network; returns the bytes it would publish."""
    rows = importer.read_manifest(manifest)
    total = 0
    seconds = importer.check_events(rows, campaign, LIMIT)
    for i, row in enumerate(rows):
        total += len(events.encode(importer.publishable_event(row, campaign, i, seconds[i], LIMIT)))
    return total


def parse_only(texts: list[tuple[str, str, dict]]) -> int:
    """The anchor: one parse_run per row, the log already read."""
    n = 0
    for test, text, params in texts:
        with contextlib.suppress(parsers.ParseFailure):
            parsers.parse_run(test, text, requested=params)
        n += 1
    return n


_PEAK = ("import resource, sys; from podtax.cli.main import main; code = main(sys.argv[1:]); "
         "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss); sys.exit(code)")


def dry_run_peak_mb(manifest: Path) -> float:
    """Peak RSS (MB) of `podtax import MANIFEST --dry-run` in a process of its own: every row checked,
    every log read and parsed, nothing published."""
    argv = [sys.executable, "-c", _PEAK, "import", str(manifest), "--campaign", "bench", "--dry-run"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"the dry run failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")
    return int(done.stdout.strip().splitlines()[-1]) / 1024


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="4,000 rows (about 30 s in all)")
    ap.add_argument("--rows", type=int, help="rows in the manifest (default 20,000; 4,000 with --quick)")
    args = ap.parse_args(argv)
    count = args.rows or (4_000 if args.quick else 20_000)
    with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp:
        manifest = write_manifest(Path(tmp), count)
        rows = importer.read_manifest(manifest)
        texts = [(r.test, Path(r.path).read_text(), r.params) for r in rows]
        figures = interleave({"import": lambda: count / timed(lambda: import_path(manifest)),
                              "anchor": lambda: count / timed(lambda: parse_only(texts))})
        load = loadavg()
        print(f"{count:,} rows, {len(LOGS)} distinct logs, max payload {LIMIT:,} bytes; median of 3")
        print(line("import: manifest check + size check + events built and encoded", median(figures["import"]),
                   "rows/s", "parse_run alone", median(figures["anchor"]), load))
        print(f"  import {runs(figures['import'])} rows/s; anchor {runs(figures['anchor'])} rows/s")
        (Path(tmp) / "one").mkdir()
        one = write_manifest(Path(tmp) / "one", 1)
        memory = interleave({"rows": lambda: dry_run_peak_mb(manifest), "one": lambda: dry_run_peak_mb(one)})
        rows_mb, one_mb = median(memory["rows"]), median(memory["one"])
        print(line(f"memory: peak RSS of `podtax import --dry-run` over the {count:,} rows", rows_mb, "MB",
                   "the same command over one row", one_mb, loadavg(), higher_is_better=False))
        print(f"  {count:,} rows {runs(memory['rows'])}, one row {runs(memory['one'])}: "
              f"{(rows_mb - one_mb) * 2**20 / max(count - 1, 1):,.0f} bytes a row")
    return 0


if __name__ == "__main__":
    sys.exit(main())
