"""An iperf3 run with `-O N` must not pass for one of the template's runs, which never pass -O.

`-O N` leaves the first N seconds (TCP's start, a path's ramp) out of the end sums that podtax reads. Real capture
tests/corpus-net/iperf3-tcp-omit-1-1s.json (`iperf3 -c 127.0.0.1 -t 1 -O 1 -J`, iperf3 3.12, COMMANDS.tsv): its
omitted first second moved more than the measured one, and the sums are the measured one's. Before: read with
params protocol tcp, duration 1 as a run of the cell, no flag; now flagged PARAM_MISMATCH (omit), whatever the
params, as a run bound by an amount (-n, -k) is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from podtax.parsers import parse_run, parse_text

NET = Path(__file__).resolve().parents[1] / "corpus-net"
FLAG = ("PARAM_MISMATCH: omit: iperf3 left its first 1 s out of its figures (-O 1); podtax's iperf3 counts the whole "
        "run from its start, so this throughput is of another cell")


def test_a_run_with_omitted_seconds_is_flagged_whatever_the_params() -> None:
    text = (NET / "iperf3-tcp-omit-1-1s.json").read_text(encoding="utf-8")
    assert json.loads(text)["start"]["test_start"]["omit"] == 1
    for parsed in (parse_text(text), parse_run("iperf3", text, requested={"protocol": "tcp", "duration": 1})):
        assert FLAG in parsed.flags
        assert parsed.values()["throughput_mbps"] == pytest.approx(10227.30432974188)  # still the report's figure


@pytest.mark.parametrize("name", ["iperf3-tcp-P1-2s.json", "iperf3-udp-reverse-100M-1s.json",
                                  "iperf3-tcp-bidir-1s.json"])
def test_a_run_without_omitted_seconds_is_not_flagged(name: str) -> None:
    text = (NET / name).read_text(encoding="utf-8")
    assert json.loads(text)["start"]["test_start"]["omit"] == 0
    assert not any(f.startswith("PARAM_MISMATCH: omit") for f in parse_text(text).flags)
