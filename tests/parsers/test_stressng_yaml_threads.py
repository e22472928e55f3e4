"""A stress-ng --yaml report of more cpu instances than the cell's threads must be flagged as its table is.

The table gives the count in `dispatching hogs: 2 cpu` (THREADS_MISMATCH when it is not the cell's threads); the YAML
has no such line, and before, tests/corpus/debian12-x86_64/stress-ng-cpu-2-matrixprod.yaml (stress-ng 0.15.06,
`--cpu 2`, COMMANDS.tsv) parsed for a cell of threads=1 echoed no threads and gave no flag, its bogo ops those of two
instances; likewise hwbench's 0.21.03 report of 640 instances. Now the YAML's count is echoed: the entries of the row's
`instances:` list (0.21), else 100 x (usr + sys) over wall-clock x cpu-usage-per-instance (0.15.06: 2.0000)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_run, parse_text

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
CASES = [("debian12-x86_64/stress-ng-cpu-2-matrixprod.yaml", 2),
         ("stress-ng/hwbench/stressng/v02103b/stressngmatrixprod.yaml", 640),  # its instances: list
         ("debian12-x86_64/stress-ng-cpu-1-perf.yaml", 1)]


@pytest.mark.parametrize(("name", "instances"), CASES)
def test_the_yaml_echoes_its_instances_and_another_count_is_flagged(name: str, instances: int) -> None:
    text = (CORPUS / name).read_text(encoding="utf-8")
    same = parse_run("stress-ng-cpu", text, requested={"threads": instances})
    assert same.echoed["threads"] == instances
    assert not any(f.startswith("THREADS_MISMATCH") for f in same.flags), same.flags
    other = parse_run("stress-ng-cpu", text, requested={"threads": instances + 1})
    assert f"THREADS_MISMATCH: the tool ran {instances} threads, {instances + 1} were requested" in other.flags


@pytest.mark.parametrize("name", ["stress-ng-cpu-2-matrixprod", "stress-ng-cpu-1-perf"])
def test_the_yaml_and_the_table_of_one_run_echo_the_same_count(name: str) -> None:
    folder = CORPUS / "debian12-x86_64"
    table = parse_text((folder / f"{name}.log").read_text(encoding="utf-8"), "stress-ng-cpu")
    yaml = parse_text((folder / f"{name}.yaml").read_text(encoding="utf-8"), "stress-ng-cpu")
    assert yaml.echoed["threads"] == table.echoed["threads"]


def test_a_row_that_used_no_cpu_time_tells_no_count() -> None:
    text = (CORPUS / "debian12-x86_64/stress-ng-cpu-2-matrixprod.yaml").read_text(encoding="utf-8")
    at = text.index("      user-time: ")
    end = text.index("\n", at)
    idle = text[:at] + "      user-time: 0.000000" + text[end:]
    assert "threads" not in parse_run("stress-ng-cpu", idle, requested={"threads": 1}).echoed


@pytest.mark.parametrize(("ratio", "threads"), [(30.03, 30), (30.4, None), (2.4, None), (1.96, 2)])
def test_the_count_from_cpu_times_is_a_whole_number_within_a_fixed_margin(ratio: float, threads: int | None) -> None:
    """100 x (usr + sys) / (wall x cpu-usage-per-instance) is a whole number to 2e-5 on every corpus row (0.15.06's
    two instances 2.0000, hwbench's 640 639.99998). Before, it was taken within 2% of itself: from 25 on any ratio
    (30.4 read as 30 instances); now within 0.05."""
    text = (CORPUS / CASES[0][0]).read_text(encoding="utf-8")
    said = "      user-time: 3.989985\n"
    assert said in text
    user = ratio * 2.000499 * 99.724749 / 100  # its wall-clock-time and cpu-usage-per-instance
    parsed = parse_text(text.replace(said, f"      user-time: {user:.6f}\n"), "stress-ng-cpu")
    assert parsed.echoed.get("threads") == threads
