"""iperf3 3.20 added `--json-stream-full-output`: with `--json-stream`, the events (one compact JSON object per line)
and then the -J report itself (iperf_json_finish prints cJSON_Print of the whole document after the `end` event). Such
a log was refused as 'this is iperf3's --json-stream output (one event per line): rerun iperf3 with -J', the report
it asks for being in the log, and a refused connection was said to be that instead of `refused`. Real captures of
iperf3 3.21 built from its tag (tests/corpus-found, README); a --json-stream log without the report is refused as
before. Events before the report that are not its own (another run's: review rQ's two-runs log) are refused as
several reports, not read as the last one's figures."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_run, parse_text

from tests.parsers.iperf3_report import report_in

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
FULL = (FOUND / "iperf3-3.21-json-stream-full-output.log").read_text(encoding="utf-8")


@pytest.mark.parametrize("tool", ["iperf3", None])
def test_the_report_after_the_events_is_read(tool: str | None) -> None:
    name = "iperf3-3.21-json-stream-full-output.log"
    parsed = parse_text((FOUND / name).read_text(encoding="utf-8"), tool)
    end = report_in(FOUND / name)["end"]
    values = parsed.values()
    assert values["throughput_mbps"] == end["sum_received"]["bits_per_second"] / 1e6
    assert values["sent_mbps"] == end["sum_sent"]["bits_per_second"] / 1e6
    assert values["retransmits"] == end["sum_sent"]["retransmits"]
    assert parsed.tool_version == "3.21" and parsed.flags == ()


def test_the_template_reads_it() -> None:
    text = (FOUND / "iperf3-3.21-json-stream-full-output.log").read_text(encoding="utf-8")
    parsed = parse_run("iperf3", text, "", 0, {"duration": 2, "protocol": "tcp"})
    assert parsed.values()["throughput_mbps"] > 0


def test_a_refused_connection_is_refused() -> None:
    text = (FOUND / "iperf3-3.21-json-stream-full-output-refused.log").read_text(encoding="utf-8")
    with pytest.raises(ParseFailure, match="Connection refused") as info:
        parse_text(text, "iperf3")
    assert info.value.reason == "refused"


def test_events_without_the_report_are_still_refused() -> None:
    with pytest.raises(ParseFailure, match="--json-stream output") as info:
        parse_text((FOUND / "iperf3-3.21-json-stream.jsonl").read_text(encoding="utf-8"), "iperf3")
    assert info.value.reason == "unknown-format"


def test_another_runs_events_before_the_report_are_several_runs() -> None:
    """Review rQ's log: a -R run's events (6703 Mbit/s), then another run's events and report (3190 Mbit/s). Read as
    3190 Mbit/s with no flag before."""
    text = (FOUND / "iperf3-3.21-json-stream-two-runs.log").read_text(encoding="utf-8")
    with pytest.raises(ParseFailure, match="several iperf3 JSON reports .*`start` event printed 2 times") as info:
        parse_text(text, "iperf3")
    assert info.value.reason == "unknown-format"
    with pytest.raises(ParseFailure, match="several iperf3 JSON reports"):
        parse_run("iperf3", text, "", 0, {"duration": 1, "protocol": "tcp"})


def test_events_of_another_cookie_are_another_runs() -> None:
    """The -R run's events alone before the other run's report: one start event, another cookie."""
    lines = (FOUND / "iperf3-3.21-json-stream-two-runs.log").read_text(encoding="utf-8").splitlines(keepends=True)
    text = "".join(lines[:3] + lines[6:])
    with pytest.raises(ParseFailure, match="start event's cookie 'ido6fxszt3ozx4ym3knsg5bzc2rwkkquxjzs' is not the "
                                           "report's 'nvvccpjd3innud36ytjfuekrvgmcqohn27qh'"):
        parse_text(text, "iperf3")


def test_an_end_event_of_other_figures_is_another_runs() -> None:
    """The same cookie, but the end event's figures are not the report's `end` (one byte count changed)."""
    end = FULL.index('{"event":"end"')
    bytes_at = FULL.index('"bytes":', end) + len('"bytes":')
    text = FULL[:bytes_at] + "1" + FULL[bytes_at:]
    with pytest.raises(ParseFailure, match="end event's figures are not the report's `end`"):
        parse_text(text, "iperf3")
