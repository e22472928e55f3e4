"""iperf3 3.12 on loopback with the options podtax's template does not set (sweep hB2; tests/corpus-net,
commands in COMMANDS.tsv). Each figure read must be the report's own: throughput_mbps is
`end.sum_received.bits_per_second` / 1e6 (the receiver's rate, the client with -R), sent_mbps `sum_sent`'s, the
reverse direction of --bidir `sum_received_bidir_reverse`'s, UDP jitter and loss the receiver's; a run that
stopped says why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_run, parse_text
from podtax.parsers.iperf3 import BIDIR_MISMATCH

CORPUS = Path(__file__).resolve().parents[1] / "corpus-net"


def _report(text: str) -> dict:
    return json.JSONDecoder().raw_decode(text, text.index('{\n\t"start":'))[0]


def _expected(end: dict, udp: bool) -> dict[str, float]:
    received, sent = end["sum_received"], end["sum_sent"]
    figures = {"throughput_mbps": received["bits_per_second"] / 1e6, "sent_mbps": sent["bits_per_second"] / 1e6}
    figures |= {"jitter_ms": received["jitter_ms"], "lost_percent": received["lost_percent"]} if udp \
        else {"retransmits": sent["retransmits"]}
    back = end.get("sum_received_bidir_reverse")
    if back:
        figures["reverse_throughput_mbps"] = back["bits_per_second"] / 1e6
        if udp:
            figures |= {"reverse_jitter_ms": back["jitter_ms"], "reverse_lost_percent": back["lost_percent"]}
    cpu = end["cpu_utilization_percent"]
    return figures | {"cpu_local_percent": cpu["host_total"], "cpu_remote_percent": cpu["remote_total"]}


OMIT = ("PARAM_MISMATCH: omit: iperf3 left its first 1 s out of its figures (-O 1); podtax's iperf3 counts the whole "
        "run from its start, so this throughput is of another cell")  # test_iperf3_omit.py


@pytest.mark.parametrize(("name", "echoed", "lost"), [
    ("iperf3-tcp-bidir-1s.json", {"protocol": "tcp", "parallel": 1, "bidir": 1}, None),
    ("iperf3-udp-bidir-50M-1s.json", {"protocol": "udp", "bidir": 1}, 0),
    ("iperf3-udp-bidir-5G-loss-1s.json", {"protocol": "udp", "bidir": 1}, 75.17972398593693),
    ("iperf3-udp-5G-loss-1s.json", {"protocol": "udp"}, 27.9863301787592),
    ("iperf3-udp-P4-2G-loss-1s.json", {"protocol": "udp", "parallel": 4}, 38.53948058761805),
    ("iperf3-udp-reverse-100M-1s.json", {"protocol": "udp", "reverse": 1}, 0),
    ("iperf3-tcp-P4-1s.json", {"protocol": "tcp", "parallel": 4}, None),
    ("iperf3-tcp-omit-1-1s.json", {"protocol": "tcp", "duration": 1}, None),
    ("iperf3-tcp-verbose-1s.json", {"protocol": "tcp"}, None),  # warning lines before the report
    ("iperf3-udp-l65000-warning-1s.json", {"protocol": "udp", "length": 65000}, 0.8324661810613944),
    ("iperf3-tcp-get-server-output-1s.json", {"protocol": "tcp"}, None),  # the server's text inside the JSON
])
def test_each_figure_is_the_reports_own(name: str, echoed: dict, lost: float | None) -> None:
    text = (CORPUS / name).read_text(encoding="utf-8")
    end = _report(text)["end"]
    for parsed in (parse_text(text), parse_run("iperf3", text, exit_code=0)):
        assert parsed.values() == _expected(end, "udp" in name)
        assert parsed.echoed.items() >= echoed.items()
        assert parsed.flags == (("BIDIR: traffic ran both ways at once (--bidir); throughput_mbps is the "
                                 "client-to-server direction, reverse_throughput_mbps the other", BIDIR_MISMATCH)
                                if "bidir" in name else (OMIT,) if "omit" in name else ())
        if lost is not None:
            assert parsed.values()["lost_percent"] == lost
    if "loss" in name:  # what arrived, below what was sent
        assert parsed.values()["throughput_mbps"] < 0.75 * parsed.values()["sent_mbps"]


def test_the_omitted_second_is_left_out() -> None:
    """-O 1: the first interval, `omitted: true`, moved more than the measured one; the sums are the measured one's."""
    doc = _report((CORPUS / "iperf3-tcp-omit-1-1s.json").read_text(encoding="utf-8"))
    omitted, measured = (i["sum"] for i in doc["intervals"])
    assert omitted["omitted"] and not measured["omitted"]
    assert doc["end"]["sum_sent"]["bytes"] == measured["bytes"] != omitted["bytes"]


@pytest.mark.parametrize(("name", "reason", "words"), [
    ("iperf3-client-sigint.json", "timeout", "interrupt - the client has terminated"),
    ("iperf3-server-killed-tcp.json", "fatal", "Connection reset by peer (127.0.0.1:25305): the server reset the "
                                               "test's connection mid-test: was it stopped?"),
    ("iperf3-server-killed-udp.json", "fatal", "control socket has closed unexpectedly (127.0.0.1:25307): the server "
                                               "closed the test mid-test: was it stopped?"),
    ("iperf3-socket-buffer-error.json", "fatal", "socket buffer size not set correctly"),
    ("iperf3-text-server-busy.log", "server-busy", "another client is testing against this server"),
])
def test_a_run_that_stopped_says_why(name: str, reason: str, words: str) -> None:
    text = (CORPUS / name).read_text(encoding="utf-8")
    for tool in (None, "iperf3"):
        with pytest.raises(ParseFailure) as info:
            parse_text(text, tool)
        assert info.value.reason == reason and words in info.value.detail, info.value.detail
