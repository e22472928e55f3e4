"""An iperf3 `--bidir` run must not be counted as one of the template's runs, which send one way only.

With --bidir both directions share the path at once: on this machine's loopback (iperf3 3.12, -t 1, medians of 3,
load average 1.8) 10,501 Mbit/s forward beside the reverse traffic against 18,679 one way. Before, such a report
(real capture tests/corpus-net/iperf3-tcp-bidir-1s.json, COMMANDS.tsv) was flagged BIDIR only, which the scores do
not read: a campaign counted its throughput_mbps in the cell. Now it is also flagged PARAM_MISMATCH, whatever the
params, so the scores leave it out (scores.COUNTED)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_run, parse_text

TESTS = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("path", ["corpus-net/iperf3-tcp-bidir-1s.json", "corpus-net/iperf3-udp-bidir-50M-1s.json",
                                  "corpus-found/iperf3-3.9-tcp-bidir.json"])  # 3.9: the sums printed twice
def test_a_bidir_run_is_flagged_param_mismatch(path: str) -> None:
    text = (TESTS / path).read_text(encoding="utf-8")
    for parsed in (parse_text(text), parse_run("iperf3", text, requested={"protocol": "tcp" if "tcp" in path else
                                                                          "udp"})):
        assert parsed.flags[0].startswith("BIDIR: ")  # still says which direction is which
        assert any(f.startswith("PARAM_MISMATCH: bidir: iperf3 ran traffic both ways at once") for f in parsed.flags)


def test_a_one_way_run_is_not_flagged() -> None:
    parsed = parse_text((TESTS / "corpus-net" / "iperf3-tcp-P1-2s.json").read_text(encoding="utf-8"))
    assert not any("bidir" in f for f in parsed.flags)
