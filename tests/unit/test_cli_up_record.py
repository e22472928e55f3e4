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

PODTAX = str(Path(sys.executable).with_name("podtax"))


@pytest.mark.parametrize(("text", "why"), [("[]", "a JSON list, not an object"), ("{broken", "Expecting property")])
@pytest.mark.parametrize("command", [["results"], ["campaign", "status", "quick"]])
def test_a_damaged_up_record_is_one_line(tmp_path: Path, text: str, why: str, command: list[str]) -> None:
    (tmp_path / "up.json").write_text(text)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    proc = subprocess.run([PODTAX, *command], capture_output=True, text=True, timeout=60,
                          env={**clean, "PODTAX_DATA_DIR": str(tmp_path), "PODTAX_CLI_TIMEOUT": "3"})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{tmp_path / 'up.json'} is not the record podtax up writes ({why}" in proc.stderr, proc.stderr
