"""hdparm `--direct` (audit hG): a real `hdparm -tT --direct` run times O_DIRECT reads (`Timing O_DIRECT cached
reads: ... = 9571.20 MB/sec`, where `hdparm -T` on the same device gave 30,124), and podtax stored it as
read_mb_per_second unflagged for mode=cached or disk, though the template never passes --direct. Now, with
params given, an O_DIRECT primary timing is flagged PARAM_MISMATCH. Real capture tests/corpus-found (README)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_run, parse_text

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
LOG = "hdparm-9.65-loop-direct-tT.log"


@pytest.mark.parametrize(("mode", "value"), [("cached", 9571.2), ("disk", 9298.27)])
def test_an_o_direct_timing_is_a_param_mismatch(mode: str, value: float) -> None:
    parsed = parse_run("hdparm", (FOUND / LOG).read_text(), requested={"mode": mode, "device": "/dev/loop0"})
    assert parsed.metric("read_mb_per_second").value == value
    assert [f for f in parsed.flags if f.startswith("PARAM_MISMATCH: direct: ")], parsed.flags


def test_an_o_direct_timing_is_flagged_without_params() -> None:
    """`podtax parse` (no params) showed the O_DIRECT figure unflagged, though no template can run it (as
    sysbench's --rate and iperf3's -n are flagged whatever the params)."""
    parsed = parse_text((FOUND / LOG).read_text())
    assert parsed.metric("read_mb_per_second").value == 9298.27
    assert [f for f in parsed.flags if f.startswith("PARAM_MISMATCH: direct: ")], parsed.flags
    assert not [f for f in parse_text((FOUND / "hdparm-offset-37gb.log").read_text()).flags if "direct" in f]


def test_a_buffered_timing_is_not_flagged() -> None:
    parsed = parse_run("hdparm", (FOUND / "hdparm-offset-37gb.log").read_text(), requested={"mode": "disk"})
    assert not [f for f in parsed.flags if "direct" in f], parsed.flags


@pytest.mark.parametrize("direct", ["false", "0", "no", "off", False, 0, ""])
def test_a_param_direct_that_says_no_is_still_a_mismatch(direct: object) -> None:
    """An import's text param `direct=false` was read by emptiness (a non-empty text is true): O_DIRECT went
    unflagged. Booleans are now read by their words (base.same_value), as fio's `direct` is."""
    parsed = parse_run("hdparm", (FOUND / LOG).read_text(), requested={"mode": "disk", "direct": direct})
    assert [f for f in parsed.flags if f.startswith("PARAM_MISMATCH: direct: ")], parsed.flags


@pytest.mark.parametrize("direct", ["true", "1", "yes", "on", True, 1])
def test_a_param_direct_that_says_yes_matches_an_o_direct_timing(direct: object) -> None:
    parsed = parse_run("hdparm", (FOUND / LOG).read_text(), requested={"mode": "disk", "direct": direct})
    assert parsed.metric("read_mb_per_second").value == 9298.27
    assert not [f for f in parsed.flags if "direct" in f], parsed.flags
