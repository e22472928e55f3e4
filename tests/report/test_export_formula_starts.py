"""Every text cell of the workbook that a spreadsheet would read as a formula once edited (a start of = + - @, a
tab or a carriage return: the CSV export's rule, exports.FORMULA_START) is a text cell with Excel's quote prefix
(audit hS). Only `=` had it: `+1+1` or `@SUM(A1)` from a forged node name was a plain text cell, which Excel
turns into a formula when someone edits it (F2, Enter). Real events in a real DuckDB file, the real app."""

from __future__ import annotations

import io

import openpyxl
from fastapi.testclient import TestClient
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.test_report_hostile import result_events

STARTS = ["=1+1", "+1+1", "-1+cmd", "@SUM(A1)", "\t=2+2", "\r=3+3"]


def test_formula_like_text_cells_carry_the_quote_prefix(tmp_path) -> None:
    store = Store(tmp_path / "podtax.duckdb")
    try:
        host = [1000.0 + i for i in range(6)]
        batch = []
        for i, start in enumerate(STARTS):
            batch += result_events("evil", host, host, node=start, run_prefix=f"r{i}", tool_version=start)
        store.write_batch(batch)
        resp = TestClient(create_app(store)).get("/api/campaigns/evil/export.xlsx")
    finally:
        store.close()
    assert resp.status_code == 200
    wb = openpyxl.load_workbook(io.BytesIO(resp.content))
    cells = [c for ws in wb for row in ws.iter_rows() for c in row if isinstance(c.value, str)]
    risky = [c for c in cells if c.value[:1] in ("=", "+", "-", "@", "\t", "\r")]
    # kept as written (a CR first is written `\\x0d`, as every output writes control characters: text, no formula) ...
    assert {c.value for c in risky} >= set(STARTS) - {"\r=3+3"} and "\\x0d=3+3" in {c.value for c in cells}
    assert [c.value for c in risky if c.data_type != "s" or not c.quotePrefix] == []  # ... as text, prefixed
