"""`podtax scores` names a group by its params as labels show them (podtax.param_labels), and says 'no params' only
when the cell has none: a test whose params are all empty read '[no params]' (review r1 of 3d9c3c3e, LOW).

Over a real DuckDB file; the CLI's HTTP calls are routed to FastAPI's TestClient (labelled stand-in for the
network; the routes, the database and the CLI are the real ones), as in test_scores_cli.py."""

from __future__ import annotations

import httpx
import numpy as np
from analysis_synth import CellSpec, SideSpec, insert_cells
from fastapi import FastAPI
from fastapi.testclient import TestClient
from podtax.cli import results as results_cli
from podtax.cli.main import main
from podtax_analyzer.api_analysis import router


class _Store:
    def __init__(self, con):
        self.con = con

    def cursor(self):
        return self.con.cursor()


def test_a_group_of_empty_params_has_no_brackets_and_one_without_params_says_so(con, capsys, monkeypatch) -> None:
    rng = np.random.default_rng(0)

    def cell(params: dict, campaign: str) -> None:
        insert_cells(con, [CellSpec("n1", SideSpec(rng.normal(1000, 5, 8)), SideSpec(rng.normal(990, 5, 8)),
                                    params=params, metric="events_per_second", campaign=campaign)])
        con.execute("UPDATE runs SET ended_at = now() - INTERVAL 1 HOUR")

    cell({"threads": ""}, "a")
    app = FastAPI()
    app.state.store = _Store(con)
    app.include_router(router)
    tc = TestClient(app)
    monkeypatch.setattr(results_cli.httpx, "request", lambda method, url, params=None, timeout=None, headers=None:
                        tc.request(method, httpx.URL(url).path, params=params, headers=headers))
    monkeypatch.setenv("PODTAX_API_URL", "http://analyzer.test:8700")
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["scores", "--test", "sysbench-cpu", "--placements", "0"]) == 0
    out = capsys.readouterr().out
    assert "sysbench-cpu events_per_second (" in out and "[no params]" not in out, out  # its only param is empty
    cell({}, "b")  # beside a cell without params: 'threads=' tells them apart
    assert main(["scores", "--test", "sysbench-cpu", "--placements", "0"]) == 0
    out = capsys.readouterr().out
    assert "sysbench-cpu [threads=] events_per_second (" in out, out
    assert "sysbench-cpu [no params] events_per_second (" in out, out
