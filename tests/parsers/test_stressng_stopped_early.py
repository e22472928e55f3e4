"""A stress-ng run stopped by a signal before its timeout (audit hG's left-out): stress-ng still says
"successful run completed" and exits 0, so a real run interrupted at 2.5 of its 10 s was stored as a whole one,
its bogo ops a quarter of a run's. Now the primary stressor's real time well under the timeout is flagged SHORT;
a run that ends at its timeout, a run of --*-ops (stress-ng's default 1-day timeout) and a loaded machine's late
start are not."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import stressng

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
SIGINT = (FOUND / "stress-ng-0.15.06-cpu-sigint-at-2.5s.log").read_text()


def _with_real_time(text: str, real: str, timeout: str = "10 second") -> str:
    """The capture as if its stressor had run `real` seconds of a run of `timeout`."""
    return text.replace("      2.49      2.49", f"{real:>10}      2.49").replace("10 second", timeout)


@pytest.mark.parametrize(("text", "params", "short"), [
    (SIGINT, None, True),  # the log's own timeout (10 s)
    (SIGINT, {"timeout": 10}, True),
    (_with_real_time(SIGINT, "10.00"), {"timeout": 10}, False),  # ran its whole timeout
    (_with_real_time(SIGINT, "9.50"), {"timeout": 10}, False),  # a late start on a loaded machine
    (_with_real_time(SIGINT, "1.70", "1 day"), None, False),  # a run of --cpu-ops: stress-ng's 1-day default
    (_with_real_time(SIGINT, "1.40", "2 second"), {"timeout": 2}, False),  # under a second short of a short run
])
def test_a_stressor_stopped_well_before_its_timeout_is_short(text: str, params: dict | None, short: bool) -> None:
    parsed = stressng.parse(text, "stress-ng-cpu", params)
    flags = [f for f in parsed.flags if f.startswith("SHORT")]
    assert bool(flags) is short, parsed.flags
    if short:
        assert "2.49 s of the 10 s asked" in flags[0], flags
    assert parsed.metric("bogo_ops").value == 9112  # the figures stay: the flag warns what they cover
