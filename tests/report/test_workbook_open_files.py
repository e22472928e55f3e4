"""The workbook of a campaign with more nodes than the analyzer may open files. openpyxl's write-only sheets each
hold a temporary file open until the workbook is saved, and there is a sheet per node: under `ulimit -n 256` a
campaign of 300 nodes answered 500 ('[Errno 24] Too many open files'). Now each sheet is closed once written. The
analyzer app (TestClient) runs in a child process given a low open-file limit, over a real DuckDB file."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import openpyxl

from tests.analysis.analysis_synth import CellSpec, SideSpec, insert_cells, open_db

NODES = 200
OPEN_FILES = 128  # the child's limit: well under a sheet per node, well over what the analyzer holds otherwise
CHILD = """
import sys
from pathlib import Path
from fastapi.testclient import TestClient
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

store = Store(Path(sys.argv[1]))
resp = TestClient(create_app(store), raise_server_exceptions=False).get("/api/campaigns/wide/export.xlsx")
Path(sys.argv[2]).write_bytes(resp.content)
store.close()
print(resp.status_code)
"""
PARTS_CHILD = """
import sys
from pathlib import Path
from podtax_analyzer import duckcon
from podtax_analyzer.report_data import load_report_data
from podtax_analyzer.workbook import write_workbook

con = duckcon.connect(Path(sys.argv[1]), read_only=True)
Path(sys.argv[2]).write_bytes(write_workbook(load_report_data(con, "deep"), row_limit=3))
con.close()
"""


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


def test_a_workbook_of_more_node_sheets_than_open_files_allowed_is_written(tmp_path: Path) -> None:
    con = open_db(tmp_path / "p.duckdb")
    insert_cells(con, [CellSpec(f"node-{i:03d}", SideSpec(np.array([100.0, 101.0])), SideSpec(np.array([97.0, 98.0])),
                                campaign="wide") for i in range(NODES)])
    con.close()
    done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "p.duckdb"), str(tmp_path / "wide.xlsx")],
                          capture_output=True, text=True, preexec_fn=_limit, timeout=600, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "200"), done.stderr[-2000:]
    book = openpyxl.load_workbook(tmp_path / "wide.xlsx", read_only=True)
    assert book.sheetnames == ["summary", *(f"node node-{i:03d}" for i in range(NODES)), "provenance"]
    last = book[f"node node-{NODES - 1:03d}"].iter_rows(min_row=2, values_only=True)
    assert sorted(row[6] for row in last) == [f"wide-{NODES - 1}-{side}-{k}" for side in "hk" for k in (0, 1)]


def test_a_node_of_more_parts_than_open_files_allowed_is_written(tmp_path: Path) -> None:
    """One node's 300 run rows at row_limit=3: 150 parts of one sheet, each closed as the next starts."""
    con = open_db(tmp_path / "p.duckdb")
    insert_cells(con, [CellSpec("deep", SideSpec(np.linspace(100.0, 101.0, 150)),
                                SideSpec(np.linspace(97.0, 98.0, 150)), campaign="deep")])
    con.close()
    done = subprocess.run([sys.executable, "-c", PARTS_CHILD, str(tmp_path / "p.duckdb"), str(tmp_path / "deep.xlsx")],
                          capture_output=True, text=True, preexec_fn=_limit, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    book = openpyxl.load_workbook(tmp_path / "deep.xlsx", read_only=True)
    # the summary's one-cell table goes on in "summary (2)": 3 rows leave the matrix and table no room on "summary"
    assert book.sheetnames == ["summary", "summary (2)", "node deep", *(f"node deep ({k})" for k in range(2, 151)),
                               "provenance"]
