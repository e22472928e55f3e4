"""sockperf `--burst N` (audit hG): a real run with `--burst 4` prints `Summary: Round trip of burst of 4 messages`,
and its percentiles are those of messages queued in a burst (median 27 µs where single messages took 12 on
that host); podtax stored them as rtt_p50_us ... with no flag, so an imported burst run joined a cell of the
template's one-message-at-a-time runs. Now the run is flagged PARAM_MISMATCH (kept out of scores, its cell
flagged). Real capture tests/corpus-net/sockperf-pp-tcp-burst4.log (COMMANDS.tsv)."""

from __future__ import annotations

from pathlib import Path

from podtax.parsers import parse_run

CORPUS = Path(__file__).resolve().parents[1] / "corpus-net"


def test_burst_run_is_a_param_mismatch() -> None:
    parsed = parse_run("sockperf", (CORPUS / "sockperf-pp-tcp-burst4.log").read_text(), requested={"protocol": "tcp"})
    assert parsed.metric("rtt_p50_us").value == 27.24  # the figures are kept, as sockperf printed them
    mismatch = [f for f in parsed.flags if f.startswith("PARAM_MISMATCH: burst: ")]
    assert len(mismatch) == 1 and "bursts of 4 messages" in mismatch[0], parsed.flags


def test_single_message_run_is_not_flagged() -> None:
    parsed = parse_run("sockperf", (CORPUS / "sockperf-pp-tcp-64-fullrtt.log").read_text())
    assert not [f for f in parsed.flags if f.startswith("PARAM_MISMATCH")], parsed.flags
