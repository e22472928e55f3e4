"""A workbook sheet holds at most ROW_LIMIT rows (Excel's 1,048,576). openpyxl writes any row number without a word:
a node of 1,048,600 runs (bench_comparisons.build, one cell, GET /api/campaigns/bench/export.xlsx) gave a sheet whose
last row was 1,048,601, which Excel calls damaged and repairs by dropping the rows past its last. Now a node's runs
(and the phases, and the summary's comparison table: one row a cell) go on in "node x (2)", "node x (3)"..., each
with the header row. The real limit takes minutes to
reach, so these tests pass a small `row_limit` to the real write_workbook over a real DuckDB file."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import numpy as np
import openpyxl
from podtax_analyzer import duckcon
from podtax_analyzer.report_data import ReportData, load_report_data
from podtax_analyzer.workbook import (
    COMPARISON_HEADERS,
    PHASE_HEADERS,
    ROW_LIMIT,
    RUN_HEADERS,
    TABLE_TITLE,
    sheet_title,
    write_workbook,
)

from tests.analysis.analysis_synth import CellSpec, SideSpec, insert_cells, open_db


def _rows(book: openpyxl.Workbook, titles: list[str]) -> list[tuple]:
    """The run rows of these sheets (each sheet's header checked and left out)."""
    out = []
    for title in titles:
        rows = list(book[title].iter_rows(values_only=True))
        assert list(rows[0]) == RUN_HEADERS, title
        out += rows[1:]
    return out


def _data(tmp_path: Path, metrics: tuple[str, ...] = ("events_per_sec", "latency_avg_ms"),
          nodes: tuple[str, ...] = ("n1",)) -> ReportData:
    """A cell of 6 runs a side for each node and metric (by default 24 run rows on one node)."""
    con = open_db(tmp_path / "p.duckdb")
    rng = np.random.default_rng(3)
    insert_cells(con, [CellSpec(n, SideSpec(rng.normal(100, 1, 6)), SideSpec(rng.normal(97, 1, 6)), metric=m)
                       for n in nodes for m in metrics])
    con.close()
    con = duckcon.connect(tmp_path / "p.duckdb", read_only=True)
    data = load_report_data(con, "synthetic")
    con.close()
    return data


def test_rows_that_fill_their_sheets_exactly_leave_no_empty_sheet(tmp_path: Path) -> None:
    book = openpyxl.load_workbook(io.BytesIO(write_workbook(_data(tmp_path), row_limit=13)))
    assert book.sheetnames == ["summary", "node n1", "node n1 (2)", "provenance"]  # 12 + 12 runs, no "(3)"
    assert [book[t].max_row for t in ("node n1", "node n1 (2)")] == [13, 13]


def test_the_phases_go_on_in_numbered_sheets_too(tmp_path: Path) -> None:
    phases = [{"cluster": "local", "node": "n1", "test": "kube-burner", "params": "{}", "env": "host",
               "phase": f"phase-{k}", "seconds": k / 1000.0, "caveat": "", "lower_bound": False, "upper_bound": False}
              for k in range(10)]
    book = openpyxl.load_workbook(io.BytesIO(write_workbook(dataclasses.replace(_data(tmp_path), phases=phases),
                                                            row_limit=5)))
    parts = ["phases", "phases (2)", "phases (3)"]
    assert book.sheetnames[-3:] == parts
    rows = [list(book[t].iter_rows(values_only=True)) for t in parts]
    assert [len(r) for r in rows] == [5, 5, 3] and all(list(r[0]) == PHASE_HEADERS for r in rows)
    assert [row[4] for r in rows for row in r[1:]] == [f"phase-{k}" for k in range(10)]  # every row once, in order


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
    assert parted.sheetnames == ["summary", "summary (2)", *parts, "provenance"]  # its table's second cell, too
    assert [t[-4:] for t in parts[1:]] == [" (2)", " (3)"] and all(len(t) <= 31 for t in parts)
    assert [parted[t].max_row for t in parts] == [10, 10, 7]  # the header and 9, 9, then 6 runs
    assert len(_rows(whole, [first])) == 24
    assert _rows(parted, parts) == _rows(whole, [first])  # every row once, in the same order


def test_the_limit_is_excels() -> None:
    assert ROW_LIMIT == 1_048_576


def _table(book: openpyxl.Workbook) -> tuple[list[tuple], list[str]]:
    """The summary's comparison table rows (on "summary" below its title and header, then on "summary (2)"... below
    their header row) and the sheets that hold them."""
    rows = list(book["summary"].iter_rows(values_only=True))
    at = [r[0] for r in rows].index(TABLE_TITLE)
    assert list(rows[at + 1][:len(COMPARISON_HEADERS)]) == COMPARISON_HEADERS
    table = [r[:len(COMPARISON_HEADERS)] for r in rows[at + 2:]]
    parts = [t for t in book.sheetnames if t.startswith("summary (")]
    for title in parts:
        more = list(book[title].iter_rows(values_only=True))
        assert list(more[0]) == COMPARISON_HEADERS, title
        table += more[1:]
    return table, parts


def test_the_summarys_comparison_table_goes_on_in_numbered_sheets_with_every_row(tmp_path: Path) -> None:
    """12 cells (3 nodes x 4 metrics): the summary holds 4 rows of matrix and 7 others, so at a limit of 14 rows its
    table goes on in "summary (2)" (14 rows: the header and 13) and no sheet holds more than the limit."""
    data = _data(tmp_path, ("events_per_sec", "latency_avg_ms", "latency_p95_ms", "total_time_s"), ("a", "b", "c"))
    whole = openpyxl.load_workbook(io.BytesIO(write_workbook(data)))
    parted = openpyxl.load_workbook(io.BytesIO(write_workbook(data, row_limit=14)))
    rows, parts = _table(parted)
    every, none = _table(whole)
    assert none == [] and len(every) == 12
    assert parts == ["summary (2)"] and parted.sheetnames[:2] == ["summary", "summary (2)"]
    assert [parted[t].max_row for t in ("summary", "summary (2)")] == [14, 10]  # 7 + 4 matrix + 3, then 1 + 9
    assert rows == every  # every row once, in the same order
    assert all(parted[t].max_row <= 14 for t in parted.sheetnames)


def test_a_matrix_taller_than_a_sheet_is_cut_and_says_so(tmp_path: Path) -> None:
    """4 matrix rows at a limit of 10: the matrix shows 2 of them (room for the table's title, header and a row),
    says so, and the table holds its 4 cells on "summary" and "summary (2)" (no third part), each sheet within 10
    rows."""
    data = _data(tmp_path, ("events_per_sec", "latency_avg_ms", "latency_p95_ms", "total_time_s"))
    book = openpyxl.load_workbook(io.BytesIO(write_workbook(data, row_limit=10)))
    rows, parts = _table(book)
    note = book["summary"]["A2"].value
    assert "The matrix shows its first 2 of 4 rows (a sheet holds 10 rows); the table below holds them all." in note
    assert parts == ["summary (2)"] and len(rows) == 4
    assert all(book[t].max_row <= 10 for t in book.sheetnames)
