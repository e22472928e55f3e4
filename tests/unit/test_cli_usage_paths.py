"""An option given without its value names the sub-command whose help documents it: click raises
that error without a context, and the line used to say `podtax: ... Try 'podtax --help'`."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.cli.main import main
from podtax.natsserver import free_port


@pytest.mark.parametrize(("argv", "path"), [
    (["parse", "--tool"], "podtax parse"),
    (["results", "--limit"], "podtax results"),
    (["campaign", "status", "demo", "--timeout"], "podtax campaign status"),
    (["export", "demo", "--csv"], "podtax export"),
])
def test_missing_option_value_names_the_subcommand(argv: list[str], path: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"{path}: option '{argv[-1]}' requires an argument")
    assert lines[0].endswith(f"Try '{path} --help'.")


@pytest.mark.parametrize("option", ["--csv", "--parquet", "--xlsx"])
def test_an_empty_export_path_is_refused_not_taken_for_the_current_folder(option: str, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """typer made `--csv ""` (an unset shell variable) Path("."): the export went on to write its tables into the
    current folder (here: asked the analyzer, exit 1). Now one line, exit 2, before the analyzer is asked."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PODTAX_API_URL", f"http://127.0.0.1:{free_port()}")
    assert main(["export", "demo", option, ""]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and f"'{option}': the path is empty" in lines[0], lines
    assert list(tmp_path.iterdir()) == []
