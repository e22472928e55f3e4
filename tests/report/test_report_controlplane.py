"""Control-plane phases in the report, the workbook and the exports: CDFs per backend with the
phase definitions of podtax.phases, and Nomad's missing Bound phase said plainly."""

from __future__ import annotations

import io
from html import escape

import httpx
import openpyxl
import pytest
from podtax import phases
from podtax.cli.main import main


def test_phase_cdfs_and_definitions_in_the_report(served):
    html = httpx.get(f"{served.url}/report/cp", timeout=120).text
    stored = served.store.cursor().execute(
        "SELECT phase, backend, count(*) FROM phases WHERE campaign = 'cp' GROUP BY ALL").fetchall()
    names = sorted({p for p, _, _ in stored})
    assert html.count('<svg class="cdf"') == len(names)  # one plot per phase
    assert html.count('class="cdf-line"') == len(stored)  # one line per phase and backend
    for _phase, backend, n in stored:
        assert f"{escape(backend)} (n={n})" in html
    for p in names:
        assert escape(phases.definition("volume-churn", p)) in html
    assert escape(phases.absent_reason("volume-churn", "nomad", "bound")) in html


def test_phases_sheet_and_export(served, tmp_path):
    body = httpx.get(f"{served.url}/api/campaigns/cp/export.xlsx", timeout=120).content
    ws = openpyxl.load_workbook(io.BytesIO(body))["phases"]
    rows = list(ws.iter_rows(min_row=2, values_only=True))
    con = served.store.cursor()
    want = con.execute("SELECT node, test, params_key, backend, phase, latency_s * 1000 FROM phases "
                       "WHERE campaign = 'cp' ORDER BY ALL").fetchall()
    assert [r[:5] for r in sorted(rows)] == [w[:5] for w in sorted(want)]
    assert [r[5] for r in sorted(rows)] == pytest.approx([w[5] for w in sorted(want)], rel=1e-13)
    assert main(["export", "cp", "--parquet", str(tmp_path), "--api", served.url]) == 0
    f = (tmp_path / "phases.parquet").as_posix()
    assert con.execute(f"SELECT count(*) FROM ((SELECT * FROM phases WHERE campaign = 'cp') "
                       f"EXCEPT ALL (SELECT * FROM '{f}'))").fetchone()[0] == 0
    assert con.execute(f"SELECT count(*) FROM '{f}'").fetchone()[0] == len(want)
