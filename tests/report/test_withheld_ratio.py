"""One rule for every flag that withholds a cell's ratio (podtax.flags.WITHHOLD_RATIO): a PARAMS_MISMATCH
cell printed "1.995, pod 99.5% faster" beside a flag saying its figures measure another cell, while a
CONFOUNDED cell showed "—". Each case stores real result events in a real DuckDB file; the JSON, the HTML
page and the workbook come from the real analyzer app, the terminal table from the real CLI."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import openpyxl
import pytest
from fastapi.testclient import TestClient
from podtax import events
from podtax.cli.main import main
from podtax.flags import BLOCKING, WITHHOLD_RATIO
from podtax_analyzer.api import create_app
from podtax_analyzer.html_report import WITHHELD
from podtax_analyzer.store import Store
from podtax_analyzer.workbook import COMPARISON_HEADERS

from tests.report.conftest import serve

T0 = datetime(2025, 1, 6, 8, tzinfo=UTC)
STEADY = [1000.0 + 3 * i for i in range(10)]
TWO_MODES = [100.9, 89.2, 99.1, 90.8, 101.0, 89.5, 98.8, 90.6, 100.3, 91.0]


def _events(campaign: str, host: list[float], *, pod_version: str = "1.0.20", host_flag: str | None = None,
            overlap: bool = False) -> list[events.Envelope]:
    """Host runs with ``host``, pod runs with half of each value (the pod would be 50.0% slower)."""
    out = []
    runs = [("host", v) for v in host] + [("kubernetes", v / 2) for v in host]
    for i, (env, value) in enumerate(runs):
        run = events.RunSpec(run_id=f"{campaign}-{i}", campaign=campaign, node=f"node-{campaign}", env=env,
                             test="sysbench-cpu", params={"threads": 1}, cluster="local", attempt=1, timeout_s=600)
        start = T0 + timedelta(minutes=0 if overlap and i == 1 else 2 * i)
        res = events.Result(run=run, tool="sysbench", parser_version="1",
                            tool_version=pod_version if env == "kubernetes" else "1.0.20",
                            metrics=[events.Metric(name="events_per_second", value=value, unit="events/s",
                                                   higher_is_better=True)],
                            flags=[host_flag] if host_flag and i == 0 else [],
                            started_at=start, ended_at=start + timedelta(seconds=10))
        out.append(events.result(res, "test"))
    return out


CASES = {
    "CONFOUNDED": dict(host=STEADY, pod_version="1.0.18"),
    "BIMODAL": dict(host=TWO_MODES),
    "OVERLAP": dict(host=STEADY, overlap=True),
    "PARAMS_MISMATCH": dict(host=STEADY, host_flag="THREADS_MISMATCH: the tool ran 2 threads, 1 were requested"),
}


def test_every_withholding_flag_has_a_case():
    assert set(CASES) == WITHHOLD_RATIO


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("withheld") / "podtax.duckdb")
    for flag, case in CASES.items():
        s.write_batch(_events(flag.lower().replace("_", "-"), **case))
    yield s
    s.close()


@pytest.mark.parametrize("flag", sorted(CASES))
def test_the_ratio_and_its_effect_are_withheld_everywhere(store, flag, capsys):
    name = flag.lower().replace("_", "-")
    client = TestClient(create_app(store))
    (cell,) = client.get(f"/api/campaigns/{name}/comparisons").json()["cells"]
    assert flag in cell["flags"] and cell["verdict"] == "inconclusive"
    withheld = ("ratio", "ci_low", "ci_high", "ci_method", "change_pct", "p_value", "p_adjusted", "hl_ratio")
    assert {k: cell[k] for k in withheld} == dict.fromkeys(withheld), flag
    assert cell["sentence"] == cell["flag_details"][flag]

    html = client.get(f"/report/{name}").text
    assert "% slower" not in html and "0.500" not in html
    assert f'<td class="mcell withheld" style="background:{WITHHELD}"' in html, "no verdict's colour in the matrix"

    ws = openpyxl.load_workbook(io.BytesIO(client.get(f"/api/campaigns/{name}/export.xlsx").content))["summary"]
    rows = [list(r) for r in ws.iter_rows(values_only=True)]
    at = next(i for i, r in enumerate(rows) if list(r[:len(COMPARISON_HEADERS)]) == COMPARISON_HEADERS)
    row = dict(zip(COMPARISON_HEADERS, rows[at + 1], strict=False))
    assert [row[k] for k in ("ratio", "CI low (95%)", "change (%)", "p adjusted")] == [None] * 4
    assert ws["E5"].value == f"withheld ({' '.join(f for f in cell['flags'] if f in BLOCKING)})", ws["E5"].value
    assert flag in ws["E5"].value and ws["E5"].fill.fill_type == "lightUp"

    with serve(create_app(store)) as url:
        assert main(["report", name, "--api", url]) == 0
    out = capsys.readouterr().out
    assert "no ratio" in out and "% slower" not in out and "0.500" not in out, out
