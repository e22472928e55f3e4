"""A refused analyzer (db_lock) or `podtax up` (claim) names the process that holds the lock. The lock file is
never removed and keeps the last holder's PID (after a SIGKILL too); a new holder takes the flock first and rewrites
the PID after: a refusal in that gap named the old PID ('another analyzer holds it (PID 4242 ...): stop it'), maybe
an unrelated process's. The kernel's word (/proc/locks) now comes first. A lock file the analyzer may not write (or
read) was reported as the database file ('cannot open .../podtax.duckdb: permission denied')."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from podtax.cli.up import LOCK_FILE, claim
from podtax.config import ConfigError
from podtax_analyzer import db_lock
from podtax_analyzer.db_lock import DbLock, Held
from podtax_analyzer.service import hold

OLD_PID = "4242\n"  # the last holder's, left in the file
# takes the flock as a new holder does, before writing its PID; holds it until its stdin closes
TAKE = """import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR); fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True); sys.stdin.read()
"""


@pytest.fixture
def new_holder(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A lock file naming OLD_PID, whose flock a new process has just taken: (its path, that process's PID)."""
    lock: Path = request.param(tmp_path)
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text(OLD_PID)
    proc = subprocess.Popen([sys.executable, "-c", TAKE, str(lock)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        yield lock, proc.pid
    finally:
        proc.communicate(timeout=30)


def _db_lock(tmp_path: Path) -> Path:
    return tmp_path / "podtax.duckdb.lock"


def _up_lock(tmp_path: Path) -> Path:
    return tmp_path / "data" / LOCK_FILE


@pytest.mark.parametrize("new_holder", [_db_lock], indirect=True)
def test_a_refused_analyzer_names_the_new_holder_not_the_last_one(new_holder: tuple[Path, int],
                                                                  tmp_path: Path) -> None:
    lock, pid = new_holder
    with pytest.raises(Held) as refused:
        DbLock(tmp_path / "podtax.duckdb")
    assert f"another analyzer holds it (PID {pid}; lock file {lock})" in str(refused.value)
    assert lock.read_text() == OLD_PID  # the refused one wrote nothing


@pytest.mark.parametrize("new_holder", [_up_lock], indirect=True)
def test_a_refused_up_names_the_new_holder_not_the_last_one(new_holder: tuple[Path, int], tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    _, pid = new_holder
    with pytest.raises(typer.Exit):
        claim(tmp_path / "data")
    out = capsys.readouterr()
    said = " ".join((out.err + out.out).split())
    assert f"is in use by podtax up (pid {pid});" in said, said


def _refuse(monkeypatch: pytest.MonkeyPatch, lock: Path, read_too: bool) -> None:
    """os.open refusing to open `lock` for writing (another user's file, errno EACCES), and for reading too."""
    real = os.open

    def refusing(path: os.PathLike[str] | str, flags: int, *args: int, **kw: int) -> int:
        if str(path) == str(lock) and (read_too or flags & (os.O_RDWR | os.O_WRONLY)):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real(path, flags, *args, **kw)

    monkeypatch.setattr(db_lock.os, "open", refusing)


def test_a_lock_file_it_may_only_read_still_locks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "podtax.duckdb"
    db_lock.lock_path(db).write_text(OLD_PID)
    _refuse(monkeypatch, db_lock.lock_path(db), read_too=False)
    held = hold(db)
    try:
        assert held is not None
        with pytest.raises(Held):  # flock on a descriptor open for reading only
            DbLock(db)
    finally:
        assert held is not None
        held.release()
    assert db_lock.lock_path(db).read_text() == OLD_PID  # no PID written through it


def test_a_lock_file_it_may_not_open_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "podtax.duckdb"
    db_lock.lock_path(db).write_text(OLD_PID)
    _refuse(monkeypatch, db_lock.lock_path(db), read_too=True)
    with pytest.raises(ConfigError) as refused:
        hold(db)
    assert str(refused.value).startswith(f"PODTAX_ANALYZER_DB: cannot open {db}: its lock file {db}.lock: permission "
                                         "denied: let the analyzer's user read and write it")
