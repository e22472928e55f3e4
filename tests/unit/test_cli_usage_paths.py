"""An option given without its value names the sub-command whose help documents it: click raises
that error without a context, and the line used to say `podtax: ... Try 'podtax --help'`."""

from __future__ import annotations

import pytest
from podtax.cli.main import main


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
