"""Shared by the bench scripts: a figure only means something beside its limit measured in the same run.

`interleave` runs each measurement in turn (a, b, a, b, ...) so load swings hit both alike, and
`line` prints the median of the runs with the anchor's median, the ratio and the load average.
This module is imported by the bench scripts (its name does not start with `bench_`, so
`make bench` does not run it on its own).
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterable


def cases_refused(prog: str, given: list[str], cases: Iterable[str], list_them: bool) -> int | None:
    """For a bench taking case names: --list prints them (0); an unknown one is one line on stderr (2); else None."""
    if list_them:
        print("\n".join(cases))
        return 0
    if unknown := [c for c in given if c not in cases]:
        print(f"{prog}: unknown case {unknown[0]!r}; --list names them (quote names with spaces)", file=sys.stderr)
        return 2
    return None


def loadavg() -> str:
    """The 1-, 5- and 15-minute load averages, as `load 1.23 2.34 3.45`."""
    try:
        with open("/proc/loadavg") as f:
            return "load " + " ".join(f.read().split()[:3])
    except OSError:
        return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def interleave(measures: dict[str, Callable[[], float]], repeats: int = 3) -> dict[str, list[float]]:
    """Run every measurement `repeats` times, interleaved; returns each one's figures in run order."""
    figures: dict[str, list[float]] = {name: [] for name in measures}
    for _ in range(repeats):
        for name, measure in measures.items():
            figures[name].append(measure())
    return figures


def median(values: list[float]) -> float:
    return statistics.median(values)


def line(what: str, value: float, unit: str, anchor_what: str, anchor: float, load: str,
         higher_is_better: bool = True) -> str:
    """`what: 12,345 unit | anchor: 23,456 unit | ratio 0.53x | load ...` (ratio = value/anchor when
    higher is better, anchor/value when lower is better, so >= 1 always reads as 'at the anchor')."""
    ratio = (value / anchor if higher_is_better else anchor / value) if value and anchor else float("nan")
    return (f"{what}: {_fmt(value)} {unit} | anchor ({anchor_what}): {_fmt(anchor)} {unit} | "
            f"ratio {ratio:.2f}x | {load}")


def runs(values: list[float]) -> str:
    """The individual runs, as `(runs 1,234 / 1,456 / 1,345)`."""
    return "(runs " + " / ".join(_fmt(v) for v in values) + ")"


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.3g}"


def rate(work: Callable[[], int], seconds: float, clock: Callable[[], float] = time.perf_counter) -> float:
    """Items per second: call `work` (it returns how many items it did) until `seconds` have passed on
    `clock` (wall time; time.process_time for CPU-bound work in this process: items per CPU second)."""
    count, start = 0, clock()
    while True:
        count += work()
        elapsed = clock() - start
        if elapsed >= seconds:
            return count / elapsed


def timed(work: Callable[[], object]) -> float:
    """Wall-clock seconds of one call."""
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def children_cpu() -> float:
    """CPU seconds (user + system) of the waited-for child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by a live process, from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def proc_peak_rss_mb(pid: int) -> float:
    """Peak resident memory (VmHWM) of a live process, in MB."""
    with open(f"/proc/{pid}/status") as f:
        for row in f:
            if row.startswith("VmHWM:"):
                return int(row.split()[1]) / 1024
    return float("nan")


def proc_rss_mb(pid: int) -> float:
    """Current resident memory (VmRSS) of a live process, in MB."""
    with open(f"/proc/{pid}/status") as f:
        for row in f:
            if row.startswith("VmRSS:"):
                return int(row.split()[1]) / 1024
    return float("nan")


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds (user + system) of a live process's main thread and of its other threads together."""
    ticks = os.sysconf("SC_CLK_TCK")
    out = {"main thread": 0.0, "other threads": 0.0}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out["main thread" if int(task) == pid else "other threads"] += (int(fields[11]) + int(fields[12])) / ticks
    return out
