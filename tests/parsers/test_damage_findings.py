"""Damage that gave a figure before these checks (found by fuzzing every capture we hold): each case
damages one real capture the way logs get damaged, and must now be refused (a ParseFailure with the
reason and words given) where it used to give a wrong figure. The intact capture must still parse,
so every case also guards against a check that refuses too much.

A second table: a log that holds a failed run beside a good one gives the good run's figures, flagged
ERRORS with the failure's own words.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_text

TESTS = Path(__file__).resolve().parents[1]
FOUND, CORPUS, NET = TESTS / "corpus-found", TESTS / "corpus", TESTS / "corpus-net"


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def cut_after(words: str, keep: int, newline: bool = True) -> Callable[[str], str]:
    """The log cut `keep` characters into the first `words`, then (as a collector may) a newline."""
    return lambda text: text[:text.index(words) + keep] + ("\n" if newline else "")


def drop_line(line: str) -> Callable[[str], str]:
    def damage(text: str) -> str:
        assert line in text
        return text.replace(line, "", 1)
    return damage


def swap(old: str, new: str) -> Callable[[str], str]:
    def damage(text: str) -> str:
        assert old in text
        return text.replace(old, new, 1)
    return damage


SYSBENCH_04 = """Test execution summary:
    total time:                          18.3264s
    total number of events:              10000
    total time taken by event execution: 219.7879
    per-request statistics:
         min:                                 21.65ms
         avg:                                 21.98ms
         max:                                 34.45ms
         approx.  95 percentile:              22.04ms
