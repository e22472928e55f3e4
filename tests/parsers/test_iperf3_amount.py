"""iperf3 runs bound by an amount instead of a time (left-out of audit hG): a real `iperf3 -n 50M -J` moved 50 MiB
in 16 ms on a loopback; its JSON echoes `bytes` 52428800 and `duration` 0, and podtax flagged it only when the
params named a duration (as `duration echoed as 0`), so an import row without one stored it unflagged. Now, with
params given, a run bound by bytes (-n) or blocks (-k) is flagged PARAM_MISMATCH naming the amount (once: its
duration 0 is no time bound); the template always passes -t. Without params (podtax parse) it went unflagged, though
the templates are all time-bound: it is now flagged there too (as sysbench's --rate). Real captures tests/corpus-net
(COMMANDS.tsv) and tests/corpus-found."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import iperf3, parse_text

TESTS = Path(__file__).resolve().parents[1]
BYTES = TESTS / "corpus-net" / "iperf3-tcp-n50M.json"
TIMED = TESTS / "corpus-net" / "iperf3-tcp-P1-2s.json"
KBLOCKS = TESTS / "corpus-net" / "iperf3-tcp-k2000.json"  # `-k 2000`, TCP, 3.12: bytes 0, blocks 2000
BLOCKS = TESTS / "corpus-found" / "iperf3-3.1.3-udp.json"  # `-k 10000`, UDP, before 3.11 (sender only)
CASES = {  # id: (capture, params or None, the PARAM_MISMATCH keys expected)
    "bytes, params name a duration": (BYTES, {"protocol": "tcp", "duration": 10}, ["bytes"]),
    "bytes, params name none": (BYTES, {"protocol": "tcp"}, ["bytes"]),
    "bytes, empty params (an import row)": (BYTES, {}, ["bytes"]),
    "bytes, no params (podtax parse)": (BYTES, None, ["bytes"]),
    "blocks, params given": (BLOCKS, {"protocol": "udp"}, ["blocks"]),
    "blocks, no params (podtax parse)": (BLOCKS, None, ["blocks"]),
    "blocks 3.12, params given": (KBLOCKS, {"protocol": "tcp", "duration": 10}, ["blocks"]),
    "blocks 3.12, no params (podtax parse)": (KBLOCKS, None, ["blocks"]),
    "timed run, no params": (TIMED, None, []),
    "timed run": (TIMED, {"protocol": "tcp", "duration": 2}, []),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_run_bound_by_an_amount_is_another_cell(case: str) -> None:
    path, params, expected = CASES[case]
    # the parser itself: the template refuses the sender-only report, which lacks its throughput_mbps
    parsed = iperf3.parse(path.read_text(encoding="utf-8"), requested=params)
    keys = [f.split(":")[1].split()[0] for f in parsed.flags if f.startswith("PARAM_MISMATCH: ")]
    assert keys == expected, parsed.flags
    if expected == ["bytes"]:
        assert "52,428,800 bytes (-n) in 0.0158 s" in parsed.flags[-1], parsed.flags
    if path == KBLOCKS:
        assert "2,000 blocks (-k) in 0.0787 s" in parsed.flags[-1], parsed.flags
        assert parsed.metric("throughput_mbps").value == pytest.approx(25965.47, abs=0.01)


def test_podtax_parse_names_the_amount() -> None:
    """`podtax parse` (no params, the tool autodetected) shows the flag with the template's time."""
    parsed = parse_text(BYTES.read_text(encoding="utf-8"))
    assert [f for f in parsed.flags if f.startswith("PARAM_MISMATCH: bytes: ") and "(-t 10, podtax's" in f], \
        parsed.flags
