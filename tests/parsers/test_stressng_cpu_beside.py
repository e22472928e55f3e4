"""A stress-ng run of cpu beside other stressors, read as the stress-ng-cpu test, must not pass for a cpu run.

stress-ng runs the stressors of one command at once (`--cpu 2 --vm 2`): cpu's figures are then measured under the
others' load. Real capture tests/corpus/debian12-x86_64/stress-ng-cpu-2-vm-2-side-by-side.log (COMMANDS.tsv,
stress-ng 0.15.06, 2 cores): cpu 268.47 bogo ops/s (real time) beside 2 vm, against 583.28 for `--cpu 2` alone
run right after. Before: read as stress-ng-cpu with no flag, 268.47 as the cell's figure. A `--sequential` run
(its `successful run completed in` about the sum of its rows' times: perfkit's 386.22 s for 40 rows of 10 s)
ran cpu alone and is not flagged; nor is a run whose other stressor was skipped (it did not run) or did no work
(af-alg: 0 bogo ops, 0.00 s usr+sys; it was flagged, saying cpu was measured under its load: review r4). The --yaml
report has no run time: a run of several stressors is flagged, saying it cannot tell --sequential. stress-ng 0.16
and later print that time as `30.84 secs` or `24 mins, 2.77 secs` (review r4): it was read only as `3.15s`, so
their --sequential runs were flagged, saying the line was missing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from podtax.parsers import parse_run, parse_text

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
BESIDE = "PARAM_MISMATCH: stressors: cpu ran beside vm"


def test_cpu_beside_vm_is_flagged_as_another_cell() -> None:
    text = (CORPUS / "debian12-x86_64" / "stress-ng-cpu-2-vm-2-side-by-side.log").read_text()
    got = parse_text(text, "stress-ng-cpu")
    assert got.values()["bogo_ops_per_second_real"] == 268.47  # still read: the flag says what it measures
    assert [f for f in got.flags if f.startswith("PARAM_MISMATCH")] == [
        f"{BESIDE} (stress-ng runs the stressors of one command at once); podtax's stress-ng-cpu runs --cpu alone, "
        "so these cpu figures were measured under the others' load and measure another cell"]
    assert not any("ran beside" in f for f in parse_text(text, None).flags)  # no test named: no cpu cell


def test_its_yaml_report_is_flagged_too_saying_it_cannot_tell_sequential() -> None:
    text = (CORPUS / "debian12-x86_64" / "stress-ng-cpu-2-vm-2-side-by-side.yaml").read_text()
    got = parse_text(text, "stress-ng-cpu")
    assert got.values()["bogo_ops_per_second_real"] == 268.469969
    beside = [f for f in got.flags if f.startswith(BESIDE)]
    assert len(beside) == 1 and "unless --sequential was given, which this log does not tell" in beside[0]


@pytest.mark.parametrize("name", ["debian12-x86_64/stress-ng-cpu-uprobe-skipped-metrics.yaml",  # uprobe: 0.007 s
                                  # af-alg: 0 bogo ops in 1.00 s, usr+sys 0.000497 s: it did no work (review r4)
                                  "debian12-x86_64/stress-ng-cpu-af-alg-idle-metrics.yaml",
                                  "debian12-x86_64/stress-ng-cpu-1-perf.yaml"])
def test_a_yaml_report_of_cpu_alone_is_not_flagged(name: str) -> None:
    got = parse_text((CORPUS / name).read_text(), "stress-ng-cpu")
    assert got.values()["bogo_ops"] > 0
    assert not any("ran beside" in f for f in got.flags), got.flags


@pytest.mark.parametrize("name", ["stress-ng/perfkit/stress_ng_output.txt",  # --sequential: each row alone
                                  "debian12-x86_64/stress-ng-cpu-uprobe-skipped-metrics.log",  # uprobe never ran
                                  "debian12-x86_64/stress-ng-cpu-af-alg-idle-metrics.log",  # af-alg: no work
                                  "debian12-x86_64/stress-ng-cpu-1-ops3000-brief.log"])
def test_cpu_alone_is_not_flagged(name: str) -> None:
    got = parse_text((CORPUS / name).read_text(), "stress-ng-cpu")
    assert got.values()["bogo_ops"] > 0
    assert not any("ran beside" in f for f in got.flags), got.flags


def test_real_stressng_cpu_beside_another_stressor_is_flagged(tmp_path: Path) -> None:
    if shutil.which("stress-ng") is None:
        pytest.skip("stress-ng is not installed (apt-get install stress-ng)")
    base = ["stress-ng", "--cpu", "1", "--cpu-ops", "300", "--metrics-brief"]
    alone, beside = (subprocess.run(base + extra, capture_output=True, text=True, timeout=120, check=True,
                                    cwd=tmp_path) for extra in ([], ["--vm", "1", "--vm-bytes", "8M", "-t", "5"]))
    assert not any("ran beside" in f for f in parse_text(alone.stdout + alone.stderr, "stress-ng-cpu").flags)
    flags = parse_text(beside.stdout + beside.stderr, "stress-ng-cpu").flags
    assert any(f.startswith(BESIDE) for f in flags), flags


@pytest.mark.parametrize(("name", "started"), [("stress-ng/perfkit/stress_ng_output.txt", 16),  # --sequential 16
                                               ("debian12-x86_64/stress-ng-class-cpu-seq0-sigterm-at-60s.log", 2)])
def test_a_sequential_runs_cpu_instances_are_compared_with_the_threads_asked(name: str, started: int) -> None:
    """`dispatching hogs: 16 af-alg, ..., 16 cpu, ...`: the cpu row is the sum of 16 instances (perfkit's 1255.95
    bogo ops/s). Before: no threads echoed when other stressors were listed, so a cell of 1 thread took it with no
    flag; now the cpu count is echoed and compared."""
    text = (CORPUS / name).read_text()
    got = parse_run("stress-ng-cpu", text, "", 0, {"threads": 1, "timeout": 1, "method": "all"})
    assert got.echoed["threads"] == started
    assert f"THREADS_MISMATCH: the tool ran {started} threads, 1 were requested" in got.flags
    same = parse_run("stress-ng-cpu", text, "", 0, {"threads": started, "timeout": 1, "method": "all"})
    assert not any(f.startswith("THREADS_MISMATCH") for f in same.flags)


FOUND = CORPUS.parent / "corpus-found"


@pytest.mark.parametrize("name", ["stress-ng-0.18-seq24-total-of-instances.log",  # `24 mins, 2.17 secs`
                                  "stress-ng-0.17-seq24-misc-rates.log",
                                  "stress-ng-0.17-seq24-stm32mp135-table.log"])
def test_a_sequential_run_of_0_16_and_later_is_not_flagged(name: str) -> None:
    """`--sequential 0` with 24 stressors of 60 s: `successful run completed in 24 mins, 2.17 secs`."""
    got = parse_run("stress-ng-cpu", (FOUND / name).read_text(), "", 0, {"threads": 2, "timeout": 60})
    assert not any("ran beside" in f for f in got.flags), got.flags


def test_a_run_at_once_of_0_17_is_flagged_without_saying_its_time_is_missing() -> None:
    """--cpu 2 --vm 1 --hdd 1 for 60 s, `successful run completed in 1 min, 1.14 secs`: at once."""
    got = parse_text((FOUND / "stress-ng-0.17-riscv-hdd-mb-sec-misc.log").read_text(), "stress-ng-cpu")
    beside = [f for f in got.flags if f.startswith("PARAM_MISMATCH: stressors: cpu ran beside vm, hdd")]
    assert len(beside) == 1 and "does not tell" not in beside[0], got.flags
