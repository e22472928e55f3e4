"""The workbook's matrix has a column per node after four of labels, and a sheet holds Excel's 16,384 columns:
openpyxl wrote columns past the last without a word and raised past column 18,278 (ZZZ), so a campaign of 18,300
nodes answered 500 for its workbook. Now the matrix shows the first COLUMN_LIMIT - 4 nodes and says so; the
comparison table and the node sheets keep them all. The real limit takes minutes to reach, so the test passes a
small `column_limit` to the real write_workbook over a real DuckDB file."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import openpyxl
from podtax_analyzer import duckcon
from podtax_analyzer.report_data import load_report_data
from podtax_analyzer.workbook import COLUMN_LIMIT, TABLE_TITLE, write_workbook

from tests.analysis.analysis_synth import CellSpec, SideSpec, insert_cells, open_db

NODES = [f"node-{i}" for i in range(6)]


def _summary(content: bytes) -> list[tuple]:
    """The summary's rows, each without the empty cells after its last (openpyxl pads them to the widest row)."""
    out = []
    for row in openpyxl.load_workbook(io.BytesIO(content))["summary"].iter_rows(values_only=True):
        end = max((k + 1 for k, v in enumerate(row) if v is not None), default=0)
        out.append(row[:end])
    return out


def test_a_matrix_wider_than_a_sheet_shows_the_first_nodes_and_says_so(tmp_path: Path) -> None:
    con = open_db(tmp_path / "p.duckdb")
    insert_cells(con, [CellSpec(n, SideSpec(np.array([100.0, 101.0])), SideSpec(np.array([97.0, 98.0])))
                       for n in NODES])
    con.close()
    con = duckcon.connect(tmp_path / "p.duckdb", read_only=True)
    data = load_report_data(con, "synthetic")
    whole, cut = _summary(write_workbook(data)), _summary(write_workbook(data, column_limit=7))
    con.close()
    assert whole[3] == ("test", "params", "metric", "ratio", *NODES)
    assert "The matrix shows the first" not in whole[1][0]
    assert cut[3] == ("test", "params", "metric", "ratio", *NODES[:3])
    assert cut[1][0].endswith(" The matrix shows the first 3 of the 6 nodes (a sheet holds 7 columns); the table "
                              "below and the node sheets hold them all.")
    assert len(cut[4]) == 7 and all(isinstance(v, float) for v in cut[4][4:])  # the ratios of the 3 nodes shown
    table = cut.index((TABLE_TITLE,))
    assert sorted(row[0] for row in cut[table + 2:]) == NODES  # the table keeps every node


def test_the_limit_is_excels() -> None:
    assert COLUMN_LIMIT == 16_384
