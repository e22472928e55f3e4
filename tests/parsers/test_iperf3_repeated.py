"""iperf3 3.17 prints its -J report twice: two complete, identical copies, one after the other (esnet/iperf#1688,
`--json` emits two copies of the expected monolithic JSON object; #1716, seen with 3.17 and one stream). Such a log was
refused as 'this log holds several iperf3 JSON reports; split it, one run per log': one run said to be two, and
nothing to split it into. The capture is RECONSTRUCTED (no 3.17 capture at hand): the real 3.16 report of
tests/corpus-found (its layout is 3.17's), its version set to 3.17, printed twice as iperf_json_finish does (the
string and a newline, each time). Another run's report after the first (its own cookie and times) is still refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_run, parse_text
from podtax.parsers.iperf3 import REPEATED

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
REPORT = (FOUND / "iperf3-3.16-tcp.json").read_text(encoding="utf-8").replace('"iperf 3.16"', '"iperf 3.17"')


def test_a_report_printed_twice_is_read_once_and_flagged() -> None:
    once = parse_text(REPORT, "iperf3")
    twice = parse_text(REPORT + REPORT, "iperf3")
    end = json.loads(REPORT)["end"]
    assert twice.values() == once.values()
    assert twice.values()["throughput_mbps"] == end["sum_received"]["bits_per_second"] / 1e6
    assert twice.tool_version == "3.17" and twice.flags == once.flags + (REPEATED,)


def test_the_template_reads_a_report_printed_twice() -> None:
    parsed = parse_run("iperf3", REPORT + REPORT, "", 0, {"duration": 10, "protocol": "tcp"})
    assert parsed.values()["throughput_mbps"] == parse_text(REPORT, "iperf3").values()["throughput_mbps"]


@pytest.mark.parametrize("between", ["", "iperf3: error - unable to receive results: \n"])
def test_another_runs_report_after_the_first_is_still_refused(between: str) -> None:
    other = REPORT.replace('"timesecs":\t', '"timesecs":\t1')  # the same report, one figure changed
    assert other != REPORT
    with pytest.raises(ParseFailure, match="several iperf3 JSON reports") as info:
        parse_text(REPORT + between + other, "iperf3")
    assert info.value.reason == "unknown-format"


def test_a_copy_cut_short_is_not_the_same_report() -> None:
    with pytest.raises(ParseFailure, match="several iperf3 JSON reports"):
        parse_text(REPORT + REPORT[:len(REPORT) // 2], "iperf3")
