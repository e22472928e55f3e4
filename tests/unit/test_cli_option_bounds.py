"""Every numeric option of the `podtax` CLI takes what the analyzer's API (or the command itself) takes, and says so
through the real entry point: a value out of range is ONE line naming the option and its range, exit 2, before
anything is asked: with --db (the offline path) as without (the API path).

Before: --threshold nan/inf/-0.5/1/1.5 of report, compare and export was refused by each command's body in a line
that named no option ('error: threshold must be a fraction in [0, 1), got nan'), unlike `podtax-analyzer report
--threshold`; `results --limit` above the API's 100000 and `scores --placements` above its 10000 were sent to the
analyzer, which answered 422 (here: nothing listens, exit 1). The other numeric options were already bounded:
their rows guard that they stay so. The analyzer's address is a port nothing listens on: a value that got past its
check would exit 1 ('cannot reach the analyzer'), not 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PODTAX = str(Path(sys.executable).with_name("podtax"))
API_GONE = "http://127.0.0.1:1"
THRESHOLD = "{v} is no practical threshold: give a fraction from 0 to below 1 (0.01 = 1%)"
COMMANDS = {"report": ["report", "c"], "report --db": ["report", "c", "--db", "gone.duckdb"],
            "compare": ["compare", "a", "b"], "export": ["export", "c", "--csv", "out"]}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(("value", "shown"), [("nan", "nan"), ("inf", "inf"), ("1e309", "inf"), ("-0.5", "-0.5"),
                                              ("1", "1"), ("1.5", "1.5"), ("99999999999999999999", "1e+20")])
def test_a_threshold_out_of_0_to_below_1_names_the_option(tmp_path: Path, command: str, value: str,
                                                          shown: str) -> None:
    path = " ".join(COMMANDS[command][:1])
    done = _run(tmp_path, [*COMMANDS[command], "--threshold", value])
    assert (done.returncode, done.stderr) == (2, f"podtax {path}: invalid value for '--threshold': "
                                                 f"{THRESHOLD.format(v=shown)}. Try 'podtax {path} --help'.\n")


@pytest.mark.parametrize(("argv", "says"), [
    (["results", "--limit", "100001"], "invalid value for '--limit': Input should be less than or equal to 100000"),
    (["results", "--limit", "9" * 30], "invalid value for '--limit': Input should be less than or equal to 100000"),
    (["scores", "--placements", "10001"], "invalid value for '--placements': Input should be less than or equal "
                                          "to 10000"),
    (["scores", "--placements", "-1"], "invalid value for '--placements': Input should be greater than or equal "
                                       "to 0"),
    # already bounded: kept so
    (["results", "--limit", "0"], "invalid value for '--limit': Input should be greater than or equal to 1"),
    (["report", "c", "--html", "r.html", "--simulate", "w.yaml", "--seeds", "1001"],
     "invalid value for '--seeds': Input should be less than or equal to 1000"),
    (["simulate", "c", "w.yaml", "--seeds", "1"], "invalid value for '--seeds': Input should be greater than or "
                                                  "equal to 2"),
    (["campaign", "status", "c", "--follow", "--timeout", "1e309"], "invalid value for '--timeout': inf is not a "
                                                                    "number of seconds between 0 and 86400"),
    (["campaign", "status", "c", "--follow", "--timeout", "nan"], "invalid value for '--timeout': nan is not a "
                                                                  "number of seconds between 0 and 86400"),
    (["campaign", "cancel", "c", "--wait", "-1"], "invalid value for '--wait': -1.0 is not a number of seconds "
                                                  "between 0 and 86400"),
    (["kubesim", "--port", "65536"], "invalid value for '--port': Input should be less than or equal to 65535"),
    (["up", "--api-port", "0"], "invalid value for '--api-port': Input should be greater than or equal to 1"),
])
def test_a_count_out_of_what_the_api_serves_is_one_line(tmp_path: Path, argv: list[str], says: str) -> None:
    path = " ".join(w for w in argv[:2] if w.isalpha() and w != "c")
    done = _run(tmp_path, argv)
    assert (done.returncode, done.stderr) == (2, f"podtax {path}: {says}. Try 'podtax {path} --help'.\n")


@pytest.mark.parametrize("argv", [
    ["report", "c", "--threshold", "0"], ["compare", "a", "b", "--threshold", "0.99"],
    ["export", "c", "--csv", "out", "--threshold", "0.5"], ["results", "--limit", "100000"],
    ["scores", "--placements", "10000"],
])
def test_the_bounds_themselves_are_taken(tmp_path: Path, argv: list[str]) -> None:
    """The edges the API takes pass the CLI's check and go on to ask the analyzer (here: not there, exit 1)."""
    done = _run(tmp_path, argv)
    assert done.returncode == 1 and f"cannot reach the analyzer at {API_GONE}" in done.stderr, done.stderr


def _run(tmp_path: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PODTAX_API_URL": API_GONE, "PODTAX_NATS_URL": "nats://127.0.0.1:1", "COLUMNS": "200",
           "PODTAX_DATA_DIR": str(tmp_path / "data")}
    return subprocess.run([PODTAX, *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
