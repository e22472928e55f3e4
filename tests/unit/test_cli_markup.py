"""Error text is printed as it is, never read as Rich markup: `[draft]` in a file name or `[a-z0-9]` in a
pattern used to vanish, so `y/[draft]q.yaml:5` was reported as `y/q.yaml:5` and the name pattern as
`'^([-a-z0-9]{0,48})?$'` (through `main`, the real entry point)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.campaign import NAME_PATTERN
from podtax.cli.main import main

QUICK = (Path(__file__).parents[2] / "examples" / "campaigns" / "quick.yaml").read_text()

CASES = [  # id, file name, campaign text, what the first line must say ({path}: the file's path)
    ("bracketed file name", "[draft]q.yaml", QUICK.replace("test: sysbench-cpu", "test: sysbench-cpux"),
     "{path}:6: tests.0: unknown test 'sysbench-cpux'"),
    ("pattern in the message", "c.yaml", QUICK.replace("name: quick", "name: Q_bad"),
     "{path}:2: name: String should match pattern '" + NAME_PATTERN + "'"),
    ("markup-like value", "[bold]c.yaml", QUICK.replace("name: quick", "name: '[red]x[/red]'"),
     "{path}:2: name: String should match pattern"),
]


@pytest.fixture(autouse=True)
def _dead_nats(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", "nats://127.0.0.1:9")
    monkeypatch.setenv("PODTAX_CLI_TIMEOUT", "2")
    monkeypatch.setenv("PODTAX_DATA_DIR", str(tmp_path))


@pytest.mark.parametrize(("name", "text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_campaign_error_keeps_its_brackets(name: str, text: str, expected: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert main(["campaign", "submit", "--dry-run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.splitlines()[0].startswith("error: " + expected.replace("{path}", str(path))), err


def test_fail_keeps_the_brackets_of_a_path(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODTAX_API_URL", "http://127.0.0.1:9")
    target = tmp_path / "[x]"
    target.mkdir()
    assert main(["export", "demo", "--xlsx", str(target)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [f"error: {target} is a folder; give a file name"]
