"""A workbook sheet holds at most ROW_LIMIT rows (Excel's 1,048,576). openpyxl writes any row number without a word:
a node of 1,048,600 runs (bench_comparisons.build, one cell, GET /api/campaigns/bench/export.xlsx) gave a sheet whose
last row was 1,048,601, which Excel calls damaged and repairs by dropping the rows past its last. Now a node's runs
(and the phases) go on in "node x (2)", "node x (3)"..., each with the header row. The real limit takes minutes to
reach, so these tests pass a small `row_limit` to the real write_workbook over a real DuckDB file."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import openpyxl
from podtax_analyzer import duckcon
from podtax_analyzer.report_data import load_report_data
from podtax_analyzer.workbook import ROW_LIMIT, RUN_HEADERS, sheet_title, write_workbook

from tests.analysis.analysis_synth import CellSpec, SideSpec, insert_cells, open_db


def _rows(book: openpyxl.Workbook, titles: list[str]) -> list[tuple]:
    """The run rows of these sheets (each sheet's header checked and left out)."""
    out = []
    for title in titles:
        rows = list(book[title].iter_rows(values_only=True))
        assert list(rows[0]) == RUN_HEADERS, title
        out += rows[1:]
    return out


def test_a_node_with_more_rows_than_a_sheet_holds_goes_on_in_numbered_sheets_with_every_row(tmp_path: Path) -> None:
    node = "node-with-a-name-longer-than-a-sheet-title"
    con = open_db(tmp_path / "p.duckdb")
    rng = np.random.default_rng(3)
    insert_cells(con, [CellSpec(node, SideSpec(rng.normal(100, 1, 6)), SideSpec(rng.normal(97, 1, 6)), metric=m)
                       for m in ("events_per_sec", "latency_avg_ms")])  # 24 run rows on one node
    con.close()
    con = duckcon.connect(tmp_path / "p.duckdb", read_only=True)
    data = load_report_data(con, "synthetic")
    whole = openpyxl.load_workbook(io.BytesIO(write_workbook(data)))
    parted = openpyxl.load_workbook(io.BytesIO(write_workbook(data, row_limit=10)))
    con.close()
    first = sheet_title(f"node {node}", set())
    assert whole.sheetnames == ["summary", first, "provenance"]
    parts = [first, *(sheet_title(f"node {node}", set(), f" ({k})") for k in (2, 3))]
    assert parted.sheetnames == ["summary", *parts, "provenance"]
    assert [t[-4:] for t in parts[1:]] == [" (2)", " (3)"] and all(len(t) <= 31 for t in parts)
    assert [parted[t].max_row for t in parts] == [10, 10, 7]  # the header and 9, 9, then 6 runs
    assert len(_rows(whole, [first])) == 24
    assert _rows(parted, parts) == _rows(whole, [first])  # every row once, in the same order


def test_the_limit_is_excels() -> None:
    assert ROW_LIMIT == 1_048_576
