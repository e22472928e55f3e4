"""A count's verdict word. The sentence of a count metric (errors, objects_ok, requests_per_object: unit count or
requests) says "nomad 80.0% fewer", but the JSON `verdict` said only "faster" (fewer errors is better), and the CLI
table and the HTML matrix showed "faster" for errors. `verdict` keeps its values for scripts; the new `direction`
says the sentence's word ("more" / "fewer" for a count, "faster" / "slower" otherwise, null for other verdicts),
and the CLI table, the HTML and the workbook's verdict column show it (the workbook said "faster" for fewer
errors); the CSV and Parquet exports have the `direction` column beside `verdict`. Real result events in a real
DuckDB file, the real analyzer app and the real CLI (report --json and the table)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from analysis_synth import result_event
from fastapi.testclient import TestClient
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import exported_verdicts, json_cells, serve

T0 = datetime(2025, 5, 5, 8, tzinfo=UTC)
PARAMS = {"count": 12, "concurrency": 4}
# metric: (unit, higher is better, kubernetes values, nomad values, verdict, direction)
CASES = {
    "errors": ("count", False, [5, 6, 5, 7, 6, 5, 6, 7], [1, 2, 1, 1, 2, 1, 2, 1], "faster", "fewer"),
    "objects_ok": ("count", True, [12, 11, 12, 11, 12, 11, 12, 11], [6, 7, 6, 5, 6, 7, 6, 5], "slower", "fewer"),
    "requests_per_object": ("requests", False, [2.0, 2.1, 2.0, 2.2, 2.1, 2.0, 2.1, 2.2],
                            [3.0, 3.1, 3.2, 3.0, 3.1, 3.2, 3.0, 3.1], "slower", "more"),
    "provisioned_p50_ms": ("ms", False, [100, 101, 102, 100, 101, 102, 100, 101],
                           [150, 151, 152, 150, 151, 152, 150, 151], "slower", "slower"),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("count-direction") / "podtax.duckdb")
    out = []
    for m, (metric, (unit, hib, kube, nomad, *_)) in enumerate(CASES.items()):
        for env, values in (("kubernetes", kube), ("nomad", nomad)):
            for i, v in enumerate(values):
                start = T0 + timedelta(hours=m, minutes=4 * i + (2 if env == "nomad" else 0))
                out.append(result_event(f"{metric}-{env}-{i}", "counts", "node-1", env, v, start, test="volume-churn",
                                        params=PARAMS, metric=metric, unit=unit, higher_is_better=hib,
                                        tool="podtax-controlplane", tool_version="1"))
    s.write_batch(out)
    yield s
    s.close()


def test_the_json_keeps_the_verdict_and_says_the_direction(store):
    with serve(create_app(store)) as url:
        cells = json_cells("report", "counts", "--api", url)
    assert set(cells) == set(CASES)
    for metric, (*_, verdict, direction) in CASES.items():
        c = cells[metric]
        assert (c["verdict"], c["direction"]) == (verdict, direction), (metric, c["sentence"])
        assert f"% {direction}" in c["sentence"], c["sentence"]  # the sentence's word is the field's


def test_no_direction_without_a_faster_or_slower_verdict(store):
    body = TestClient(create_app(store)).get("/api/campaigns/counts/comparisons").json()
    schema = TestClient(create_app(store)).get("/openapi.json").json()
    assert "direction" in json.dumps(schema)  # described in the API's schema
    for c in body["cells"]:
        assert (c["direction"] is None) is (c["verdict"] not in ("faster", "slower"))


def test_the_cli_table_and_the_html_say_fewer_errors(store, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    with serve(create_app(store)) as url:
        assert main(["report", "counts", "--api", url, "--all-metrics"]) == 0
    rows = {line.split()[1]: line.split()[-1] for line in capsys.readouterr().out.splitlines()
            if line.startswith("#")}  # "#1   errors   8 · 6   8 · 1   0.167 [...]   nomad 83.3% fewer   0.0028   fewer"
    assert rows == {metric: case[-1] for metric, case in CASES.items()}, rows
    html = TestClient(create_app(store)).get("/report/counts").text
    cell = next(c for c in TestClient(create_app(store)).get("/api/campaigns/counts/comparisons").json()["cells"]
                if c["metric"] == "errors")
    matrix = html.split(f'data-cell="{cell["id"]}"')[1].split("</td>")[0]
    assert '<div class="verdict">fewer</div>' in matrix, matrix
    assert "verdict: <b>fewer</b>" in html.split(f'id="cell-{cell["id"]}"')[1].split("</div>")[0]


def test_the_workbook_and_the_exports_say_fewer_errors(store, tmp_path):
    got = exported_verdicts(create_app(store), "counts", tmp_path)
    # the workbook's verdict as said ("fewer" errors); the raw exports keep the API's verdict beside its direction
    assert got == {metric: (direction, verdict, direction, direction)
                   for metric, (*_, verdict, direction) in CASES.items()}, got
