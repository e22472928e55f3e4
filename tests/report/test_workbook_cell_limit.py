"""A workbook cell holds at most CELL_LIMIT characters; a longer string is cut and says so. The hidden characters
(U+202E...) were written as `\\uNNNN` after the cut, six characters each: 30,000 characters and 2,000 U+202E made a
cell of 42,000, which openpyxl cut at the limit on save, its '(cut: ...)' note lost."""

from __future__ import annotations

from pathlib import Path

import openpyxl
from podtax_analyzer.workbook import CELL_LIMIT, _clean


def test_a_cell_with_hidden_characters_stays_within_the_limit_and_says_it_was_cut(tmp_path: Path) -> None:
    text = "x" * 30_000 + "\u202e" * 2_000
    wb = openpyxl.Workbook()
    wb.active.cell(1, 1, _clean(text))
    wb.save(tmp_path / "w.xlsx")
    back = openpyxl.load_workbook(tmp_path / "w.xlsx").active.cell(1, 1).value
    assert len(back) <= CELL_LIMIT
    assert back.endswith(f"… (cut: {30_000 + 6 * 2_000:,} characters, a cell holds {CELL_LIMIT:,})")
    assert back.startswith("x" * 30_000 + "\\u202e") and "\u202e" not in back
