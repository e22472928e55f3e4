"""`--db FILE` that the user may not read (the analyzer's file, mode 0600 of its service user, read by another user;
or a file inside a folder the user may not enter): one line naming the cause and what to do, exit 2. It was a
PermissionError traceback (`podtax-analyzer report` from the usage sweep on, `podtax report --db` before).

The paths are really unreadable: the file or its folder is taken from everyone but its owner, and the command runs as
another user (nobody, when the tests run as root, whom no mode stops) or as the owner with the mode 000."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

PODTAX = str(Path(sys.executable).with_name("podtax"))
NOBODY = 65534


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`argv` run as a user who may not read what the test locked (nobody when we are root)."""
    if os.geteuid() == 0:  # util-linux's setpriv: it finds the interpreter as root (a venv whose python is under
        # /root), then runs it as nobody (a preexec_fn setuid could not even start it)
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]
    env = {**os.environ, "HOME": str(cwd), "COLUMNS": "200"}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder every user may enter (pytest's own is its owner's only)."""
    with tempfile.TemporaryDirectory(prefix="podtax-db-") as name:
        folder = Path(name)
        folder.chmod(0o755)
        yield folder
        for inner in folder.iterdir():  # make it removable again
            inner.chmod(0o700)


def _locked_db(folder: Path, where: str) -> Path:
    """A real DuckDB file that the running user (see _run) cannot read: the file itself, or its folder."""
    inside = folder / "service" if where == "folder" else folder
    inside.mkdir(exist_ok=True)
    db = inside / "analyzer.duckdb"
    duckdb.connect(str(db)).close()
    if os.geteuid() == 0:  # root's own, as the analyzer's file is its service user's
        (db if where == "file" else inside).chmod(0o600 if where == "file" else 0o700)
    else:
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
                                                                      open_folder: Path) -> None:
    db = _locked_db(open_folder, where)
    done = _run(ENTRY_POINTS[command](db), open_folder)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert str(db) in lines[0] and "Traceback" not in done.stderr
    assert "cannot be read (Permission denied): run as the analyzer's user, or use its HTTP API" in lines[0]
