"""The CLI finds NATS and the analyzer in the up.json `podtax up` writes (atomically) in PODTAX_DATA_DIR. One that
is not a JSON object (a list, broken JSON: edited, or another program's) ended every command reading it in an
AttributeError traceback (a list), or was ignored for the defaults, so the CLI looked for NATS at 127.0.0.1:4222
and advised setting PODTAX_DATA_DIR, which was set (audit hD). Now one line naming the file, exit 2. The
installed `podtax` entry point."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from podtax import natsserver

PODTAX = str(Path(sys.executable).with_name("podtax"))


def _podtax(data_dir: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    return subprocess.run([PODTAX, *argv], capture_output=True, text=True, timeout=60, cwd=data_dir,
                          env={**clean, "PODTAX_DATA_DIR": str(data_dir), "PODTAX_CLI_TIMEOUT": "3"})


@pytest.mark.parametrize(("text", "why"), [("[]", "a JSON array, not an object"), ("{broken", "Expecting property"),
                                           ("null", "JSON null, not an object")])  # it said 'a JSON NoneType'
@pytest.mark.parametrize("command", [["results"], ["campaign", "status", "quick"]])
def test_a_damaged_up_record_is_one_line(tmp_path: Path, text: str, why: str, command: list[str]) -> None:
    (tmp_path / "up.json").write_text(text)
    proc = _podtax(tmp_path, *command)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{tmp_path / 'up.json'} is not the record podtax up writes ({why}" in proc.stderr, proc.stderr


@pytest.mark.parametrize("command", [["report", "demo"], ["export", "demo", "--xlsx", "out.xlsx"]])
def test_a_damaged_up_record_is_moot_for_an_analyzer_given_with_api(tmp_path: Path, command: list[str]) -> None:
    """The token lookup read up.json even for an analyzer named with --api: a stray damaged record stopped the
    command (exit 2, 'remove it'), though nothing was taken from it. Now the analyzer given is asked."""
    (tmp_path / "up.json").write_text("[]")
    proc = _podtax(tmp_path, *command, "--api", f"http://127.0.0.1:{natsserver.free_port()}")
    assert proc.returncode == 1, proc.stderr
    assert "cannot reach the analyzer" in proc.stderr and "up.json" not in proc.stderr, proc.stderr
