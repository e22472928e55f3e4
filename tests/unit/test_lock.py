"""The dependency lock: it satisfies every pyproject, every install uses it, and images get their part."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("podtax_lock", ROOT / "tools" / "lock.py")
lock = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
assert spec and spec.loader
sys.modules["podtax_lock"] = lock
spec.loader.exec_module(lock)

SAMPLE = """\
# generated
pkg-a==1.0 \\
    --hash=sha256:aaaa
    # via podtax-runner
pkg-b==2.0 \\
    --hash=sha256:bbbb
    # via pkg-a, -r requirements-dev.txt
pkg-c==3.0 \\
    --hash=sha256:cccc
    # via -r requirements-dev.txt
setuptools==75.0 \\
    --hash=sha256:dddd
    # via -r requirements.in
"""


def test_the_committed_lock_satisfies_every_pyproject() -> None:
    found = lock.problems(lock.parse((ROOT / "requirements.lock").read_text()),
                          [ROOT / p for p in lock.PACKAGES if (ROOT / p).is_dir()])
    assert found == []


def test_every_locked_entry_is_pinned_with_hashes() -> None:
    text = (ROOT / "requirements.lock").read_text()
    entries = lock.parse(text)
    assert len(entries) > 30
    for entry in entries.values():
        assert any("--hash=sha256:" in line for line in entry.lines), entry.name
    assert not re.search(r"^-e ", text, re.M), "editable podtax packages belong in the Makefile, not the lock"


def test_check_reports_a_range_the_lock_does_not_satisfy(tmp_path: Path) -> None:
    pkg = tmp_path / "svc"
    pkg.mkdir()
    (pkg / "pyproject.toml").write_text('[project]\nname = "svc"\nversion = "0"\n'
                                        'dependencies = ["pkg-a>=2", "pkg-z", "podtax"]\n')
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "pyproject.toml").write_text('[project]\nname = "podtax"\nversion = "0"\n')
    found = lock.problems(lock.parse(SAMPLE), [pkg, tmp_path / "shared"])
    assert any("pkg-a>=2 but the lock pins pkg-a==1.0" in p for p in found)
    assert any("pkg-z is not in the lock" in p for p in found)
    assert not any("podtax" in p.split(":")[1] for p in found)  # local packages need no lock entry


def test_subset_follows_via_annotations() -> None:
    entries = lock.parse(SAMPLE)
    names = [e.name for e in lock.subset(entries, {"podtax-runner"})]
    assert names == ["pkg-a", "pkg-b"]  # pkg-c is a dev tool only
    with_build = [e.name for e in lock.subset(entries, {"podtax-runner"}, {"setuptools"})]
    assert with_build == ["pkg-a", "pkg-b", "setuptools"]


def test_subset_command_prints_installable_lines(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "lock.py"), "subset", str(ROOT / "requirements.lock"),
                          str(ROOT / "shared"), str(ROOT / "services" / "runner"), "setuptools"],
                         capture_output=True, text=True, check=True).stdout
    pins = dict(re.findall(r"^([a-z0-9-]+)==(\S+)", out, re.M))
    assert {"kubernetes", "pydantic", "nats-py", "setuptools"} <= pins.keys()
    assert "pytest" not in pins and "scipy" not in pins and "duckdb" not in pins


@pytest.mark.parametrize(("argv", "says"), [
    (["check", "{tmp}/none.lock"], "cannot read {tmp}/none.lock (No such file or directory)"),
    (["check", "{tmp}"], "cannot read {tmp} (Is a directory)"),
    (["check", "{tmp}/latin1.lock"], "cannot read {tmp}/latin1.lock (not UTF-8 text)"),
    (["subset", "{tmp}/none.lock", "shared"], "cannot read {tmp}/none.lock (No such file or directory)"),
    (["subset", str(ROOT / "requirements.lock"), "{tmp}"], "cannot read {tmp}/pyproject.toml (No such file"),
])
def test_a_file_it_cannot_read_is_one_line_and_exit_2(argv: list[str], says: str, tmp_path: Path) -> None:
    """Each was a traceback (FileNotFoundError, IsADirectoryError, UnicodeDecodeError), exit 1 (hU, session 56)."""
    (tmp_path / "latin1.lock").write_bytes(b"caf\xe9==1.0\n")
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "lock.py"), *(a.format(tmp=tmp_path) for a in argv)],
                          capture_output=True, text=True, timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("lock.py: " + says.format(tmp=tmp_path)), lines[0]


def test_make_and_ci_install_from_the_lock() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "--require-hashes --no-deps -r requirements.lock" in makefile
    assert re.search(r"^lock:", makefile, re.M)
    assert "make test" in (ROOT / ".ci" / "run").read_text()
