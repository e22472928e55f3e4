"""A name that is a loop of symbolic links (a -> b -> a: a link left pointing at itself after a move) given to
`podtax parse`, `podtax import` or `podtax up --data-dir`: Python 3.11's Path.resolve() raises RuntimeError
('Symlink loop from ...') on it, which ended each command in a traceback (exit 1). Each now names the file and
the loop, as for any file it cannot open. Run as `podtax` (the real entry point)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PODTAX = str(Path(sys.executable).with_name("podtax"))


def _podtax(tmp_path: Path, *args: str) -> tuple[int, list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    env.update(PODTAX_NATS_URL="nats://127.0.0.1:9", PODTAX_CLI_TIMEOUT="2", PODTAX_DATA_DIR=str(tmp_path / "d"))
    proc = subprocess.run([PODTAX, *args], capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env,
                          stdin=subprocess.DEVNULL)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    return proc.returncode, proc.stderr.strip().splitlines()


@pytest.fixture
def loop(tmp_path: Path) -> str:
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    return "a"


def test_parse_names_the_loop(tmp_path: Path, loop: str) -> None:
    rc, err = _podtax(tmp_path, "parse", loop)
    assert rc == 1, err  # a log it cannot read: its FAILED line, as for one without read permission
    assert "1 of 1 file(s) failed to parse" in err[-1]


def test_parse_json_names_the_loop(tmp_path: Path, loop: str) -> None:
    proc = subprocess.run([PODTAX, "parse", "--json", loop], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)
    assert "Traceback" not in proc.stderr and proc.returncode == 1, proc.stderr
    assert "Too many levels of symbolic links" in proc.stdout, proc.stdout


def test_import_of_a_manifest_that_is_a_loop_is_one_line(tmp_path: Path, loop: str) -> None:
    rc, err = _podtax(tmp_path, "import", "--campaign", "old", "--dry-run", loop)
    assert rc == 2 and len(err) == 1, err
    assert "cannot read a" in err[0] and "Too many levels of symbolic links" in err[0], err


def test_up_with_a_data_dir_that_is_a_loop_is_one_line(tmp_path: Path, loop: str) -> None:
    rc, err = _podtax(tmp_path, "up", "--data-dir", loop)
    assert rc == 2 and len(err) == 1, err
    assert err[0].startswith("error: --data-dir a: cannot create ") and "Too many levels of symbolic links" in err[0]
