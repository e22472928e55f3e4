"""The parsers on real captures from other machines (tests/corpus-found/, sources in its README):
each gives the figures its log prints, or is refused with a reason that names what happened."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_text

CORPUS = Path(__file__).resolve().parents[1] / "corpus-found"


def parse(name: str, tool: str | None = None):  # noqa: ANN201 - a Parsed
    return parse_text((CORPUS / name).read_text(encoding="utf-8"), tool)


@pytest.mark.parametrize("tool", [None, "sysbench-cpu"])
def test_sysbench_1_1_reads_time_elapsed_as_the_total_time(tool: str | None) -> None:
    parsed = parse("sysbench-1.1-cpu-ec2.log", tool)
    assert parsed.tool_version == "1.1.0-bbee5d5"
    assert parsed.values() == {"events_per_second": 114.08, "total_time": 10.0022, "events": 1141,
                               "latency_min": 8.76, "latency_avg": 8.77, "latency_max": 8.78,
                               "latency_p95": 8.74}


def test_sysbench_1_1_memory_report() -> None:
    text = (CORPUS / "sysbench-1.1-cpu-ec2.log").read_text(encoding="utf-8")
    banner = text.split("\n", 1)[0]
    memory = banner + """
Running the test with following options:
Number of threads: 16
Running memory speed test with the following options:
  block size: 8KiB
  total size: 2048MiB
  operation: write
  scope: global
Threads started!
Total operations: 262144 (935770.17 per second)
2048.00 MiB transferred (7310.70 MiB/sec)
Throughput:
    events/s (eps):                      935770.1744
    time elapsed:                        0.2801s
    total number of events:              262144
Latency (ms):
         min:                                    0.00
         avg:                                    0.01
         max:                                    9.11
         95th percentile:                        0.02
         sum:                                 3726.24
"""
    values = parse_text(memory, "sysbench-memory").values()
    assert values["mib_per_second"] == 7310.70 and values["total_time"] == 0.2801
    cut = memory.replace("    time elapsed:                        0.2801s\n", "")
    with pytest.raises(ParseFailure) as failure:
        parse_text(cut, "sysbench-memory")
    assert failure.value.reason == "truncated" and "total time" in failure.value.detail


@pytest.mark.parametrize("name, usr_sys", [("stress-ng-journalctl.log", 1581.53),
                                           ("stress-ng-kmsg-interleaved.log", 13.02)])
def test_stress_ng_lines_behind_a_log_collectors_prefix(name: str, usr_sys: float) -> None:
    for tool in (None, "stress-ng"):
        parsed = parse(name, tool)
        assert parsed.values()["bogo_ops_per_second_usr_sys"] == usr_sys
        assert parsed.flags == ()
    assert parse("stress-ng-kmsg-interleaved.log").values()["sysfs_files_exercised_per_sec"] == 188.37


def test_a_failed_stressor_is_flagged_not_called_a_bad_argument() -> None:
    parsed = parse("stress-ng-cygwin-timestamp-failed.log", "stress-ng")
    assert parsed.values()["bogo_ops_per_second_real"] == 31888.38
    assert parsed.flags[0] == "FAILED: stress-ng reported 2 failed stressor instance(s)"
    assert "clock_settime was able to set an invalid negative time" in parsed.flags[1]


def test_a_stress_ng_line_saying_invalid_without_a_pid_is_still_a_bad_argument() -> None:
    with pytest.raises(ParseFailure) as failure:
        parse_text("stress-ng: invalid value for --cpu-load\n", "stress-ng")
    assert failure.value.reason == "bad-argument"


def test_zero_bogo_ops_is_refused_not_read_as_a_rate_of_zero() -> None:
    with pytest.raises(ParseFailure) as failure:
        parse("stress-ng-zero-bogo-ops.log", "stress-ng")
    assert failure.value.reason == "fatal"
    assert "sctp stressor completed 0 bogo ops in 60 s" in failure.value.detail


def test_a_zero_row_beside_working_rows_is_flagged() -> None:
    text = (CORPUS / "stress-ng-zero-bogo-ops.log").read_text(encoding="utf-8")
    row = "stress-ng: info:  [4148] sctp                  0     60.00      0.03      0.01         0.00           0.00\n"
    cpu = row.replace("sctp                  0", "cpu                 100")
    cpu = cpu.replace("0.00           0.00", "1.67   2.00")
    both = text.replace("hogs: 64 sctp", "hogs: 64 sctp, 1 cpu").replace(row, row + cpu)
    parsed = parse_text(both, "stress-ng")
    assert parsed.values()["cpu_bogo_ops"] == 100 and parsed.values()["sctp_bogo_ops"] == 0
    assert "NO_WORK: stress-ng's sctp stressor completed 0 bogo ops; its rates read 0" in parsed.flags
    with pytest.raises(ParseFailure):  # the cpu test's own row must not be the idle one
        parse_text(both.replace(" cpu                 100", " cpu                   0"), "stress-ng-cpu")


def test_a_dispatched_stressor_without_a_row_is_flagged() -> None:
    parsed = parse("stress-ng-0.03-missing-row.log", "stress-ng")
    assert parsed.echoed["stressors"] == "cpu,fork,hdd,switch"
    assert parsed.flags == ("MISSING: stress-ng dispatched vm but printed no metrics row for it "
                            "(skipped, failed to start or killed?)",)


def test_an_old_per_stressor_metric_after_its_row_is_read() -> None:
    parsed = parse("stress-ng-vdso-misc-old.log", "stress-ng")
    metric = parsed.metric("nanoseconds_per_call")
    assert (metric.value, metric.unit, metric.higher_is_better) == (9.88, "nanoseconds per call", False)
    assert parsed.values()["bogo_ops_per_second_real"] == 84375055.96
