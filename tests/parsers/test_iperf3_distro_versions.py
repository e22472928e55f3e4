"""iperf3 -J as the versions distributions ship write it (RHEL 8: 3.5, Ubuntu 20.04: 3.7, Ubuntu 24.04: 3.16,
Debian 13: 3.18, multi-threaded since 3.16): each built from esnet/iperf's tag and run on loopback with the
template's options (tests/corpus-found/README.md). TCP figures are the report's own sums, to the bit; a UDP report
before 3.11 (only `end.sum`) is refused for the template, naming the version to install, and `podtax parse` reads
its sender's rate only (SENDER_ONLY). iperf3 3.5-3.9 servers count about 40-60 ms more into their own time than
the client's (control messages without TCP_NODELAY until 3.10): the server's side's rate (forward: the throughput;
-R: sent_mbps) is then its bytes over the client's time (test_iperf3_server_lag.py), so 3.5's and 3.7's TCP
reports are there, not here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_run, parse_text

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
TCP = ["iperf3-3.16-tcp.json", "iperf3-3.18-tcp-P2-R.json"]
UDP = ["iperf3-3.16-udp-P2-R.json", "iperf3-3.18-udp.json"]
OLD_UDP = ["iperf3-3.5-udp.json", "iperf3-3.7-udp-P2-R.json"]


def _params(name: str) -> dict[str, object]:
    udp, two = "-udp" in name, "-P2" in name
    return {"duration": 1, "parallel": 2 if two else 1, "reverse": "-R" in name, "protocol": "udp" if udp else "tcp",
            "bitrate": ("50M" if two else "100M") if udp else "0"}


@pytest.mark.parametrize("name", TCP + UDP)
def test_figures_are_the_reports_own_sums(name: str) -> None:
    text = (FOUND / name).read_text()
    end = json.loads(text)["end"]
    parsed = parse_run("iperf3", text, "", 0, _params(name))
    assert parsed.tool_version == name.split("-")[1] and parsed.flags == ()
    assert parsed.metric("throughput_mbps").value == end["sum_received"]["bits_per_second"] / 1e6
    assert parsed.metric("sent_mbps").value == end["sum_sent"]["bits_per_second"] / 1e6


@pytest.mark.parametrize("name", OLD_UDP)
def test_an_old_udp_report_is_refused_naming_the_version(name: str) -> None:
    text = (FOUND / name).read_text()
    with pytest.raises(ParseFailure) as failure:
        parse_run("iperf3", text, "", 0, _params(name))
    assert failure.value.reason == "unsupported-version" and "3.11" in failure.value.detail, failure.value


def test_an_old_forward_udp_report_gives_its_senders_rate_only() -> None:
    text = (FOUND / "iperf3-3.5-udp.json").read_text()
    parsed = parse_text(text)
    assert "throughput_mbps" not in parsed.values() and parsed.flags[0].startswith("SENDER_ONLY")
    assert parsed.metric("sent_mbps").value == json.loads(text)["end"]["sum"]["bits_per_second"] / 1e6
