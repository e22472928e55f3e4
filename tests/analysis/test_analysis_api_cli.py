"""HTTP routes (FastAPI TestClient over a real DuckDB file) and `podtax report` (via the CLI's main)."""

from __future__ import annotations

import json

import duckdb
import httpx
import pytest
from analysis_synth import fixture_campaign, insert_cells
from fastapi import FastAPI
from fastapi.testclient import TestClient
from podtax.cli import report as report_cli
from podtax.cli.main import main
from podtax_analyzer.api_analysis import router

REQUIRED = {"node", "test", "params", "metric", "n_host", "n_pod", "host_tool_version", "pod_tool_version", "ratio",
            "ci_low", "ci_high", "p_value", "verdict", "flags"}


class FakeStore:
    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con

    def cursor(self) -> duckdb.DuckDBPyConnection:
        return self.con.cursor()


@pytest.fixture
def client(con):
    insert_cells(con, fixture_campaign())
    app = FastAPI()
    app.state.store = FakeStore(con)
    app.include_router(router)
    return TestClient(app)


def test_campaigns(client):
    rows = client.get("/api/campaigns").json()
    ok = sum(len(c.host.values) + len(c.pod.values) for c in fixture_campaign())
    assert rows == [{"name": "synthetic", "runs_ok": ok, "runs_failed": 2, "cells": 10, "runs": ok + 2,
                     "runs_imported": 0, "first_run_at": rows[0]["first_run_at"],
                     "last_run_at": rows[0]["last_run_at"]}]


def test_comparisons_and_cells(client):
    rep = client.get("/api/campaigns/synthetic/comparisons", params={"threshold": 0.02, "correction": "bh"}).json()
    assert rep["threshold"] == 0.02 and rep["correction"] == "bh" and len(rep["cells"]) == 10
    assert all(set(c) >= REQUIRED for c in rep["cells"])
    cell = rep["cells"][0]
    raw = client.get(f"/api/cells/{cell['id']}").json()
    assert len(raw["runs"]) == cell["n_host"] + cell["n_pod"]
    assert client.get("/api/cells/ffffffffffff").status_code == 404
    assert client.get("/api/campaigns/nope/comparisons").status_code == 404
    assert client.get("/api/campaigns/synthetic/comparisons", params={"correction": "x"}).status_code == 422


def test_scores_route(client):
    scores = client.get("/api/scores", params={"node": "node-e", "env": "kubernetes"}).json()
    assert len(scores) == 1 and scores[0]["n"] == 96


def test_openapi_schema_is_typed(client):
    spec = client.get("/openapi.json").json()
    for path in ("/api/campaigns", "/api/campaigns/{campaign}/comparisons", "/api/cells/{cell_id}", "/api/scores"):
        assert path in spec["paths"]
    assert "CampaignReport" in spec["components"]["schemas"]
    assert "CellComparison" in spec["components"]["schemas"]


def test_report_json_from_db(con, db_path, capsys):
    insert_cells(con, fixture_campaign())
    con.close()
    assert main(["report", "synthetic", "--db", str(db_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["campaign"] == "synthetic"
    assert all(set(c) >= REQUIRED for c in data["cells"])
    assert all(set(s) >= {"sentence", "cells"} for s in data["summary"])
    confounded = next(c for c in data["cells"] if c["node"] == "node-c")
    assert confounded["ratio"] is None and "CONFOUNDED" in confounded["flags"]


def test_report_terminal_from_db(con, db_path, capsys):
    insert_cells(con, fixture_campaign())
    con.close()
    assert main(["report", "synthetic", "--db", str(db_path)]) == 0
    out = capsys.readouterr().out
    for text in ("podtax report", "Flags", "CONFOUNDED", "THROTTLED", "Summary", "geometric mean", "slower"):
        assert text in out


def test_report_unknown_campaign_from_db(con, db_path, capsys):
    insert_cells(con, fixture_campaign())
    con.close()
    assert main(["report", "nope", "--db", str(db_path)]) != 0
    assert "unknown campaign" in capsys.readouterr().err


def test_report_missing_db_file(tmp_path, capsys):
    assert main(["report", "x", "--db", str(tmp_path / "missing.duckdb")]) != 0
    assert "no database file" in capsys.readouterr().err


def test_report_over_http(client, monkeypatch, capsys):
    def fake_get(url, params=None, timeout=None, headers=None):
        return client.get(httpx.URL(url).path, params=params, headers=headers)

    monkeypatch.setattr(report_cli.httpx, "get", fake_get)
    assert main(["report", "synthetic", "--api", "http://analyzer.test:8700", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["cells"]) == 10
    assert main(["report", "nope", "--api", "http://analyzer.test:8700"]) != 0
    assert "unknown campaign" in capsys.readouterr().err


def test_report_unreachable_api(capsys):
    assert main(["report", "x", "--api", "http://127.0.0.1:9"]) != 0
    assert "cannot reach the analyzer" in capsys.readouterr().err
