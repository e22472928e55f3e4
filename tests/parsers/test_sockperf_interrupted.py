"""What ended a sockperf run (audit hG). sockperf prints `Test end (interrupted by timer)` when its time is up,
`(interrupted by user)` on Ctrl-C, and `(interrupted by signal N)` for another signal or for any signal after
the end. podtax flagged INTERRUPTED on any `by signal` line, so a real under-load run ended by its timer (then
its own SIGINT: 2 of 3 runs here) was called cut short, while a real run stopped by Ctrl-C after 1.3 of its
6 s (exit status 0) got no flag and passed for a whole run. Now the first `Test end` line decides. Real
captures tests/corpus-net (COMMANDS.tsv)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_run

CORPUS = Path(__file__).resolve().parents[1] / "corpus-net"
CASES = {  # capture: INTERRUPTED expected
    "sockperf-pp-tcp-ctrl-c.log": True,
    "sockperf-ul-udp-timer-then-signal.log": False,
    "sockperf-pp-tcp-64-fullrtt.log": False,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_interrupted_only_when_stopped_before_its_timer(name: str) -> None:
    parsed = parse_run("sockperf", (CORPUS / name).read_text())
    interrupted = [f for f in parsed.flags if f.startswith("INTERRUPTED: ")]
    assert bool(interrupted) == CASES[name], parsed.flags
    if interrupted:
        assert "interrupted by user" in interrupted[0]
