"""The mistakes a user makes with `podtax campaign submit` and `podtax import` (a missing file, a folder, bad
YAML, an unknown test, a bad manifest): ONE line on stderr, exit 2, through the real entry point. Each said
why and then, on a second line, 'nothing was submitted' ('1 problem(s); nothing was imported'); now that is
the end of the one line. Several problems still get a line each and a count."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.cli.main import main

from tests.unit.test_campaign_refusals import QUICK

DEAD = "nats://127.0.0.1:9"  # never reached: refused before NATS
SUBMIT = [  # id, file name, its text (None: not made), a fragment of the line
    ("missing file", "c.yaml", None, "cannot read campaign file"),
    ("a folder", "dir", "", "Is a directory"),
    ("bad YAML", "c.yaml", "name: [a\n", "not valid YAML"),
    ("unknown test", "c.yaml", QUICK.replace("sysbench-cpu", "sysbench-cpuu"), "unknown test 'sysbench-cpuu'"),
]
IMPORT = [
    ("missing manifest", "m.csv", None, "No such file or directory"),
    ("a folder", "dir", "", "is not a regular file"),
    ("bad header", "m.csv", "file,env\n", "the header must be"),
    ("missing log", "m.csv", "file,node,env,test,params,started_at\nnope.log,n1,host,sysbench-cpu,threads=1,"
     "2024-01-01T00:00:00Z\n", "line 2: file nope.log not found"),
    ("unknown test", "m.csv", "file,node,env,test,params,started_at\nm.csv,n1,host,sysbench-cpuu,threads=1,"
     "2024-01-01T00:00:00Z\n", "line 2: unknown test 'sysbench-cpuu'"),
]


def _made(tmp_path: Path, name: str, text: str | None) -> Path:
    path = tmp_path / name
    if name == "dir":
        path.mkdir()
    elif text is not None:
        path.write_text(text)
    return path


def _one_line(argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("PODTAX_NATS_URL", DEAD)
    monkeypatch.setenv("PODTAX_CLI_TIMEOUT", "2")
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize(("name", "text", "says"), [c[1:] for c in SUBMIT], ids=[c[0] for c in SUBMIT])
def test_a_campaign_file_refused_is_one_line(name: str, text: str | None, says: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    line = _one_line(["campaign", "submit", str(_made(tmp_path, name, text))], capsys, monkeypatch)
    assert line.startswith("error: ") and says in line and line.endswith("; nothing was submitted"), line


@pytest.mark.parametrize(("name", "text", "says"), [c[1:] for c in IMPORT], ids=[c[0] for c in IMPORT])
def test_a_manifest_refused_is_one_line(name: str, text: str | None, says: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    line = _one_line(["import", str(_made(tmp_path, name, text)), "--campaign", "imp"], capsys, monkeypatch)
    assert line.startswith("error: ") and says in line and line.endswith("; nothing was imported"), line


def test_several_problems_get_a_line_each_and_a_count(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    row = "{0}.log,n1,host,sysbench-cpu,threads=1,2024-01-01T00:00:00Z\n"
    manifest = _made(tmp_path, "m.csv", "file,node,env,test,params,started_at\n" + row.format("a") + row.format("b"))
    monkeypatch.setenv("PODTAX_NATS_URL", DEAD)
    assert main(["import", str(manifest), "--campaign", "imp"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: line 2: file a.log not found (looked for {tmp_path / 'a.log'})",
        f"error: line 3: file b.log not found (looked for {tmp_path / 'b.log'})",
        "2 problem(s); nothing was imported"]