"""
FIO_TEXT = FOUND / "fio-2.0.15-randrw-text.log"
MISC = FOUND / "stress-ng-0.17-riscv-hdd-mb-sec-misc.log"

# (case, capture, damage, tool, reason, words in the detail)
REFUSED = [
    ("sockperf cut inside its median, newline added (49.557 read as 4)", FOUND / "sockperf-3.10-extended-stats.log",
     cut_after("percentile 50.000 =   49", len("percentile 50.000 =   4")), "sockperf", "truncated", "<MIN>"),
    ("stress-ng brief row cut in its usr+sys rate (1770.72 read as 17)",
     CORPUS / "debian12-x86_64" / "stress-ng-cpu-1-ops3000-brief.log", cut_after("1770.72", 2), "stress-ng",
     "unknown-format", "`17` lacks the 2 decimals"),
    ("stress-ng brief row cut after a decimal (1770.72 read as 1770.7)",
     CORPUS / "debian12-x86_64" / "stress-ng-cpu-1-ops3000-brief.log", cut_after("1770.72", 6), "stress-ng",
     "unknown-format", "`1770.7` lacks the 2 decimals"),
    ("stress-ng --metrics row cut before its RSS Max", FOUND / "stress-ng-0.17-riscv-hdd-mb-sec-misc.log",
     lambda text: _cut_row_end(text), "stress-ng", "unknown-format", "under a header of 8 columns"),
    ("stress-ng YAML that lost a `- stressor:` line", FOUND / "stress-ng-0.17-seq24-stm32mp135.yaml",
     drop_line("    - stressor: rawudp\n"), "stress-ng", "unknown-format", "`- stressor:` line is missing"),
    ("stress-ng misc metrics of another run (another instance count) before the log", MISC,
     lambda text: text.replace("hdd                  163.56 MB/sec write rate (harmonic mean of 1 instance)",
                               "hdd                  999.99 MB/sec write rate (harmonic mean of 4 instances)\n"
                               "stress-ng: metrc: [5273] hdd                  163.56 MB/sec write rate "
                               "(harmonic mean of 1 instance)"),
     "stress-ng", "unknown-format", "printed twice"),
    ("sysbench cpu that lost its thread count (the implausibility check needs it)",
     FOUND / "sysbench-1.0.20-homebrew-bogus-rate.log", drop_line("Number of threads: 8\n"), "sysbench-cpu",
     "truncated", "Number of threads"),
    ("sysbench 1.0 run followed by a 0.4 summary without its banner",
     CORPUS / "debian12-x86_64" / "sysbench-cpu-prime100000-1t.log", lambda text: text + SYSBENCH_04, "sysbench",
     "unknown-format", "twice"),
    ("sysbench figure made negative", FOUND / "sysbench-1.1-cpu-ec2.log", swap("114.08", "-1"), "sysbench-cpu",
     "unknown-format", "is negative"),
    ("fio JSON figure made negative", CORPUS / "debian12-x86_64" / "fio-seqread-1M-direct.json",
     lambda text: text.replace('"iops" : ', '"iops" : -', 1), "fio", "unknown-format", "is negative"),
    ("sysbench percentile label damaged (latency_pnan)", FOUND / "sysbench-1.1-cpu-ec2.log",
     swap("95th percentile", "nanth percentile"), "sysbench-cpu", "unknown-format", "is not a percentile"),
    ("fio text that lost its `write:` line (write latencies read as read's)", FIO_TEXT,
     drop_line("  write: io=83749KB, bw=269100 B/s, iops=43 , runt=318686msec\n"), "fio", "unknown-format",
     "prints read latencies twice"),
    ("fio text job that lost its direction line (the next job's figures took its name)",
     FOUND / "fio-3.39-interrupted-text.log",
     drop_line("  write: IOPS=2526, BW=9.87MiB/s (10.3MB/s)(8697MiB/881234msec); 0 zone resets\n"), "fio",
     "unknown-format", "before any direction line"),
    ("hdparm -tT cut inside its disk timing's label (reads as a -T run)",
     CORPUS / "hdparm" / "tinkerboard" / "hdparm.txt",
     cut_after(" Timing buffered", len(" Tim")), "hdparm", "truncated", "`Tim` without its figures"),
    ("fio text job that lost its direction line and latencies (its issued I/O says so)",
     FOUND / "fio-3.39-interrupted-text.log", lambda text: _drop_lines(text, 11, 23), "fio", "unknown-format",
     "issued write I/O but has no `write:` line"),
    ("fio text cut inside its last job's report (that job's figures may be short)",
     FOUND / "fio-3.39-interrupted-text.log", lambda text: "\n".join(text.split("\n")[:92]) + "\n", "fio",
     "truncated", "stops inside the report of job file1"),
    ("stress-ng row cut inside its RSS Max (1788 read as 1)", MISC,
     swap("85.61          1788\n", "85.61          1\n"), "stress-ng", "unknown-format",
     "RSS Max, 1 KB, is below what any process maps"),
    ("fio text cut right after a `clat percentiles` header (its percentiles lost, the rest read)",
     FOUND / "fio-3.39-interrupted-text.log", lambda text: "\n".join(text.split("\n")[:84]) + "\n", "fio",
     "truncated", "prints `clat percentiles` and then no percentile"),
    ("fio text of two runs, the second's version line lost (jobs summed)", FIO_TEXT,
     lambda text: text + text.replace("fio-2.0.15\n", "").replace("pid=21423", "pid=21424"), "fio",
     "unknown-format", "Run status group 0"),
]


def _drop_lines(text: str, first: int, last: int) -> str:
    """The log without its lines `first` to `last` (numbered from 1, as an editor shows them)."""
    lines = text.split("\n")
    return "\n".join(lines[:first - 1] + lines[last:])


def _cut_row_end(text: str) -> str:
    """The first --metrics row cut after its CPU-used figure (its RSS Max lost), then a newline."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        parts = line.split()
        if len(parts) == 12 and parts[3] == "hdd":  # `stress-ng: metrc: [pid] hdd` and 8 figures
            lines[i] = line[:line.rstrip().rfind(" ")]
            return "\n".join(lines)
    raise AssertionError("no hdd row")


@pytest.mark.parametrize(("case", "path", "damage", "tool", "reason", "words"), REFUSED,
                         ids=[case[0] for case in REFUSED])
def test_damage_that_gave_a_figure_is_refused(case: str, path: Path, damage: Callable[[str], str], tool: str,
                                              reason: str, words: str) -> None:
    text = read(path)
    if "homebrew" not in path.name:  # that capture is refused intact too (implausible), for its own reason
        parse_text(text, tool)
    with pytest.raises(ParseFailure) as failure:
        parse_text(damage(text), tool)
    assert failure.value.reason == reason, failure.value.detail
    assert words in failure.value.detail


