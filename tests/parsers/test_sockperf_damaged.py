"""A damaged sockperf percentile label (`percentile 99.9.0`) is a ParseFailure, not a ValueError
that escaped the parser (found by mutating the real captures)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import Parsed, ParseFailure, parse_text

from tests.parsers.corpus_index import read_text

LOG = read_text(Path(__file__).resolve().parent.parent / "corpus-net" / "sockperf-pp-udp-1k-mps10000.log")


@pytest.mark.parametrize("tool", [None, "sockperf"])
def test_damaged_percentile_label_is_a_parse_failure(tool: str | None) -> None:
    assert "percentile 99.900 =" in LOG
    with pytest.raises(ParseFailure) as caught:
        parse_text(LOG.replace("percentile 99.900 =", "percentile 99.9.0 =", 1), tool)
    assert caught.value.reason == "unknown-format"
    assert "99.9.0" in caught.value.detail


def test_intact_log_still_parses() -> None:
    parsed = parse_text(LOG, "sockperf")
    assert isinstance(parsed, Parsed)
    assert parsed.metric("rtt_p99_9_us").value > 0
