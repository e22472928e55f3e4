"""iperf3 3.20 added `--json-stream-full-output`: with `--json-stream`, the events (one compact JSON object per line)
and then the -J report itself (iperf_json_finish prints cJSON_Print of the whole document after the `end` event). Such
a log was refused as 'this is iperf3's --json-stream output (one event per line): rerun iperf3 with -J', the report
it asks for being in the log, and a refused connection was said to be that instead of `refused`. Real captures of
iperf3 3.21 built from its tag (tests/corpus-found, README); a --json-stream log without the report is refused as
before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_run, parse_text

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"


def _report(name: str) -> dict:
    text = (FOUND / name).read_text(encoding="utf-8")
    return json.loads(text[text.index('{\n\t"start":'):])


@pytest.mark.parametrize("tool", ["iperf3", None])
def test_the_report_after_the_events_is_read(tool: str | None) -> None:
    name = "iperf3-3.21-json-stream-full-output.log"
    parsed = parse_text((FOUND / name).read_text(encoding="utf-8"), tool)
    end = _report(name)["end"]
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
