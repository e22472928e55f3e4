"""The matrix colours of the HTML report and the workbook: each follows the metric's direction, both agree, and a
cell with no verdict is neutral and says so.

An audit found the workbook's matrix on a fixed colour scale (0.9 vermillion, 1.1 blue) whatever the metric:
a pod round-trip time 20% longer (ratio 1.2, lower is better, verdict slower) was painted blue, "candidate
better", while the HTML cell was vermillion; and a cell with 2 runs a side (or a drifting side), whose verdict
is withheld, was painted like a confirmed slowdown in the HTML and shown as a bare ratio in the workbook. Each
case stores runs in a real DuckDB file; the page and the workbook are written by the real CLI from the real
analyzer app."""

from __future__ import annotations

import re
import sys
from html import unescape
from pathlib import Path

import numpy as np
import openpyxl
import pytest
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.html_report import WITHHELD
from podtax_analyzer.store import Store
from podtax_analyzer.workbook import COMPARISON_HEADERS, NO_VERDICT

from tests.report.conftest import serve

sys.path.insert(0, str(Path(__file__).parents[1] / "analysis"))
from analysis_synth import CellSpec, SideSpec, insert_cells, lognormal  # noqa: E402

# node: (metric, higher is better, pod/host factor, runs a side, the verdict, its flags, the colour it must have)
CASES = {
    "latency-pod-worse": ("rtt_p50_us", False, 1.2, 12, "slower", "", "vermillion"),
    "latency-pod-better": ("rtt_p50_us", False, 0.8, 12, "faster", "", "blue"),
    "throughput-pod-worse": ("events_per_sec", True, 0.8, 12, "slower", "", "vermillion"),
    "throughput-pod-better": ("events_per_sec", True, 1.2, 12, "faster", "", "blue"),
    # the verdict is withheld, so no verdict's colour whatever the ratio (audit: painted as a confirmed slowdown)
    "too-few-runs": ("events_per_sec", True, 0.9, 2, "inconclusive", "INSUFFICIENT", "withheld"),
    "drifting-host": ("events_per_sec", True, 0.9, 24, "inconclusive", "DRIFT", "withheld"),
}
CAMPAIGN = "colours"


def _cells() -> list[CellSpec]:
    rng = np.random.default_rng(3)
    cells = []
    for node, (metric, hib, factor, n, _, flags, _) in CASES.items():
        host = lognormal(rng, 100.0, 0.005, n)
        if flags == "DRIFT":
            host[n // 2:] *= 0.94  # the host side stepped down halfway through the campaign
        cells.append(CellSpec(node, SideSpec(host), SideSpec(lognormal(rng, 100.0 * factor, 0.005, n)),
                              test=f"t-{metric}", metric=metric, unit="us" if "rtt" in metric else "events/s",
                              higher_is_better=hib, campaign=CAMPAIGN))
    return cells


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """(the HTML page, the workbook's summary sheet) of the campaign."""
    tmp = tmp_path_factory.mktemp("colours")
    store = Store(tmp / "podtax.duckdb")
    insert_cells(store.cursor(), _cells())
    with serve(create_app(store)) as url:
        assert main(["report", CAMPAIGN, "--html", str(tmp / "r.html"), "--api", url]) == 0
        assert main(["export", CAMPAIGN, "--xlsx", str(tmp / "r.xlsx"), "--api", url]) == 0
    store.close()
    return (tmp / "r.html").read_text(), openpyxl.load_workbook(tmp / "r.xlsx")["summary"]


def html_backgrounds(html: str) -> dict[str, str]:
    """node -> the background of its matrix cell."""
    found = re.findall(r'<td class="mcell[^"]*" style="background:([^"]+)" data-cell="\w+" data-node="([^"]+)"', html)
    return {unescape(node): bg for bg, node in found}


def workbook_matrix(ws) -> dict[tuple[str, str], object]:
    """(metric column text, node) -> the matrix cell."""
    header = [c.value for c in ws[4]]
    out = {}
    for row in ws.iter_rows(min_row=5):
        if row[0].value is None:
            break
        for node, cell in zip(header[4:], row[4:], strict=False):
            if node is not None:
                out[(row[2].value, node)] = cell
    return out


def hue(colour: str) -> str:
    r, b = int(colour[-6:-4], 16), int(colour[-2:], 16)
    return "blue" if b > r else "vermillion" if r > b else "neutral"


def _row(ws, node: str, metric: str) -> dict:
    """The comparison table's row of a cell, by header."""
    row = next(r for r in ws.iter_rows(values_only=True) if r[0] == node and r[3] == metric)
    return dict(zip(COMPARISON_HEADERS, row, strict=False))


@pytest.mark.parametrize("node", sorted(CASES))
def test_matrix_colour_follows_the_metric_direction_or_says_withheld(written, node):
    html, ws = written
    metric, _, _, _, verdict, flags, colour = CASES[node]
    row = _row(ws, node, metric)
    assert (row["verdict"], row["flags"] or "") == (verdict, flags), "the case is what it claims"
    bg = html_backgrounds(html)[node]
    cell = workbook_matrix(ws)[(f"{metric} ({'us' if 'rtt' in metric else 'events/s'})", node)]
    assert cell.value == pytest.approx(row["ratio"], rel=1e-12), "the matrix keeps the ratio as a number"
    if colour == "withheld":
        assert bg == WITHHELD, (node, bg)
        td = re.search(rf'<td class="mcell withheld"[^>]*data-node="{node}".*?</td>', html).group(0)
        assert "verdict withheld" in td and f"⚑ {flags}" in td and f"{row['ratio']:.3f}" in td
        assert cell.fill.fill_type == "lightUp" and cell.fill.fgColor.rgb[-6:] == NO_VERDICT[0]
        assert cell.number_format == f'0.000" verdict withheld ({flags})"'
        return
    assert hue(bg) == colour, (node, bg)
    assert cell.fill.fill_type == "solid" and cell.number_format == "0.000"
    assert cell.fill.fgColor.rgb[-6:].lower() == bg.lstrip("#").lower(), "the workbook paints as the HTML does"
    assert hue(cell.fill.fgColor.rgb) == colour