def test_the_homebrew_capture_intact_is_refused_as_implausible() -> None:
    with pytest.raises(ParseFailure) as failure:
        parse_text(read(FOUND / "sysbench-1.0.20-homebrew-bogus-rate.log"), "sysbench-cpu")
    assert failure.value.reason == "implausible"


def test_a_sockperf_log_cut_inside_its_last_figure_keeps_the_rest() -> None:
    """The `<MIN>` line present but cut: the figures before it are whole, only the minimum is lost."""
    text = read(FOUND / "sockperf-3.10-extended-stats.log")
    values = parse_text(cut_after("<MIN> observation =   34.9", len("<MIN> observation =   34.9"), False)(text),
                        "sockperf").values()
    assert values["rtt_p50_us"] == 49.557 and "rtt_min_us" not in values


def test_iperf3_retransmits_of_minus_one_are_not_measured() -> None:
    """iperf3 writes -1 when it cannot count retransmits: left out, not refused and not a count."""
    text = read(NET / "iperf3-tcp-P1-2s.json")
    at = text.rindex('"retransmits":')
    damaged = text[:at] + '"retransmits":\t-1,' + text[text.index("\n", at):]
    values = parse_text(damaged, "iperf3").values()
    assert "retransmits" not in values and values["throughput_mbps"] > 0
    assert parse_text(text, "iperf3").values()["retransmits"] == 18


# (case, good capture, failed run's text, tool, words the flag quotes)
FAILED_BESIDE = [
    ("fio JSON after a failed fio run", CORPUS / "debian12-x86_64" / "fio-seqread-1M-direct.json",
     "fio: pid=812, err=5/file:io_u.c:1889, func=io_u error, error=Input/output error\n", "fio",
     "err=5/file:io_u.c:1889"),
    ("fio text after a failed fio run", FIO_TEXT, "fio: engine libaio not loadable\n", "fio",
     "engine libaio not loadable"),
    ("iperf3 JSON after a refused text run", NET / "iperf3-tcp-P1-2s.json",
     "iperf3: error - unable to connect to server: Connection refused\n", "iperf3", "Connection refused"),
    ("hdparm after a run without permission", CORPUS / "hdparm" / "tinkerboard" / "hdparm.txt",
     "/dev/sda1: Permission denied\n", "hdparm", "Permission denied"),
    ("sysbench after a refused command", CORPUS / "debian12-x86_64" / "sysbench-cpu-prime100000-1t.log",
     "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n\nThe 'memory' test requires a command argument. "
     "See 'sysbench memory help'\n", "sysbench", "requires a command argument"),
]


@pytest.mark.parametrize(("case", "path", "failed", "tool", "words"), FAILED_BESIDE,
                         ids=[case[0] for case in FAILED_BESIDE])
def test_a_failed_run_beside_a_good_one_is_flagged(case: str, path: Path, failed: str, tool: str,
                                                   words: str) -> None:
    good = parse_text(read(path), tool)
    assert not any(flag.startswith("ERRORS:") for flag in good.flags)
    both = parse_text(failed + read(path), tool)
    assert both.values() == good.values()
    flag = next(flag for flag in both.flags if flag.startswith("ERRORS:"))
    assert words in flag


def test_a_stress_ng_yaml_report_followed_by_a_failed_run_is_flagged() -> None:
    path = CORPUS / "debian12-x86_64" / "stress-ng-cpu-2-matrixprod.yaml"
    good = parse_text(read(path), "stress-ng")
    both = parse_text(read(path) + "stress-ng: error: [812] cpu: illegal cpu-method 'x'\n", "stress-ng")
    assert both.values() == good.values()
    assert any(flag.startswith("ERRORS:") and "illegal cpu-method" in flag for flag in both.flags)


def test_a_fio_warning_is_no_failure() -> None:
    text = ("fio: this platform does not support process shared mutexes, forcing use of threads. Use the "
            "'thread' option to get rid of this warning.\n") + read(FIO_TEXT)
    assert not any(flag.startswith("ERRORS:") for flag in parse_text(text, "fio").flags)
