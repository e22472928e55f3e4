"""iperf3 and sockperf parsers on REAL captures (tests/corpus-net/, commands in its COMMANDS.tsv):
every capture parses to the figures in golden_net/ or fails with its stored reason. Regenerate with
`PODTAX_REGEN_GOLDEN=1 pytest tests/parsers/test_net_parsers.py` and review each diff by eye."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from podtax import templates
from podtax.cli.parse import as_dict
from podtax.parsers import ParseFailure, parse_run, parse_text

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "corpus-net"
GOLDEN = HERE / "golden_net"
REGEN = os.environ.get("PODTAX_REGEN_GOLDEN") == "1"
LOGS = sorted(p for p in CORPUS.iterdir() if p.name != "COMMANDS.tsv")


def outcome(text: str) -> dict:
    try:
        return as_dict(parse_text(text))
    except ParseFailure as failure:
        return {"error": {"reason": failure.reason, "detail": failure.detail}}


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_capture_matches_golden(path: Path) -> None:
    actual = json.loads(json.dumps(outcome(path.read_text(encoding="utf-8"))))
    target = GOLDEN / (path.name + ".json")
    if REGEN:
        GOLDEN.mkdir(exist_ok=True)
        target.write_text(json.dumps(actual, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert actual == json.loads(target.read_text(encoding="utf-8"))


def test_every_capture_is_listed_with_its_command() -> None:
    listed = {line.split("\t")[0] for line in (CORPUS / "COMMANDS.tsv").read_text().splitlines()[1:]}
    assert listed == {p.name for p in LOGS}
    assert {p.name.removesuffix(".json") for p in GOLDEN.iterdir()} == {p.name for p in LOGS}


FAILURES = {
    "iperf3-refused.json": "refused",
    "iperf3-unreachable.json": "unreachable",
    "iperf3-killed-no-answer.json": "timeout",
    "iperf3-server-busy.json": "server-busy",
    "iperf3-text-refused.log": "refused",  # without -J the error is a line, classified alike
    "sockperf-refused.log": "refused",
    "sockperf-unreachable.log": "unreachable",
    "sockperf-udp-noserver.log": "timeout",
}


@pytest.mark.parametrize(("name", "reason"), FAILURES.items())
def test_failures_have_a_clear_reason(name: str, reason: str) -> None:
    test = "iperf3" if name.startswith("iperf3") else "sockperf"
    with pytest.raises(ParseFailure) as info:
        parse_run(test, (CORPUS / name).read_text(), exit_code=0)  # both tools exit 0 on these errors
    assert info.value.reason == reason
    assert "?" in info.value.detail or "server" in info.value.detail


@pytest.mark.parametrize(("name", "fix"), [("iperf3-text-tcp-1s.log", "with -J"),
                                         ("sockperf-tp-tcp-1s.log", "sockperf ping-pong")])
def test_reports_podtax_does_not_read_are_recognized_and_name_the_fix(name: str, fix: str) -> None:
    """The tool is recognized (no "nothing recognized"), and the rejection says what to run instead."""
    tool = name.split("-")[0]
    with pytest.raises(ParseFailure) as auto:
        parse_text((CORPUS / name).read_text())
    with pytest.raises(ParseFailure) as run:
        parse_run(tool, (CORPUS / name).read_text(), exit_code=0)
    for failure in (auto.value, run.value):
        assert failure.reason == "unknown-format" and fix in failure.detail, failure.detail


def test_iperf3_figures_units_and_directions() -> None:
    tcp = parse_run("iperf3", (CORPUS / "iperf3-tcp-P1-2s.json").read_text(),
                    requested={"protocol": "tcp", "parallel": 1, "duration": 2, "reverse": False, "length": 0})
    m = {x.name: x for x in tcp.metrics}
    assert m["throughput_mbps"].unit == "Mbit/s" and m["throughput_mbps"].higher_is_better
    assert m["throughput_mbps"].value == pytest.approx(16691.855015, rel=1e-9)  # sum_received / 1e6
    assert m["retransmits"].value == 18 and not m["retransmits"].higher_is_better
    assert tcp.tool_version == "3.12" and tcp.flags == ()
    udp = parse_run("iperf3", (CORPUS / "iperf3-udp-2G-l1400-2s.json").read_text(),
                    requested={"protocol": "udp", "length": 1400, "parallel": 2, "bitrate": "2G"})  # run with -b 2G
    u = udp.values()
    assert u["lost_percent"] == pytest.approx(56.3594, rel=1e-4) and u["throughput_mbps"] < u["sent_mbps"]
    assert udp.flags == ("PARAM_MISMATCH: parallel echoed as 1, requested 2",)
    rev = parse_run("iperf3", (CORPUS / "iperf3-tcp-P2-reverse-2s.json").read_text())
    assert rev.echoed["reverse"] == 1 and rev.echoed["parallel"] == 2


def test_sockperf_figures_units_and_directions() -> None:
    p = parse_run("sockperf", (CORPUS / "sockperf-pp-tcp-64-fullrtt.log").read_text(), requested={"protocol": "tcp"})
    m = {x.name: x for x in p.metrics}
    assert m["rtt_p50_us"].value == 4.38 and m["rtt_p50_us"].unit == "µs" and not m["rtt_p50_us"].higher_is_better
    assert m["rtt_p99_9_us"].value == 1247.503 and m["rtt_max_us"].value == 19294.251
    assert m["messages_per_second"].higher_is_better and m["messages_per_second"].value == pytest.approx(132422 / 1.554)
    assert p.tool_version == "3.7-no.git"
    recorded = parse_run("sockperf", (CORPUS / "sockperf-pp-tcp-64-fullrtt.log").read_text(),
                         recorded_version="sockperf, version 3.7-no.git")  # `sockperf --version` on this host
    assert recorded.flags == ()  # no VERSION_MISMATCH between the log and the recorded version
    wrong = parse_run("sockperf", (CORPUS / "sockperf-pp-udp-1k-mps10000.log").read_text(),
                      requested={"protocol": "tcp"})
    assert wrong.flags[1:] == ("PARAM_MISMATCH: protocol echoed as udp, requested tcp",)  # [0]: FEW_OBSERVATIONS


def test_truncated_reports_fail_loudly() -> None:
    text = (CORPUS / "iperf3-tcp-P1-2s.json").read_text()
    with pytest.raises(ParseFailure) as info:
        parse_run("iperf3", text[: len(text) // 2])
    assert info.value.reason == "truncated"
    log = (CORPUS / "sockperf-pp-tcp-64-fullrtt.log").read_text()
    with pytest.raises(ParseFailure) as info:
        parse_run("sockperf", log.split("[Valid Duration]")[0])
    assert info.value.reason == "truncated"


def test_templates_build_argv_without_a_shell_and_refuse_bad_params() -> None:
    argv = templates.get("iperf3").build_argv({"server": "198.18.0.7", "protocol": "udp", "reverse": True,
                                               "bitrate": "200M", "length": 1400})
    assert argv == ["iperf3", "-c", "198.18.0.7", "-p", "5201", "-t", "10", "-P", "1", "-b", "200M", "-J",
                    "-u", "-R", "-l", "1400"]
    sockperf = templates.get("sockperf").build_argv({"protocol": "udp", "rate": 5000})
    assert sockperf[-3:] == ["--mps", "5000", "--full-rtt"]
    for bad in ({"server": "-x"}, {"server": "a b"}, {"port": 80}, {"parallel": 0}, {"duration": 0}, {"shell": "x"}):
        with pytest.raises(templates.TemplateError):
            templates.get("iperf3").build_argv(bad)
    with pytest.raises(templates.TemplateError):
        templates.get("sockperf").build_argv({"msg_size": 5})


def test_iperf3_option_refused_by_getopt_is_a_bad_argument() -> None:
    """iperf3 3.12 answers an option it does not know (`--json-stream`, added in 3.17) with getopt's line and its
    usage text, exit 1 (audit hT): was `unknown-format: no iperf3 JSON report (was iperf3 run with -J?)` with
    --tool, and `no ... output recognized` without."""
    text = (CORPUS / "iperf3-3.12-json-stream-unknown-option.log").read_text(encoding="utf-8")
    for parse in (lambda: parse_text(text), lambda: parse_run("iperf3", text, exit_code=1)):
        with pytest.raises(ParseFailure) as failure:
            parse()
        assert failure.value.reason == "bad-argument", failure.value
        assert "unrecognized option '--json-stream'" in failure.value.detail
