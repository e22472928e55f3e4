"""Control characters from the bus in the exported files, and cuts that never split an escape.

The terminal outputs and the HTML page wrote control characters as `\\xNN` (test_output_control_chars.py) and
direction marks as `\\uNNNN` (test_output_hidden_chars.py); the CSV files wrote the control characters raw: a node
`...\\x1b[2J` cleared the screen of whoever ran `cat runs.csv` (or `less -R`), a NUL ends the text for many readers,
a lone CR splits a row in some. The workbook wrote C0 controls but CR as U+FFFD, and CR, C1 controls and DEL raw.
Both now write them as event_payloads.printable does. A cut (a workbook cell at its limit, a sheet title at 31
characters) fell inside an escape and left `\\u2` in the text; it now keeps the escape whole or leaves it out."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path

import openpyxl
import pytest
from podtax.event_payloads import printable, printable_cut
from podtax_analyzer.workbook import CELL_LIMIT

from tests.report.conftest import cli_output, serve_batches
from tests.report.test_report_hostile import named_events

NODE = "node-1\x1b[2J\x00\r\x85\x7f\x1b]0;owned\x07"
UNIT = "ms\x1b[8m\x9b"
VERSION = "\r=1+1"  # a CR first: escaped, so no longer a formula's start
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # tab and newline may stay (CSV quotes them)
# its sheet's title ("node " and the name) at 31 characters is cut 3 characters into the `\u202e` escape (28 + 3)
LONG_NODE = "n" * 23 + "\u202e" + "edon"
PARTIAL = re.compile(r"[\\_](u[0-9a-f]{0,3}|x[0-9a-f]?)$")  # an escape cut short (`_` in a sheet title)


def _note(total: int) -> str:
    return f"… (cut: {total:,} characters, a cell holds {CELL_LIMIT:,})"


def _long_unit() -> str:
    """x's then U+202E's, written 45,000 characters long: its cell is cut 3 characters into an escape."""
    keep = CELL_LIMIT - len(_note(45_000))  # the note's length: the same for any 5-digit total
    unit = "x" * (keep - 3) + "\u202e" * 2_000
    assert len(_note(len(printable(unit)))) == len(_note(45_000))
    return unit


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    batches = [named_events("ctl", NODE, UNIT, VERSION), named_events("cut", LONG_NODE, _long_unit(), "1.0")]
    with serve_batches(tmp_path_factory.mktemp("ctlx"), batches) as u:
        yield u


def _csv_cells(folder: Path) -> dict[str, list[dict[str, str]]]:
    out = {}
    for path in sorted(folder.iterdir()):
        with open(path, newline="", encoding="utf-8") as f:
            out[path.stem] = list(csv.DictReader(f))
    return out


def test_csv_export_writes_control_characters_as_text(url, tmp_path: Path) -> None:
    cli_output("export", "ctl", "--csv", str(tmp_path / "csv"), "--api", url)
    raw = b"".join(p.read_bytes() for p in (tmp_path / "csv").iterdir())
    assert b"\x1b" not in raw and b"\x00" not in raw and b"\r" not in raw.replace(b"\r\n", b"")
    tables = _csv_cells(tmp_path / "csv")
    cells = [v for rows in tables.values() for row in rows for v in row.values()]
    assert [c for c in cells if CONTROL.search(c)] == []
    runs, metrics = tables["runs"], tables["metrics"]
    assert {r["node"] for r in runs} == {printable(NODE)}  # as the terminal shows it; one row each: no row split
    assert len(runs) == 16 and {m["unit"] for m in metrics} == {"ms\\x1b[8m\\x9b"}
    assert {r["tool_version"] for r in runs} == {"\\x0d=1+1"}
    assert all(float(m["value"]) > 0 for m in metrics)  # numbers stay numbers: no apostrophe


def test_workbook_writes_control_characters_as_the_other_outputs_do(url, tmp_path: Path) -> None:
    cli_output("export", "ctl", "--xlsx", str(tmp_path / "c.xlsx"), "--api", url)
    book = openpyxl.load_workbook(tmp_path / "c.xlsx")
    texts = [c.value for ws in book for row in ws.iter_rows() for c in row if isinstance(c.value, str)]
    assert [t for t in texts + book.sheetnames if CONTROL.search(t) or "\ufffd" in t] == []
    assert printable(NODE) in texts and "ms\\x1b[8m\\x9b" in texts


def test_workbook_cuts_never_split_an_escape(url, tmp_path: Path) -> None:
    cli_output("export", "cut", "--xlsx", str(tmp_path / "c.xlsx"), "--api", url)
    book = openpyxl.load_workbook(tmp_path / "c.xlsx")
    assert [t for t in book.sheetnames if PARTIAL.search(t)] == []
    assert "node " + "n" * 23 in book.sheetnames  # the node's sheet: the escape did not fit, it is left out whole
    cut = [c.value for ws in book for row in ws.iter_rows() for c in row
           if isinstance(c.value, str) and "… (cut: " in c.value]
    assert cut and all(len(t) <= CELL_LIMIT for t in cut)
    heads = [t[:t.index("… (cut: ")] for t in cut]
    assert [h[-8:] for h in heads if PARTIAL.search(h)] == []
    unit = _long_unit()
    keep = CELL_LIMIT - len(_note(len(printable(unit))))
    assert "x" * (keep - 3) + _note(len(printable(unit))) in cut  # the unit's cell: its x's, not `\\u2`


@pytest.mark.parametrize(("text", "width", "cut"), [
    ("ab\u202ecd", 4, "ab"), ("ab\u202ecd", 8, "ab\\u202e"), ("ab\u202ecd", 9, "ab\\u202ec"),
    ("a\x1bb", 3, "a"), ("a\x1bb", 5, "a\\x1b"), ("plain", 3, "pla"), ("plain", 9, "plain"),
    ("xe\u0301\u0302y", 2, "x"), ("xe\u0301\u0302y", 4, "xe\u0301\u0302"),  # a letter with its accents, or none
    ("x\ud83d\ude00y", 2, "x"), ("x\ud83d\ude00y", 3, "x\ud83d\ude00"),  # a surrogate pair (text from JSON)
    ("\U0001F600\u202e", 3, "\U0001F600"), ("", 0, ""),
])
def test_printable_cut_keeps_escapes_pairs_and_marks_whole(text: str, width: int, cut: str) -> None:
    assert printable_cut(text, width) == cut
    assert printable(text).startswith(cut) and len(cut) <= width
