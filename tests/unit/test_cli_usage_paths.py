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


# each path option and argument, given "" (an unset shell variable); a later mistake in the same line (--kubelet,
# --nats-port with PODTAX_NATS_URL set) would stop the command before it did anything, had the path been taken
@pytest.mark.parametrize(("argv", "name"), [
    (["export", "demo", "--csv", ""], "--csv"),
    (["export", "demo", "--parquet", ""], "--parquet"),
    (["export", "demo", "--xlsx", ""], "--xlsx"),
    (["import", "", "--campaign", "demo", "--dry-run"], "manifest"),
    (["import", "manifest.csv", "--campaign", "demo", "--dry-run", "--root", ""], "--root"),
    (["report", "demo", "--db", ""], "--db"),
    (["report", "demo", "--html", ""], "--html"),
    (["report", "demo", "--html", "report.html", "--simulate", ""], "--simulate"),
    (["up", "--data-dir", "", "--nats-port", "1"], "--data-dir"),
    (["up", "--ready-file", "", "--nats-port", "1"], "--ready-file"),
    (["campaign", "submit", "", "--dry-run"], "file"),
    (["kubesim", "--cluster", "", "--kubelet", "?"], "--cluster"),
    (["kubesim", "--kubeconfig", "", "--kubelet", "?"], "--kubeconfig"),
    (["kubesim", "--workdir", "", "--kubelet", "?"], "--workdir"),
])
def test_an_empty_path_is_refused_not_taken_for_the_current_folder(argv: list[str], name: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """typer made `--csv ""` (an unset shell variable) Path("."): the export went on to write its tables into the
    current folder, `import --root ""` took it for the boundary of every file, `up --data-dir ""` for its data,
    `kubesim --workdir ""` for its containers' folder; others said `.` is a folder. Now one line naming the path's
    option or argument, exit 2, before anything runs."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PODTAX_API_URL", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("PODTAX_NATS_URL", f"nats://127.0.0.1:{free_port()}")
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and f"'{name}': the path is empty" in lines[0], lines
    assert list(tmp_path.iterdir()) == []
