"""sysbench `--rate=N` (audit hG): a real cpu run held to 100 events/s printed `Target transaction rate: 100/sec` and
97.18 events/s (the same run without it: 38,283), a memory run held to 1000/s 1.01 MiB/sec; podtax stored these
as the machine's events_per_second and mib_per_second, unflagged, so an imported capped run joined a cell of
the template's runs (which never set a rate) and host and pod, both at the cap, would compare equal. Now such a
run is flagged PARAM_MISMATCH (kept out of scores). Real captures tests/corpus-found (README, with the commands)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_run

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
CASES = {  # capture: (test, primary metric, its value, the cap)
    "sysbench-1.0.20-cpu-rate100.log": ("sysbench-cpu", "events_per_second", 97.18, "100/sec"),
    "sysbench-1.0.20-memory-rate1000.log": ("sysbench-memory", "mib_per_second", 1.01, "1000/sec"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_rate_capped_run_is_a_param_mismatch(name: str) -> None:
    test, primary, value, cap = CASES[name]
    parsed = parse_run(test, (FOUND / name).read_text())
    assert parsed.metric(primary).value == value
    flags = [f for f in parsed.flags if f.startswith("PARAM_MISMATCH: rate: ")]
    assert len(flags) == 1 and f"held to {cap}" in flags[0], parsed.flags


def test_an_uncapped_run_is_not_flagged() -> None:
    parsed = parse_run("sysbench-cpu", (FOUND / "sysbench-1.1-cpu-ec2.log").read_text())
    assert not [f for f in parsed.flags if f.startswith("PARAM_MISMATCH")], parsed.flags
