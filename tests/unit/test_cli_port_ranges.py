"""Ports outside 0-65535 are usage mistakes (one line, exit 2) before anything starts; `podtax kubesim
--port 99999` used to end in an OverflowError traceback from bind(), `podtax up` to start services."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PODTAX = str(Path(sys.executable).with_name("podtax"))


@pytest.mark.parametrize(("argv", "fragment"), [
    (["kubesim", "--port", "99999"], "invalid value for '--port'"),
    (["kubesim", "--port", "-1"], "invalid value for '--port'"),
    (["up", "--nats-port", "70000"], "invalid value for '--nats-port'"),
    (["up", "--api-port", "0"], "invalid value for '--api-port'"),
])
def test_port_out_of_range_is_one_line_and_exit_2(argv: list[str], fragment: str, tmp_path: Path) -> None:
    proc = subprocess.run([PODTAX, *argv, *(["--data-dir", str(tmp_path / "data")] if argv[0] == "up" else [])],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "PODTAX_NATS_URL": "nats://127.0.0.1:9"})
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert not (tmp_path / "data").exists()  # refused before `up` created anything
