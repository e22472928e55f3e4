"""`--db FILE` that the user may not read (the analyzer's file, mode 0600 of its service user, read by another user;
or a file inside a folder the user may not enter): one line naming the cause and what to do, exit 2. It was a
PermissionError traceback (`podtax-analyzer report` from the usage sweep on, `podtax report --db` before).

The paths are really unreadable: the file or its folder has the mode 000, and the command runs as its owner (as root,
without the capabilities that let root pass any mode: util-linux's setpriv drops CAP_DAC_OVERRIDE and
CAP_DAC_READ_SEARCH before it starts the command, so the repository and its venv stay readable wherever they are)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

PODTAX = str(Path(sys.executable).with_name("podtax"))
DROP = "-dac_override,-dac_read_search"  # what lets root read and enter whatever the modes say


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`argv` run so that modes bind it (as root: without the capabilities that pass them)."""
    if os.geteuid() == 0:
        argv = ["setpriv", f"--bounding-set={DROP}", f"--inh-caps={DROP}", *argv]
    env = {**os.environ, "HOME": str(cwd), "COLUMNS": "200"}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def _locked_db(folder: Path, where: str) -> Path:
    """A real DuckDB file that the command (see _run) cannot read: the file itself, or its folder."""
    inside = folder / "service" if where == "folder" else folder
    inside.mkdir(exist_ok=True)
    db = inside / "analyzer.duckdb"
    duckdb.connect(str(db)).close()
    (db if where == "file" else inside).chmod(0)
    probe = _run([sys.executable, "-c", f"open({str(db)!r}, 'rb')"], folder)
    assert "PermissionError" in probe.stderr, f"the test could not lock {db}: {probe.stderr}"
    return db


ENTRY_POINTS = {
    "podtax report": lambda db: [PODTAX, "report", "demo", "--db", str(db)],
    "podtax-analyzer report": lambda db: [sys.executable, "-m", "podtax_analyzer", "report", "demo", "--db", str(db)],
}


@pytest.mark.parametrize("where", ["file", "folder"])
@pytest.mark.parametrize("command", list(ENTRY_POINTS))
def test_a_db_file_the_user_cannot_read_is_one_line_naming_the_cause(command: str, where: str,
                                                                      tmp_path: Path) -> None:
    db = _locked_db(tmp_path, where)
    done = _run(ENTRY_POINTS[command](db), tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert str(db) in lines[0] and "Traceback" not in done.stderr
    assert "cannot be read (Permission denied): run as the analyzer's user, or use its HTTP API" in lines[0]
