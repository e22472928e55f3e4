"""Hostile input shapes against a typical log of the same size: microseconds of CPU per KiB at 10 KiB, 100 KiB and
the largest log the parser service takes (safefiles.MAX_LOG_BYTES), median of 3, interleaved with the anchor.

Run as `python bench/bench_hostile_parsers.py [--quick]` (--quick: 10 KiB and 100 KiB only). Prints figures only.
The anchor is a typical log of the tool grown to the same size with its own chatter (stress-ng's per-instance info
lines, sysbench's WARNING lines before its report): what a parser must read in linear time. A shape read in linear
time keeps its µs/KiB as the size grows; the ratio is shape/anchor (lower-is-better, so >= 1 reads 'as fast').
Shapes: those tests/parsers/test_hostile_shapes.py asserts the outcome of (a quadratic or worse read before).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path

from anchor import interleave, line, loadavg, median, runs
from podtax.oneline_args import OneLineParser
from podtax.parsers import ParseFailure, parse_text, stressng_names
from podtax.safefiles import MAX_LOG_BYTES

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "corpus" / "debian12-x86_64"
STRESS = (CORPUS / "stress-ng-cpu-1-times.log").read_text()
SYSBENCH = (CORPUS / "sysbench-cpu-prime100000-1t.log").read_text()
FIO = (CORPUS / "fio-randread-4k-numjobs2-normal.txt").read_text()
FIO_HEAD = FIO[:FIO.index("Run status group 0")]  # the two jobs' reports


def fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def counted(head: str, unit: str, size: int) -> str:
    """`head`, then `unit` formatted with 0, 1, 2... (distinct lines) up to `size` characters, then a blank line."""
    out, k, total = [head], 0, len(head)
    while total < size:
        out.append(unit.format(k))
        total, k = total + len(out[-1]), k + 1
    return "".join(out) + "\n"


def grown(report: str, chatter: str, size: int) -> str:
    """`report` after chatter lines, `size` characters in all."""
    return fill(chatter, size - len(report)).rsplit("\n", 1)[0] + "\n" + report


ANCHORS: dict[str, Callable[[int], str]] = {
    "stress-ng": lambda n: grown(STRESS, "stress-ng: info:  [7119] stream: memory rate: 1234.56 MB read/sec\n", n),
    "sysbench": lambda n: grown(SYSBENCH, "WARNING: the --test option is deprecated. You can pass a script name\n", n),
}
# a stress-ng --yaml report's head and a row's column lines in stress-ng's order (stressng_yaml._COLUMN_LINES)
YAML_HEAD = "---\nsystem-info:\n      stress-ng-version: 0.15.06\nmetrics:\n"
COLUMNS = ("      bogo-ops: 478\n      bogo-ops-per-second-usr-sys-time: 701.55\n"
           "      bogo-ops-per-second-real-time: 466.70\n      wall-clock-time: 1.02\n"
           "      user-time: 0.67\n      system-time: 0.00\n"
           "      cpu-usage-per-instance: 66.52\n      max-rss: 2548\n")
# name -> (tool passed to parse_text, None: detected; anchor; the shape at a size)
SHAPES: dict[str, tuple[str | None, str, Callable[[int], str]]] = {
    "hdparm device lines then blank lines (detected)": (None, "sysbench", lambda n: "/dev/x y\n" * 17 + "\n" * n),
    "hdparm device line of trailing blanks (detected)": (None, "sysbench",
                                                         lambda n: "/dev/x y\n" * 17 + "/dev/x:" + " " * n + "y"),
    "sysbench banners behind text on one line": ("sysbench", "sysbench", lambda n: fill("a\tsysbench 1.0 (x", n)),
    "sysbench refused runs among runs": ("sysbench", "sysbench", lambda n: fill(
        "sysbench 1.0.20 (x)\nInvalid value for x\nsysbench 1.0.20 (x)\nThreads started!\n", n)),
    "stress-ng prefixes on one line": ("stress-ng", "stress-ng", lambda n: fill("stress-ng: ", n)),
    "fio job head line of `a-a-a-...`": ("fio", "sysbench",
                                         lambda n: "fio-3.33\nj: (g=0): rw=read, bs=" + fill("a-", n)),
    # fio text: each status group's block was read to the next blank line (none: the end), jobs summed per line
    "fio status groups without blank lines": ("fio", "sysbench", lambda n: counted(
        FIO_HEAD, "Run status group {0} (all jobs):\n   READ: bw=1MiB/s (1MB/s), io=1KiB (1kB), run=1-1msec\n", n)),
    # fio text: each job's name counted among all the jobs' names
    "fio jobs of one name": ("fio", "sysbench", lambda n: counted(
        "fio-3.33\n", "n: (groupid=0, jobs=1): err= 0: pid={0}: x\n  read: IOPS=1, BW=1KiB/s (1kB/s)(1KiB/1msec)\n",
        n)),
    # stress-ng --yaml: each row's column lines matched as literals, then its other lines (stressng_yaml). Each misc
    # key is new, looked up among stress-ng's description templates; yaml_misc_metric's cache is cleared before
    # each measurement, so every figure is the uncached cost. A key cut at 39 characters (stress-ng's limit) may end
    # inside any template's last words: the costliest shape
    "stress-ng --yaml rows": ("stress-ng", "stress-ng",
                              lambda n: counted(YAML_HEAD, "    - stressor: s{0}\n" + COLUMNS, n) + "...\n"),
    "stress-ng --yaml row of misc lines": ("stress-ng", "stress-ng", lambda n: counted(
        YAML_HEAD + "    - stressor: cpu\n" + COLUMNS, "      m{0}-per-sec: 12.5\n", n) + "...\n"),
    "stress-ng --yaml row of cut misc keys": ("stress-ng", "stress-ng", lambda n: counted(
        YAML_HEAD + "    - stressor: cpu\n" + COLUMNS, "      q{0:0>36}-x: 12.5\n",
        n) + "...\n"),
}


def us_per_kib(text: str, tool: str | None) -> Callable[[], float]:
    def measure() -> float:
        stressng_names.yaml_misc_metric.cache_clear()
        start = time.process_time()
        with contextlib.suppress(ParseFailure):
            parse_text(text, tool)
        return (time.process_time() - start) * 1e6 / (len(text) / 1024)
    return measure


def main() -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 KiB and 100 KiB only")
    args = parser.parse_args()
    sizes = [10_240, 102_400] + ([] if args.quick else [MAX_LOG_BYTES])
    for name, (tool, anchor, make) in SHAPES.items():
        for size in sizes:
            typical = ANCHORS[anchor](size)
            figures = interleave({"shape": us_per_kib(make(size), tool), "anchor": us_per_kib(typical, anchor)})
            print(line(f"{name}, {size // 1024:,} KiB", median(figures["shape"]), "µs/KiB",
                       f"typical {anchor} log", median(figures["anchor"]), loadavg(), higher_is_better=False))
            print(f"  shape {runs(figures['shape'])}, anchor {runs(figures['anchor'])}", flush=True)


if __name__ == "__main__":
    main()
