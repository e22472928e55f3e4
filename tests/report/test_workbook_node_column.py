"""Every row of a node sheet names its node (the last column, "node"). A sheet title is cut to 31 characters and
made unique, and a node's runs beyond a sheet go on in "node x (2)"..., so a title can name another node: nodes x,
"x (2)" and "X (3)" at a row limit of 5 gave "node x (2)" holding x's runs, "node x (2)~2" those of "x (2)" and
"node x (3)~2" x's again, and two long names cut to one prefix likewise; the sheets had no node column, so a reader
credited runs to the wrong node. Real write_workbook with a small row_limit over a real DuckDB file."""

from __future__ import annotations

import io
from collections import defaultdict
from pathlib import Path

import numpy as np
import openpyxl
from podtax_analyzer import duckcon
from podtax_analyzer.report_data import load_report_data
from podtax_analyzer.workbook import RUN_HEADERS, write_workbook

from tests.analysis.analysis_synth import CellSpec, SideSpec, insert_cells, open_db

NAMES = ["x", "x (2)", "X (3)", "a" * 22 + "bcde", "a" * 22 + "bcdZ", "n/a:b*c?[d]", "'quoted'", "short"]


def test_every_row_of_every_node_sheet_names_its_node_whatever_the_sheet_title(tmp_path: Path) -> None:
    con = open_db(tmp_path / "p.duckdb")
    rng = np.random.default_rng(5)
    insert_cells(con, [CellSpec(n, SideSpec(rng.normal(100, 1, 2 if n == "short" else 7)),
                                SideSpec(rng.normal(97, 1, 2 if n == "short" else 7)), metric=m)
                       for n in NAMES for m in ("events_per_sec", "latency_avg_ms")])
    runs: dict[str, set[str]] = defaultdict(set)
    for node, run_id in con.execute("SELECT node, run_id FROM runs").fetchall():
        runs[node].add(run_id)
    con.close()
    con = duckcon.connect(tmp_path / "p.duckdb", read_only=True)
    book = openpyxl.load_workbook(io.BytesIO(write_workbook(load_report_data(con, "synthetic"), row_limit=5)))
    con.close()
    assert RUN_HEADERS[-1] == "node"
    seen: dict[str, set[str]] = defaultdict(set)
    for title in book.sheetnames:
        if not title.startswith("node "):
            continue
        rows = list(book[title].iter_rows(values_only=True))
        assert list(rows[0]) == RUN_HEADERS, title
        assert len(rows) > 1, title  # no sheet of a header alone
        nodes = {row[-1] for row in rows[1:]}
        assert len(nodes) == 1 and nodes <= set(NAMES), (title, nodes)  # one node per sheet, named in every row
        node = nodes.pop()
        assert {row[6] for row in rows[1:]} <= runs[node], (title, node)  # and they are that node's runs
        seen[node] |= {row[6] for row in rows[1:]}
    assert seen == runs  # every run of every node, under its own name
    # every node's first sheet is titled after it: a part of x does not take the title of the node "x (2)"
    for node, title in (("x", "node x"), ("x (2)", "node x (2)"), ("X (3)", "node X (3)")):
        assert {row[-1] for row in book[title].iter_rows(min_row=2, values_only=True)} == {node}, title
