"""Parser throughput against its limit: logs parsed per second on one core over the corpus mix.

Run as `python bench/bench_parsers.py [--quick]`. Prints figures only (no assertions).
Each corpus log is parsed the way the parser service would (successes and expected failures alike),
the tool named as each run names its template; a second line lets the tool be recognized first, as
`podtax parse` without --tool does. The anchor is a naive extraction of each log's headline number
with one compiled regex per tool over the whole log, keeping the last match as
`grep PATTERN | tail -1` would (no checks, no other metrics): the upper bound of a parser in Python
that reads the whole log. Both are measured interleaved over the same logs, three times each; the
medians and podtax/naive are printed with the load average. Targets: >= 20,000 logs/s and >= 0.5x.
Rates are logs per CPU second of this process (time.process_time), both sides alike: the work is
single-threaded and CPU-bound, and on a shared machine wall time also counts the time spent waiting
for a core (at a load of 6 on 2 cores, runs of the same code gave 0.13x to 0.25x by wall time).
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from anchor import interleave, line, loadavg, median, rate, runs
from podtax.oneline_args import OneLineParser
from podtax.parsers import ParseFailure, parse_text
from podtax.parsers.base import make_metric

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "corpus"
HELPERS = {"README.md", "COMMANDS.tsv", "output", "version", "version-stdout", "version-stderr"}
# The headline number of each tool, one regex each (the naive anchor).
NAIVE = {
    "sysbench": re.compile(r"events per second:\s*([\d.]+)|MiB transferred \(([\d.]+)"),
    "stress-ng": re.compile(r"\] (?:cpu|\w+)\s+(\d+)\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+([\d.]+)"),
    "hdparm": re.compile(r"=\s*([\d.]+) MB/sec"),
    "fio": re.compile(r"IOPS=([\d.]+k?)|\"iops\"\s*:\s*([\d.]+)"),
    "other": re.compile(r"([\d.]+)"),
}
Mix = list[tuple[str, str | None, str]]


def cpu_rate(work: Callable[[], int], seconds: float) -> float:
    """Logs per CPU second of this process (see the module's docstring)."""
    return rate(work, seconds, time.process_time)


def corpus_mix() -> Mix:
    """(tool-label, tool hint, text) for every log in the corpus."""
    mix = []
    for path in sorted(p for p in CORPUS.rglob("*") if p.is_file()):
        if path.name in HELPERS or path.name.endswith("-version.txt"):
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        if not text.strip():
            continue
        rel = path.relative_to(CORPUS).as_posix()
        hint = "sysbench-cpu" if "container-benchmarks" in rel else "hdparm" if "raspberry" in rel else None
        label = next((t for t in ("sysbench", "stress-ng", "hdparm", "fio")
                      if t.replace("-", "") in rel.replace("-", "") or t in (hint or "")), "other")
        mix.append((label, hint, text))
    return mix


def podtax_pass(mix: Mix) -> int:
    """The tool is known, as in the parser service (each run names its template) and as the naive
    extraction knows it."""
    for label, hint, text in mix:
        try:  # noqa: SIM105 - faster than contextlib.suppress in the timed loop
            parse_text(text, hint or (label if label != "other" else None))
        except ParseFailure:
            pass
    return len(mix)


def autodetect_pass(mix: Mix) -> int:
    """`podtax parse FILE` without --tool: the tool is recognized first."""
    for _label, hint, text in mix:
        try:  # noqa: SIM105 - faster than contextlib.suppress in the timed loop
            parse_text(text, hint)
        except ParseFailure:
            pass
    return len(mix)


def naive_pass(mix: Mix) -> int:
    for label, _hint, text in mix:
        found = NAIVE[label].findall(text)  # the whole log, last match: `grep ... | tail -1`
        if found:
            last = found[-1]
            float((next((g for g in last if g), "0") if isinstance(last, tuple) else last).rstrip("k") or 0)
    return len(mix)


def metric_count(mix: Mix) -> int:
    """How many Metric objects one podtax pass over the mix returns."""
    count = 0
    for label, hint, text in mix:
        with contextlib.suppress(ParseFailure):
            count += len(parse_text(text, hint or (label if label != "other" else None)).metrics)
    return count


def metrics_pass(count: int, logs: int) -> int:
    """Only the output: `count` Metric objects (pydantic models) built with the parsers' cheapest
    constructor, no reading at all; returns `logs` so its rate reads as logs/s."""
    for i in range(count):
        make_metric("m", float(i), "s", True)
    return logs


def compare(mix: Mix, seconds: float, repeats: int, ours: Callable[[Mix], int] = podtax_pass,
            ) -> tuple[list[float], list[float], str]:
    figures = interleave({"podtax": lambda: cpu_rate(lambda: ours(mix), seconds),
                          "naive": lambda: cpu_rate(lambda: naive_pass(mix), seconds)}, repeats)
    return figures["podtax"], figures["naive"], loadavg()


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="shorter passes (about 5 s in all)")
    args = ap.parse_args(argv)
    seconds = 0.3 if args.quick else 1.0
    mix = corpus_mix()
    podtax_pass(mix)  # warm-up (caches, imports)
    naive_pass(mix)
    ours, naive, load = compare(mix, seconds, 3)
    print(line(f"parsers, corpus mix of {len(mix)} logs, one core", median(ours), "logs/s",
               "naive one-regex extraction", median(naive), load))
    print(f"  podtax {runs(ours)}, naive {runs(naive)}; targets >= 20,000 logs/s and >= 0.5x")
    count = metric_count(mix)
    figures = interleave({"metrics": lambda: cpu_rate(lambda: metrics_pass(count, len(mix)), seconds / 2),
                          "naive": lambda: cpu_rate(lambda: naive_pass(mix), seconds / 2)}, 3)
    print("  " + line(f"ceiling: building the {count} Metric objects alone (no reading)", median(figures["metrics"]),
                      "logs/s", "naive", median(figures["naive"]), loadavg()))
    ours, naive, load = compare(mix, seconds / 2, 3, autodetect_pass)
    print("  " + line("tool recognized first (podtax parse without --tool)", median(ours), "logs/s", "naive",
                      median(naive), load))
    small = [item for item in mix if len(item[2]) < 2048]
    ours, naive, load = compare(small, seconds / 2, 3)
    print("  " + line(f"single-run logs under 2 KiB ({len(small)})", median(ours), "logs/s", "naive",
                      median(naive), load))
    by_tool: dict[str, Mix] = defaultdict(list)
    for item in mix:
        by_tool[item[0]].append(item)
    for label, items in sorted(by_tool.items()):
        ours, naive, load = compare(items, seconds / 4, 3)
        size = sum(len(i[2]) for i in items) / len(items)
        print("  " + line(f"{label:<10} ({len(items)} logs, mean {size / 1024:.1f} KiB)", median(ours), "logs/s",
                          "naive", median(naive), load))
    return 0


if __name__ == "__main__":
    sys.exit(main())
