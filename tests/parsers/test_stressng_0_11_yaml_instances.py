"""stress-ng 0.11's YAML gives no instance count (cpu-usage-per-instance came in 0.12, the `instances:` list later):
the parser echoes no `threads` and computes no per-instance figure, the row's figures are as printed (bogo ops over all
instances). A cpu instance is one process using at most one CPU, and the row sums its instances' usr+sys times over
their mean wall-clock time (0.11.07's metrics_dump), so a row that used more CPU than the requested instances could
is THREADS_MISMATCH ('at least N'); a loaded run of 2 instances that used less cannot be told. Real captures of a
0.11.07 build (tests/corpus-found/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_run

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"


def _parse(name: str, threads: int) -> tuple[dict[str, float], tuple[str, ...], dict[str, object]]:
    parsed = parse_run("stress-ng-cpu", (FOUND / name).read_text(encoding="utf-8"), "", 0,
                       {"threads": threads, "timeout": 2})
    return parsed.values(), parsed.flags, dict(parsed.echoed)


def test_two_instances_that_used_two_cpus_are_not_one() -> None:
    values, flags, echoed = _parse("stress-ng-0.11.07-cpu-2.yaml", 1)
    assert flags == ("THREADS_MISMATCH: the tool ran at least 2 threads, 1 were requested (this stress-ng YAML gives "
                     "no instance count: its cpu row used 3.83 s of CPU in 2.05 s of wall-clock time, more than 1 "
                     "instance(s) can)",)
    assert "threads" not in echoed and values["bogo_ops"] == 380 and values["bogo_ops_per_second_real"] == 185.557019


@pytest.mark.parametrize(("name", "threads"), [("stress-ng-0.11.07-cpu-2.yaml", 2),
                                               ("stress-ng-0.11.07-cpu-2-loaded.yaml", 2),
                                               ("stress-ng-0.11.07-cpu-2-loaded.yaml", 1),  # cannot be told
                                               ("stress-ng-0.11.07-cpu-1.yaml", 1)])
def test_no_count_and_no_per_instance_figure(name: str, threads: int) -> None:
    values, flags, echoed = _parse(name, threads)
    assert flags == () and "threads" not in echoed
    assert not [m for m in values if "instance" in m]
