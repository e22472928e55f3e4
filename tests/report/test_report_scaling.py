"""The workbook and the HTML page of a large campaign: ReportData.place counted the campaign's clusters over every
cell at each call, and the workbook calls it per cell and per node, so a 200,000-run campaign (2,000 cells, 10
nodes) spent half its workbook's 30 s there. Counted here as passes over the cells, which must not grow with them."""

from __future__ import annotations

import numpy as np
import pytest
from analysis_synth import CellSpec, SideSpec, insert_cells, lognormal
from podtax_analyzer.html_report import render_html
from podtax_analyzer.report_data import load_report_data
from podtax_analyzer.store import Store
from podtax_analyzer.workbook import write_workbook


class CountedCells(list):
    """The report's cells, counting the passes over them."""

    passes = 0

    def __iter__(self):
        CountedCells.passes += 1
        return super().__iter__()


def _campaign(name: str, params: int) -> list[CellSpec]:
    rng = np.random.default_rng(3)
    return [CellSpec(node, SideSpec(lognormal(rng, 1000, 0.01, 6)), SideSpec(lognormal(rng, 970, 0.01, 6)),
                     params={"threads": p + 1, "time": 10}, campaign=name)
            for node in ("node-1", "node-2") for p in range(params)]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("scaling") / "podtax.duckdb")
    insert_cells(s.cursor(), _campaign("few", 2) + _campaign("many", 20))
    yield s
    s.close()


@pytest.mark.parametrize("render", [write_workbook, render_html])
def test_passes_over_the_cells_do_not_grow_with_them(store, render):
    passes = {}
    for name in ("few", "many"):
        data = load_report_data(store.cursor(), name)
        data.report.cells = CountedCells(data.report.cells)
        CountedCells.passes = 0
        render(data)
        passes[name] = CountedCells.passes
    assert len(load_report_data(store.cursor(), "many").report.cells) == 40
    assert passes["many"] == passes["few"], passes
