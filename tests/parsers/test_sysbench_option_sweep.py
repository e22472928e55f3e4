"""sysbench 1.0.20 runs with options not yet in the corpus (this project's Debian 12 VM, sweep hB): each was read
right, and each figure read must stay the one the log prints."""

from __future__ import annotations

import pytest

from tests.parsers.test_found_captures import parse

CPU = ("events_per_second", "total_time", "events", "latency_min", "latency_avg", "latency_max")


@pytest.mark.parametrize(("name", "tool", "expected"), [
    # `--percentile=0`: `percentile stats:               disabled` in place of the percentile
    ("sysbench-1.0.20-cpu-percentile-0.log", "sysbench-cpu",
     {"events_per_second": 32411.13, "total_time": 1.0002, "events": 32461, "latency_min": 0.03,
      "latency_avg": 0.03, "latency_max": 0.4}),
    # `--percentile=1`: `          1th percentile:` (the label padded to 3 digits)
    ("sysbench-1.0.20-cpu-percentile-1.log", None,
     {"events_per_second": 32815.8, "total_time": 1.0001, "events": 32855, "latency_min": 0.03,
      "latency_avg": 0.03, "latency_max": 2.01, "latency_p1": 0.03}),
    # `--histogram --events=3000 --time=0 --threads=2`: the histogram table before `CPU speed:`
    ("sysbench-1.0.20-cpu-histogram-events-2t.log", "sysbench-cpu",
     {"events_per_second": 17110.55, "total_time": 0.1744, "events": 3000, "latency_min": 0.11,
      "latency_avg": 0.11, "latency_max": 3.03, "latency_p95": 0.12}),
    # `--verbosity=5`: `DEBUG: Worker thread (#0) started`, `Time limit exceeded, exiting...`, `Done.`
    ("sysbench-1.0.20-cpu-verbosity-5.log", None,
     {"events_per_second": 26323.91, "total_time": 1.0001, "events": 26357, "latency_min": 0.03,
      "latency_avg": 0.04, "latency_max": 15.48, "latency_p95": 0.03}),
    # `memory --memory-total-size=100G --time=2 --report-interval=1`: `[ 1s ] 4571.39 MiB/sec` is not the result
    ("sysbench-1.0.20-memory-report-interval.log", "sysbench-memory",
     {"mib_per_second": 5465.68, "mib_transferred": 10943.64, "operations_per_second": 5596853.16,
      "operations": 11206285, "total_time": 2.0003, "events": 11206285, "latency_min": 0.0, "latency_avg": 0.0,
      "latency_max": 11.39, "latency_p95": 0.0}),
])
def test_figures_equal_the_printed_ones(name: str, tool: str | None, expected: dict[str, float]) -> None:
    parsed = parse(name, tool)
    assert parsed.values() == expected
    assert not parsed.flags


def test_a_rate_with_report_interval_queue_lines_is_flagged_as_capped() -> None:
    """`--rate=500 --report-interval=1 --threads=2`: `[ 1s ] queue length: 0 concurrency: 0` rows, 483.36 events/s."""
    parsed = parse("sysbench-1.0.20-cpu-rate-report-interval.log")
    assert {k: parsed.values()[k] for k in CPU} == {"events_per_second": 483.36, "total_time": 2.0016,
                                                     "events": 968, "latency_min": 0.03, "latency_avg": 0.04,
                                                     "latency_max": 0.59}
    assert any(f.startswith("PARAM_MISMATCH: rate:") and "500/sec" in f for f in parsed.flags)
