"""`podtax up` restarting a child that exited with a failure says why, from the child's last line: it said only
'warning: analyzer exited with 2; restarting in 2 s (see .../analyzer.log)' while the analyzer said, in that log,
that another process held its DuckDB file, and which (hF, session 56). A real child process, up's own supervise."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from podtax.cli.up_children import Child, supervise

SAID = ("podtax-analyzer: PODTAX_ANALYZER_DB: cannot open F: another process holds it (PID 7, python3): only one "
        "analyzer may use a file; stop it, or name another file (podtax up: another --data-dir)")


def exited(tmp_path: Path, code: int, said: str = SAID) -> Child:
    child = Child("analyzer", [sys.executable, "-c", f"import sys; print({said!r}, file=sys.stderr); sys.exit({code})"],
                  dict(os.environ), tmp_path / "analyzer.log")
    child.start()
    assert child.proc is not None
    child.proc.wait(60)
    return child


def test_a_failed_childs_restart_warning_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    child = exited(tmp_path, 2)
    assert supervise([child], time.monotonic()) is None
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"warning: analyzer exited with 2 ({SAID}); restarting in "), err
    assert err.endswith(f"(see {tmp_path / 'analyzer.log'})"), err


def test_a_stopped_child_is_not_given_its_last_line_as_a_reason(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    child = exited(tmp_path, 0)
    assert supervise([child], time.monotonic()) is None
    assert capsys.readouterr().err.startswith("warning: analyzer exited with 0; restarting in ")


def test_a_run_that_said_nothing_is_not_given_the_previous_runs_line(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "analyzer.log").write_text(f"{SAID}\n")  # an earlier run's (the log is appended to across runs)
    child = exited(tmp_path, 1, said="")
    assert supervise([child], time.monotonic()) is None
    assert capsys.readouterr().err.startswith("warning: analyzer exited with 1; restarting in ")  # was (SAID)


def test_a_very_long_last_line_is_cut(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    child = exited(tmp_path, 2, said="x" * 5000)
    assert supervise([child], time.monotonic()) is None
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"warning: analyzer exited with 2 ({'x' * 300}…); restarting in "), err[:400]
