"""iperf3's master builds between 9632f933 (2024-04-25) and fd96963e (2024-04-26: esnet/iperf#1688, `--json` emits
two copies of the expected monolithic JSON object; the fix is in 3.17), which call themselves `iperf 3.16+`, print the
-J report twice, two complete byte-identical copies, and a refused connection's report three times. Such a log was
refused as 'this log holds several iperf3 JSON reports; split it, one run per log': one run said to be two, and
nothing to split it into. Real captures of that build, run by review rQ (tests/corpus-found, README). Another run's
report after the first (its own cookie and times) is still refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_run, parse_text
from podtax.parsers.iperf3 import REPEATED

from tests.parsers.iperf3_report import report_in

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
TCP = (FOUND / "iperf3-master-9632f933-tcp.log").read_text(encoding="utf-8")
REPORT = TCP[:TCP.index("}\n{") + 2]  # the first copy alone


@pytest.mark.parametrize("name", ["tcp", "udp", "R", "debug"])
def test_a_report_printed_twice_is_read_once_and_flagged(name: str) -> None:
    path = FOUND / f"iperf3-master-9632f933-{name}.log"
    parsed = parse_text(path.read_text(encoding="utf-8"), "iperf3")
    end = report_in(path)["end"]
    values = parsed.values()
    assert values["throughput_mbps"] == end["sum_received"]["bits_per_second"] / 1e6
    assert values["sent_mbps"] == end["sum_sent"]["bits_per_second"] / 1e6
    assert parsed.tool_version == "3.16+" and parsed.flags == (REPEATED,)


def test_one_copy_reads_the_same_without_the_flag() -> None:
    assert REPORT + REPORT == TCP
    once, twice = parse_text(REPORT, "iperf3"), parse_text(TCP, "iperf3")
    assert twice.values() == once.values() and once.flags == ()


def test_the_template_reads_a_report_printed_twice() -> None:
    parsed = parse_run("iperf3", TCP, "", 0, {"duration": 1, "protocol": "tcp"})
    assert parsed.values()["throughput_mbps"] == parse_text(REPORT, "iperf3").values()["throughput_mbps"]


def test_a_refused_connection_printed_three_times_is_refused() -> None:
    """Before: 'unknown-format: this log holds several iperf3 JSON reports; split it'."""
    with pytest.raises(ParseFailure, match="Connection refused") as info:
        parse_text((FOUND / "iperf3-master-9632f933-refused.log").read_text(encoding="utf-8"), "iperf3")
    assert info.value.reason == "refused"


def test_three_copies_of_a_report_are_read_once() -> None:
    assert parse_text(TCP + REPORT, "iperf3").values() == parse_text(REPORT, "iperf3").values()


@pytest.mark.parametrize("between", ["", "iperf3: error - unable to receive results: \n"])
def test_another_runs_report_after_the_first_is_still_refused(between: str) -> None:
    other = REPORT.replace('"timesecs":\t', '"timesecs":\t1')  # the same report, one figure changed
    assert other != REPORT
    for text in (REPORT + between + other, TCP + between + other):
        with pytest.raises(ParseFailure, match="several iperf3 JSON reports") as info:
            parse_text(text, "iperf3")
        assert info.value.reason == "unknown-format"


def test_a_copy_cut_short_is_not_the_same_report() -> None:
    for text in (REPORT + REPORT[:len(REPORT) // 2], TCP + REPORT[:len(REPORT) // 2]):
        with pytest.raises(ParseFailure, match="several iperf3 JSON reports"):
            parse_text(text, "iperf3")
