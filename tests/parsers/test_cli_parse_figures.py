"""`podtax parse` shows figures as the log prints them, so a reader can check the table against the
log: counts in full and rates to the digits the tool printed (they used to be cut to 6 significant
digits: 21672955 events showed as 2.1673e+07, 7222554.38 operations/s as 7.22255e+06)."""

from __future__ import annotations

import pytest
from podtax.cli.main import main
from podtax.cli.parse import figure

MEMORY = "tests/corpus/debian12-x86_64/sysbench-memory-write-1t.log"


@pytest.mark.parametrize(("value", "shown"), [
    (21672955.0, "21672955"), (7222554.38, "7222554.38"), (12398957550.0, "12398957550"),
    (103324399.42, "103324399.42"), (1770.62, "1770.62"), (0.0, "0"), (0.12, "0.12"), (2.0005, "2.0005"),
])
def test_figure(value: float, shown: str) -> None:
    assert figure(value) == shown


def test_table_shows_the_log_figures(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(__file__.rsplit("/tests/", 1)[0])
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["parse", MEMORY]) == 0
    out = capsys.readouterr().out
    assert "21672955" in out and "7222554.38" in out
    assert "e+0" not in out
