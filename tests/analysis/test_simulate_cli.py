"""`podtax simulate` on a campaign stored in a real DuckDB file (--db), with a workload file."""

from __future__ import annotations

import json

import numpy as np
import pytest
from analysis_synth import CellSpec, SideSpec, insert_cells, lognormal, open_db
from podtax.cli.main import main

WORKLOAD = """
nodes: {cpu: "4", memory: 16Gi}
copies: 2
duration_s: 600
contention: 0.05
classes:
  - test: sysbench-cpu
    params: threads=4
    rate_per_s: 0.1
    runtime_s: 60
    requests: {cpu: "1", memory: 1Gi}
"""


@pytest.fixture
def stored(db_path, tmp_path):
    rng = np.random.default_rng(2)
    con = open_db(db_path)
    insert_cells(con, [CellSpec(n, SideSpec(lognormal(rng, 1000, 0.01, 12)), SideSpec(lognormal(rng, s, 0.01, 12)),
                                metric="events_per_second")
                       for n, s in (("fast", 1200), ("slow", 900), ("mid", 1000))])
    con.close()
    wl = tmp_path / "workload.yaml"
    wl.write_text(WORKLOAD)
    return db_path, wl


def test_simulate_json_has_every_policy_with_intervals(stored, capfd, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # the table is printed by a child process (podtax simulate runs the
    db, wl = stored                       # scheduler package's command), at this width off a terminal
    args = ["simulate", "--campaign", "synthetic", "--workload", str(wl), "--db", str(db), "--seeds", "3"]
    assert main([*args, "--json"]) == 0
    out = json.loads(capfd.readouterr().out)
    assert out["nodes"] == 6 and set(out["policies"]) == {"default", "random", "prototype", "podtax", "oracle"}
    for r in out["policies"].values():
        low, mid, high = r["mean_jct_s"][1], r["mean_jct_s"][0], r["mean_jct_s"][2]
        assert low <= mid <= high
    assert main([*args, "--json"]) == 0
    assert json.loads(capfd.readouterr().out) == out  # deterministic per seed
    assert main(args) == 0
    assert "JCT vs default" in capfd.readouterr().out


@pytest.mark.parametrize("extra,needle", [
    (["--policies", "default,bogus"], "bogus"),
    (["--seeds", "1"], "--seeds"),
])
def test_usage_mistakes_are_one_line_exit_2(stored, capfd, extra, needle):
    db, wl = stored
    assert main(["simulate", "--campaign", "synthetic", "--workload", str(wl), "--db", str(db), *extra]) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]


@pytest.mark.parametrize("text,needle", [
    ("duration_s: 10\nclasses: []\n", "classes"),
    ("duration_s: 10\nclasses:\n  - {test: fio, rate_per_s: 1, runtime_s: 5}\n", "no pod results of fio"),
    ("duration_s: 10\nbogus: 1\nclasses:\n  - {test: sysbench-cpu, rate_per_s: 1, runtime_s: 5}\n", "bogus"),
    ("duration_s: 10\nclasses:\n  - {test: sysbench-cpu, rate_per_s: 1, runtime_s: 5, requests: {cpu: '64'}}\n",
     "would never run"),
    ("- duration_s: 10\n", "is not a YAML mapping: give duration_s and classes"),  # was ': Input should be ...'
])
def test_bad_workload_says_what_to_fix(stored, tmp_path, capfd, text, needle):
    db, _ = stored
    wl = tmp_path / "bad.yaml"
    wl.write_text(text)
    assert main(["simulate", "--campaign", "synthetic", "--workload", str(wl), "--db", str(db)]) == 2
    assert needle in capfd.readouterr().err


def test_simulate_over_the_http_api_matches_db(stored, monkeypatch, capfd):
    """The API path (comparisons + cell values) gives the same numbers as --db. The CLI's HTTP calls go
    to FastAPI's TestClient (a labelled stand-in for the network; routes and database are real)."""
    import duckdb
    import httpx
    from fastapi import FastAPI
    from fastapi.testclient import TestClient
    from podtax.cli import results as results_cli
    from podtax_analyzer.api_analysis import router

    db, wl = stored
    args = ["simulate", "--campaign", "synthetic", "--workload", str(wl), "--seeds", "2", "--json"]
    assert main([*args, "--db", str(db)]) == 0
    want = json.loads(capfd.readouterr().out)
    con = duckdb.connect(str(db), read_only=True)

    class Store:
        def cursor(self):
            return con.cursor()

    app = FastAPI()
    app.state.store = Store()
    app.include_router(router)
    tc = TestClient(app)
    monkeypatch.setattr(results_cli.httpx, "request", lambda method, url, params=None, timeout=None, headers=None:
                        tc.request(method, httpx.URL(url).path, params=params, headers=headers))
    monkeypatch.setenv("PODTAX_API_URL", "http://analyzer.test:8700")
    from podtax_scheduler.simulate_cli import main as simulate_in_process  # this process: the stand-in applies

    try:
        assert simulate_in_process(args[1:]) == 0
    finally:
        con.close()
    assert json.loads(capfd.readouterr().out) == want


@pytest.mark.parametrize("content,code,needle", [
    (b"", 2, "is empty (no database file)"),  # a traceback before: DuckDB refused to open it
    (b"not a database\n", 2, "is not a DuckDB database file"),  # a traceback, then exit 1 'cannot open ... if
    # the analyzer is running it holds the file' (audit hD): a usage mistake, named as such
])
def test_db_that_is_no_duckdb_file_is_one_line(stored, tmp_path, capfd, content, code, needle):
    _, wl = stored
    db = tmp_path / "other.duckdb"
    db.write_bytes(content)
    assert main(["simulate", "--campaign", "synthetic", "--workload", str(wl), "--db", str(db)]) == code
    err = capfd.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and needle in err


def test_a_name_no_campaign_has_is_a_usage_mistake(stored, capfd):
    db, wl = stored
    assert main(["simulate", "--campaign", "", "--workload", str(wl), "--db", str(db)]) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'' is not a campaign name" in err[0]


def test_the_podtax_policy_uses_the_schedulers_profile(stored, tmp_path, capfd, monkeypatch):
    """The simulation's podtax policy always used the default profile: PODTAX_SCHEDULER_PROFILE changed nothing and
    a bad one was not even read. Now it weighs and scores as the scheduler would with it."""
    db, wl = stored
    args = ["simulate", "--campaign", "synthetic", "--workload", str(wl), "--db", str(db), "--seeds", "2", "--json",
            "--policies", "default,podtax"]
    assert main(args) == 0
    default = json.loads(capfd.readouterr().out)["policies"]
    profile = tmp_path / "profile.yaml"
    profile.write_text("score:\n  BenchmarkScore: {weight: 0}\n")  # resources alone: the fast nodes lose their edge
    monkeypatch.setenv("PODTAX_SCHEDULER_PROFILE", str(profile))
    assert main(args) == 0
    got = json.loads(capfd.readouterr().out)["policies"]
    assert got["default"] == default["default"] and got["podtax"]["regret_pct"] != default["podtax"]["regret_pct"]
    profile.write_text("score:\n  BenchmarkScore: {no_interval_noise: 0.999}\n")
    assert main(args) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "PODTAX_SCHEDULER_PROFILE=" in err[0] and "from 0 up to 0.5" in err[0], err
