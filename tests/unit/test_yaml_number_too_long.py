"""A YAML file holding an integer longer than Python converts (4,300 digits) is one line naming the file, the line
and the fix, exit 2, through the real entry points: `podtax simulate`'s workload and the scheduler's profile
(PODTAX_SCHEDULER_PROFILE, read by podtax-scheduler at start and by `podtax scores`) ended in a ValueError
traceback; a campaign file's line named sys.set_int_max_str_digits() and no line (tests/unit/
test_cli_hostile_campaign.py) (helper hU, session 54). Any other ValueError out of YAML (an impossible date such as
2024-13-01) says the file and YAML's own words, not 'a number too long to read' (fx4, session 54; review r4)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

LONG = "1" + "0" * 5000
SAYS = (":2: a number of 5,001 digits (100000000000...): no field takes a number so long: write the value the field "
        "needs")


def _run(tmp_path: Path, argv: list[str], **variables: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PODTAX_NATS_URL": "nats://127.0.0.1:1", "PODTAX_API_URL": "http://127.0.0.1:1",
           "PODTAX_DATA_DIR": str(tmp_path), "PODTAX_CLI_TIMEOUT": "5", **variables}
    return subprocess.run([sys.executable, "-m", *argv], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)


def test_a_workload_with_a_number_of_5001_digits(tmp_path: Path) -> None:
    (tmp_path / "w.yaml").write_text(f"classes: []\nduration_s: {LONG}\n")
    done = _run(tmp_path, ["podtax", "simulate", "--campaign", "x", "--workload", "w.yaml"])
    assert (done.returncode, done.stderr) == (2, f"error: the workload w.yaml{SAYS}\n")


@pytest.mark.parametrize("argv", [["podtax_scheduler"], ["podtax", "scores"]], ids=["podtax-scheduler", "scores"])
def test_a_scheduler_profile_with_a_number_of_5001_digits(tmp_path: Path, argv: list[str]) -> None:
    (tmp_path / "p.yaml").write_text(f"score:\n  BenchmarkScore: {{weight: {LONG}}}\n")
    done = _run(tmp_path, argv, PODTAX_SCHEDULER_PROFILE="p.yaml")
    prefix = "podtax-scheduler: " if argv == ["podtax_scheduler"] else "error: "
    assert (done.returncode, done.stderr) == (2, f"{prefix}PODTAX_SCHEDULER_PROFILE=p.yaml{SAYS}\n")


DATE = (": month must be in 1..12 (YAML reads an unquoted value of this form as a date or a number: quote it if it "
        "is text)")


def test_a_workload_with_an_impossible_date(tmp_path: Path) -> None:
    (tmp_path / "w.yaml").write_text("classes: []\nduration_s: 2024-13-01\n")
    done = _run(tmp_path, ["podtax", "simulate", "--campaign", "x", "--workload", "w.yaml"])
    assert (done.returncode, done.stderr) == (2, f"error: the workload w.yaml{DATE}\n")


@pytest.mark.parametrize("argv", [["podtax_scheduler"], ["podtax", "scores"]], ids=["podtax-scheduler", "scores"])
def test_a_scheduler_profile_with_an_impossible_date(tmp_path: Path, argv: list[str]) -> None:
    (tmp_path / "p.yaml").write_text("score:\n  BenchmarkScore: {weight: 2024-13-01}\n")
    done = _run(tmp_path, argv, PODTAX_SCHEDULER_PROFILE="p.yaml")
    prefix = "podtax-scheduler: " if argv == ["podtax_scheduler"] else "error: "
    assert (done.returncode, done.stderr) == (2, f"{prefix}PODTAX_SCHEDULER_PROFILE=p.yaml{DATE}\n")
