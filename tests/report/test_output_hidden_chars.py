"""Direction and zero-width characters from the bus in every output (event_payloads.HIDDEN): a store written before
names were checked holds a node `node-1\\u202e2-edon`, which a terminal, a browser or a spreadsheet shows as
`node-1node-2` (U+202E reverses what follows: the Trojan Source attack), so one node's figures read as another's.
Control characters were written as `\\xNN` (test_output_control_chars.py); these were printed as they were. Now
each is written as `\\uNNNN` in the terminal outputs, the HTML page and its plots, the CSV files and the workbook."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import openpyxl
import pytest
from podtax import events
from podtax.event_payloads import HIDDEN_CHARS

from tests.report.conftest import cli_output, serve_batches
from tests.report.test_report_hostile import T0, named_events

NODE = "node-1\u202e2-edon\u200b"  # reads as node-1node-2
UNIT = "ms\u2066\ufeff"
SHOWN = "node-1\\u202e2-edon\\u200b"


def _hostile(campaign: str, t0=T0) -> list[events.Envelope]:
    return named_events(campaign, NODE, UNIT, "1.0\u061c\u2069", t0)


def _hidden(text: str) -> list[str]:
    return [c for c in text if c in HIDDEN_CHARS]


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    batches = [_hostile("bidi"), _hostile("bidi2", T0 + timedelta(days=1))]
    with serve_batches(tmp_path_factory.mktemp("bidi"), batches) as u:
        yield u


@pytest.mark.parametrize("argv", [("report", "bidi"), ("report", "bidi", "--all-metrics"),
                                  ("compare", "bidi", "bidi2"), ("results", "--campaign", "bidi"), ("scores",)])
def test_terminal_outputs_write_direction_and_zero_width_characters_as_text(url, argv, monkeypatch):
    monkeypatch.setenv("PODTAX_API_URL", url)
    out = cli_output(*argv)
    assert _hidden(out) == [], out
    assert "\\u202e" in out.replace("\n", "")  # shown, as text


def test_html_page_writes_them_as_text(url, tmp_path: Path):
    cli_output("report", "bidi", "--html", str(tmp_path / "r.html"), "--api", url)
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert _hidden(page) == []
    assert SHOWN in page and "ms\\u2066\\ufeff" in page


def test_csv_and_workbook_exports_write_them_as_text(url, tmp_path: Path):
    cli_output("export", "bidi", "--csv", str(tmp_path / "csv"), "--api", url)
    cells: list[str] = []
    for path in sorted((tmp_path / "csv").iterdir()):
        with open(path, newline="", encoding="utf-8") as f:
            cells += [c for row in csv.reader(f) for c in row]
    assert [c for c in cells if _hidden(c)] == []
    assert SHOWN in cells and "ms\\u2066\\ufeff" in cells  # runs' node, metrics' unit
    cli_output("export", "bidi", "--xlsx", str(tmp_path / "b.xlsx"), "--api", url)
    book = openpyxl.load_workbook(tmp_path / "b.xlsx")
    texts = [c.value for ws in book for row in ws.iter_rows() for c in row if isinstance(c.value, str)]
    assert [t for t in texts + book.sheetnames if _hidden(t)] == []
    assert any(SHOWN in t for t in texts)
