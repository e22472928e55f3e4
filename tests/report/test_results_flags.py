"""`podtax results` (table and --json) shows each run's flags: runs whose log echoed other params than
their row's (PARAM_MISMATCH) were listed like any other (audit: `podtax results --campaign p9a-fio-bs-log`),
while the report withholds their cell. Real events in a real DuckDB file, the real analyzer app served
over HTTP, and the real CLI entry point."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from podtax import events
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import serve

T0 = datetime(2025, 5, 5, 8, tzinfo=UTC)
MISMATCH = "PARAM_MISMATCH: bs echoed as 64k, requested 4k"
SHORT = "SHORT: 120 of 200 events done"
RUNS = {  # run id: flags
    "clean": [],
    "mismatch": [MISMATCH],
    "two-flags": [MISMATCH, SHORT],
}


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("results") / "podtax.duckdb")
    batch = []
    for i, (run_id, flags) in enumerate(RUNS.items()):
        run = events.RunSpec(run_id=run_id, campaign="flagged", node="node-1", env="kubernetes", test="fio",
                             params={"bs": "4k", "rw": "randread"}, cluster="local", attempt=1, timeout_s=600)
        start = T0 + timedelta(minutes=5 * i)
        res = events.Result(run=run, tool="fio", tool_version="fio-3.33", parser_version="1", flags=flags,
                            metrics=[events.Metric(name="read_iops", value=1000.0 + i, unit="IOPS",
                                                   higher_is_better=True)],
                            started_at=start, ended_at=start + timedelta(seconds=10))
        batch.append(events.result(res, "test"))
    store.write_batch(batch)
    with serve(create_app(store)) as served:
        yield served
    store.close()


def test_results_json_carries_each_runs_flags(url, monkeypatch, capsys):
    monkeypatch.setenv("PODTAX_API_URL", url)
    assert main(["results", "--campaign", "flagged", "--json"]) == 0
    rows = {r["run_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert {k: r["flags"] for k, r in rows.items()} == RUNS


@pytest.mark.parametrize(("run_id", "shown"), [("clean", ""), ("mismatch", "PARAM_MISMATCH"),
                                               ("two-flags", "PARAM_MISMATCH SHORT")])
def test_the_results_table_names_each_runs_flags(url, monkeypatch, capsys, run_id, shown):
    monkeypatch.setenv("PODTAX_API_URL", url)
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["results", "--campaign", "flagged"]) == 0
    out = capsys.readouterr().out
    value = f"{1000 + list(RUNS).index(run_id):,.2f} IOPS"
    (row,) = [line for line in out.splitlines() if value in line]
    assert row.rstrip(" │┃|").endswith(shown if shown else value), row
    assert f"- {MISMATCH}" in out and f"- {SHORT}" in out and "2 of 3 runs carry flags" in out
