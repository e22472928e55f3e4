"""iperf3 `-d -J` (sweep hB2, iperf3 3.12 on this project's Debian 12 VM, tests/corpus-net, COMMANDS.tsv): debug
lines and the JSON objects the client exchanges with the server (`send_parameters:`, `send_results`,
`get_results`) come before the report, which is whole. The first of those objects was taken for the report and
the run refused as 'this log holds several iperf3 JSON reports; split it': one run, wrongly said to be several.
Each figure read must be the one the report prints (`end.sum_received` / `sum_sent`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_text

from tests.parsers.iperf3_report import report_in

CORPUS = Path(__file__).resolve().parents[1] / "corpus-net"


@pytest.mark.parametrize("name", ["iperf3-tcp-debug-b20M-1s.json", "iperf3-udp-debug-1s.json"])
def test_a_debug_run_reads_its_report(name: str) -> None:
    parsed = parse_text((CORPUS / name).read_text(encoding="utf-8"), "iperf3")
    end = report_in(CORPUS / name)["end"]
    values = parsed.values()
    assert values["throughput_mbps"] == end["sum_received"]["bits_per_second"] / 1e6
    assert values["sent_mbps"] == end["sum_sent"]["bits_per_second"] / 1e6
    assert values["cpu_local_percent"] == end["cpu_utilization_percent"]["host_total"]
    if "udp" in name:
        assert values["jitter_ms"] == end["sum_received"]["jitter_ms"]
        assert values["lost_percent"] == end["sum_received"]["lost_percent"] == 0
        assert 1.0 < values["throughput_mbps"] < 1.1  # `-b 1M`: 1 MiB/s, 1.048576 Mbit/s
    else:
        assert values["retransmits"] == end["sum_sent"]["retransmits"]
        assert 20 < values["throughput_mbps"] < 21.5  # `-b 20M`
    assert parsed.tool_version == "3.12" and parsed.flags == ()


def test_a_debug_run_that_failed_gives_its_error() -> None:
    with pytest.raises(ParseFailure) as info:
        parse_text((CORPUS / "iperf3-refused-debug.json").read_text(encoding="utf-8"), "iperf3")
    assert info.value.reason == "refused"


def test_two_reports_after_debug_lines_are_still_several() -> None:
    """Only the debug objects are passed over: a second report after the first is still refused (another run's: its
    own cookie; the same report byte for byte is what the `iperf 3.16+` builds of esnet/iperf#1688 print,
    test_iperf3_repeated.py)."""
    text = (CORPUS / "iperf3-tcp-debug-b20M-1s.json").read_text(encoding="utf-8")
    cookie = report_in(CORPUS / "iperf3-tcp-debug-b20M-1s.json")["start"]["cookie"]
    report = text[text.index('{\n\t"start":'):].replace(cookie, cookie[::-1])
    with pytest.raises(ParseFailure, match="several iperf3 JSON reports"):
        parse_text(text + report, "iperf3")


def _debug_lines() -> str:
    """The real TCP capture's debug lines alone: a -d run killed before its report (review r3's capture's shape)."""
    text = (CORPUS / "iperf3-tcp-debug-b20M-1s.json").read_text(encoding="utf-8")
    return text[:text.index('{\n\t"start":')]


def test_a_debug_run_killed_before_its_report_is_cut() -> None:
    with pytest.raises(ParseFailure, match="stops before its JSON report") as info:
        parse_text(_debug_lines(), "iperf3")
    assert info.value.reason == "truncated"


def test_a_killed_debug_run_then_a_whole_one_is_several_runs() -> None:
    """The first run's debug lines, then a second run's: its report is not the first run's answer."""
    whole = (CORPUS / "iperf3-tcp-debug-b20M-1s.json").read_text(encoding="utf-8")
    with pytest.raises(ParseFailure, match="several iperf3 -d runs .*printed 2 times") as info:
        parse_text(_debug_lines() + whole, "iperf3")
    assert info.value.reason == "unknown-format"
