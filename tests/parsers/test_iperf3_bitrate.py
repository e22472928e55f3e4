"""iperf3's bitrate cap (audit hG): a real `iperf3 -u -J` run without `-b` sends at iperf3's UDP default of
1 Mbit/s (`target_bitrate` 1048576) and podtax stored throughput_mbps 1.05, unflagged, for a cell whose params
said nothing of a cap, where the template passes `-b 0` (unlimited: 63 Gbit/s on this loopback). Now a run
whose `target_bitrate` is not the requested `bitrate` (absent: the template's 0) is flagged PARAM_MISMATCH.
Real capture tests/corpus-net/iperf3-udp-no-b-1s.json (COMMANDS.tsv)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_run

CORPUS = Path(__file__).resolve().parents[1] / "corpus-net"
LOG = "iperf3-udp-no-b-1s.json"


@pytest.mark.parametrize("requested", [{"protocol": "udp"}, {"protocol": "udp", "bitrate": "0"},
                                       {"protocol": "udp", "bitrate": "1M"}])
def test_a_run_at_another_cap_is_a_param_mismatch(requested: dict[str, str]) -> None:
    parsed = parse_run("iperf3", (CORPUS / LOG).read_text(), requested=requested)
    assert parsed.metric("throughput_mbps").value == pytest.approx(1.048, abs=0.001)
    flags = [f for f in parsed.flags if f.startswith("PARAM_MISMATCH: bitrate: ")]
    assert len(flags) == 1 and "a cap of 1,048,576 bit/s" in flags[0], parsed.flags


@pytest.mark.parametrize(("log", "bitrate"), [("iperf3-udp-2G-l1400-2s.json", "2G"), ("iperf3-tcp-P1-2s.json", "0"),
                                              ("iperf3-tcp-P1-2s.json", None)])
def test_the_requested_cap_is_not_flagged(log: str, bitrate: str | None) -> None:
    requested = {} if bitrate is None else {"bitrate": bitrate}
    parsed = parse_run("iperf3", (CORPUS / log).read_text(), requested=requested or {"protocol": "tcp"})
    assert not [f for f in parsed.flags if "bitrate" in f], parsed.flags
