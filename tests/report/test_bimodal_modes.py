"""A BIMODAL side shows its two modes where its median would be: the audit's planted host side ran 6 runs near
128.3 and 6 near 182.6 events/s, and the table, the JSON, the workbook and `podtax scores` showed one median,
155.4, that no run came near. Real result events in a real DuckDB file; the JSON, the HTML page, the workbook
and the CSV from the real analyzer app, the terminal table and the scores from the real CLI."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

import openpyxl
import pytest
from fastapi.testclient import TestClient
from podtax import events
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store
from podtax_analyzer.workbook import COMPARISON_HEADERS

from tests.analysis.analysis_synth import sysbench_results
from tests.report.conftest import serve

LOW = [128.0, 128.2, 128.3, 128.3, 128.4, 128.6]
HIGH = [182.3, 182.5, 182.6, 182.6, 182.7, 182.9]
HOST = [v for pair in zip(LOW, HIGH, strict=True) for v in pair]  # interleaved: two modes, no drift
POD = [180.0 + 0.3 * (i % 4) for i in range(12)]
MODES = "128.3 (n=6) | 182.6 (n=6)"


def _events() -> list[events.Envelope]:
    # recent: the scores are within the scheduler's TTL
    return sysbench_results("bimodal", HOST, POD, node="node-a", t0=datetime.now(UTC) - timedelta(hours=2))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("bimodal") / "podtax.duckdb")
    s.write_batch(_events())
    yield s
    s.close()


def test_a_bimodal_side_shows_its_modes_in_every_output(store, tmp_path: Path, capsys, monkeypatch):
    client = TestClient(create_app(store))
    (cell,) = client.get("/api/campaigns/bimodal/comparisons").json()["cells"]
    assert "BIMODAL" in cell["flags"]
    # the median stays (between the modes, near no run); the modes are beside it
    assert cell["host_median"] == pytest.approx(155.45) and cell["host_modes"] == MODES
    assert cell["pod_modes"] is None and cell["pod_median"] == pytest.approx(180.45)

    html = client.get("/report/bimodal").text
    assert f"host modes {MODES} (median 155.4, between the modes)" in html and "pod median 180.4" in html
    assert f"<td>{MODES}</td>" in html, "the full table shows the modes in the median's column"

    ws = openpyxl.load_workbook(io.BytesIO(client.get("/api/campaigns/bimodal/export.xlsx").content))["summary"]
    rows = [list(r) for r in ws.iter_rows(values_only=True)]
    at = next(i for i, r in enumerate(rows) if list(r[:len(COMPARISON_HEADERS)]) == COMPARISON_HEADERS)
    row = dict(zip(COMPARISON_HEADERS, rows[at + 1], strict=False))
    assert row["baseline modes (BIMODAL)"] == MODES and row["candidate modes (BIMODAL)"] is None
    assert row["baseline median (unit)"] == pytest.approx(155.45)

    monkeypatch.setenv("COLUMNS", "200")
    with serve(create_app(store)) as url:
        assert main(["report", "bimodal", "--api", url]) == 0
        table = capsys.readouterr().out
        assert main(["export", "bimodal", "--api", url, "--csv", str(tmp_path / "csv")]) == 0
        monkeypatch.setenv("PODTAX_API_URL", url)
        assert main(["scores", "--env", "host", "--test", "sysbench-cpu", "--placements", "0"]) == 0
        scores = capsys.readouterr().out
    assert f"12 · {MODES}" in table and "12 · 180.4" in table, table
    assert "155.4" not in table and "155.5" not in table, table

    (exported,) = csv.DictReader((tmp_path / "csv" / "comparisons.csv").open())
    assert exported["host_modes"] == MODES and exported["pod_modes"] == ""

    line = next(x for x in scores.splitlines() if "node-a" in x)
    assert "155.4 (runs in 2 modes)" in line and "ignored: flagged BIMODAL" in line, scores


def test_the_workbook_gives_a_bimodal_sides_modes_as_numbers(store, tmp_path: Path) -> None:
    """The workbook held the modes only as text ("128.3 (n=6) | 182.6 (n=6)"), nothing a spreadsheet can compute
    with; each side's modes are now also numbers: each mode's median and runs, low first (empty for one mode)."""
    book = tmp_path / "bimodal.xlsx"
    with serve(create_app(store)) as url:
        assert main(["export", "bimodal", "--api", url, "--xlsx", str(book)]) == 0
    rows = [list(r) for r in openpyxl.load_workbook(book)["summary"].iter_rows(values_only=True)]
    head = next(r for r in rows if r and r[0] == "node" and "verdict" in r)
    row = dict(zip(head, rows[rows.index(head) + 1], strict=True))
    assert row["baseline modes (BIMODAL)"] == MODES  # the readable column stays
    numbers = [row[f"baseline mode {k} {what}"] for k in (1, 2) for what in ("median (unit)", "runs")]
    assert numbers == [pytest.approx(128.3), 6, pytest.approx(182.6), 6], row
    assert all(isinstance(v, int | float) for v in numbers), numbers
    assert [row[f"candidate mode {k} {what}"] for k in (1, 2) for what in ("median (unit)", "runs")] == [None] * 4
