"""sockperf percentiles beyond the data (audit hE, network): a run that timed 14 messages (`--mps 10 -t 2`, a
real capture) printed percentile 99.000 to 99.999 all equal to its <MAX> observation, and podtax stored them
as rtt_p99_us ... rtt_p99_999_us, so a report compared maxima under those names; a 2-s UDP run of 15,521
messages likewise had rtt_p99_999_us = its max. Now a percentile with less than one observation beyond it
(n x (1 - p) < 1) is not reported and the run is flagged FEW_OBSERVATIONS, naming them. Real captures
(tests/corpus-net, COMMANDS.tsv), the parser and the real `podtax parse` CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.cli.main import main
from podtax.parsers import parse_run

CORPUS = Path(__file__).resolve().parents[1] / "corpus-net"
CASES = {  # capture: (percentiles not reported, percentiles kept)
    "sockperf-pp-tcp-mps10-few.log": (("p99", "p99_9", "p99_99", "p99_999"), ("p25", "p50", "p75", "p90")),
    "sockperf-pp-udp-1k-mps10000.log": (("p99_999",), ("p50", "p99", "p99_9", "p99_99")),
    "sockperf-pp-tcp-64-fullrtt.log": ((), ("p50", "p99", "p99_9", "p99_99", "p99_999")),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_percentiles_beyond_the_data_are_not_reported(name: str) -> None:
    parsed = parse_run("sockperf", (CORPUS / name).read_text())
    names = {m.name for m in parsed.metrics}
    dropped, kept = CASES[name]
    assert {f"rtt_{p}_us" for p in kept} <= names and "rtt_max_us" in names
    assert not {f"rtt_{p}_us" for p in dropped} & names, names
    flags = [f for f in parsed.flags if f.startswith("FEW_OBSERVATIONS: ")]
    assert bool(flags) == bool(dropped)
    if dropped:
        assert f"rtt_{dropped[0]}_us" in flags[0] and "raise --time or --mps" in flags[0], flags


def test_podtax_parse_says_so(capsys) -> None:
    assert main(["parse", str(CORPUS / "sockperf-pp-tcp-mps10-few.log")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "FEW_OBSERVATIONS: sockperf timed 14 messages" in out, out
