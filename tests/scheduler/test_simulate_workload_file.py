"""A workload file that is not UTF-8 is one clear error (exit 2), not a UnicodeDecodeError traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from podtax_scheduler.simulate_cli import read_workload


def test_binary_workload_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "workload.yaml"
    path.write_bytes(b"duration_s: 60\n\xaf\xff\x00 garbage\n")
    with pytest.raises(typer.Exit) as caught:
        read_workload(path)
    assert caught.value.exit_code == 2
    assert "is not UTF-8 text" in capsys.readouterr().err


def test_a_yaml_error_is_one_line_with_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "workload.yaml"
    path.write_text("duration_s: 60\nclasses: [\n")
    with pytest.raises(typer.Exit) as caught:
        read_workload(path)
    assert caught.value.exit_code == 2
    lines = capsys.readouterr().err.strip().splitlines()  # PyYAML's message took 5, with a caret
    assert len(lines) == 1 and f"the workload {path}:3: not valid YAML: " in lines[0]
