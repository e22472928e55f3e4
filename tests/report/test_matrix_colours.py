"""The matrix colours of the HTML report and the workbook: each follows the metric's direction, and both agree.

An audit found the workbook's matrix on a fixed colour scale (0.9 vermillion, 1.1 blue) whatever the metric:
a pod round-trip time 20% longer (ratio 1.2, lower is better, verdict slower) was painted blue, "candidate
better", while the HTML cell was vermillion. Each case stores runs in a real DuckDB file; the page and the
workbook are written by the real CLI from the real analyzer app."""

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
from podtax_analyzer.store import Store

from tests.report.conftest import serve

sys.path.insert(0, str(Path(__file__).parents[1] / "analysis"))
from analysis_synth import CellSpec, SideSpec, insert_cells, lognormal  # noqa: E402

# node: (metric, higher is better, pod/host factor, the verdict, the colour it must have)
CASES = {
    "latency-pod-worse": ("rtt_p50_us", False, 1.2, "slower", "vermillion"),
    "latency-pod-better": ("rtt_p50_us", False, 0.8, "faster", "blue"),
    "throughput-pod-worse": ("events_per_sec", True, 0.8, "slower", "vermillion"),
    "throughput-pod-better": ("events_per_sec", True, 1.2, "faster", "blue"),
}
CAMPAIGN = "colours"


def _cells() -> list[CellSpec]:
    rng = np.random.default_rng(3)
    return [CellSpec(node, SideSpec(lognormal(rng, 100.0, 0.005, 12)),
                     SideSpec(lognormal(rng, 100.0 * factor, 0.005, 12)), test=f"t-{metric}", metric=metric,
                     unit="us" if "rtt" in metric else "events/s", higher_is_better=hib, campaign=CAMPAIGN)
            for node, (metric, hib, factor, _, _) in CASES.items()]


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


@pytest.mark.parametrize("node", sorted(CASES))
def test_matrix_colour_follows_the_metric_direction(written, node):
    html, ws = written
    metric, _, _, verdict, colour = CASES[node]
    assert f'data-node="{node}"' in html
    bg = html_backgrounds(html)[node]
    assert hue(bg) == colour, (node, bg)
    cell = workbook_matrix(ws)[(f"{metric} ({'us' if 'rtt' in metric else 'events/s'})", node)]
    assert cell.fill.fill_type == "solid"
    assert cell.fill.fgColor.rgb[-6:].lower() == bg.lstrip("#").lower(), "the workbook paints as the HTML does"
    assert hue(cell.fill.fgColor.rgb) == colour
    row = next(r for r in ws.iter_rows(values_only=True) if r[0] == node and r[3] == metric)
    assert row[19] == verdict  # the comparison table's verdict column
