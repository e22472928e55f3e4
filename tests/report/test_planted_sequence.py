"""Planted campaigns whose runs' context the values cannot show (audit hB2). Sides run one after the other: 10 host
runs on one day, then 10 pod runs a week later, 5% lower, each side steady (no DRIFT within it). Nothing told the
reader that the pod's 5% could be the week's: the report said "Pod 5.0% slower than host" with p < 0.001 and no
warning. Now the cell keeps its figures and its sentence, its warnings (the CLI's Notes, the HTML's notes) say the
sides were not interleaved, with both time spans (and when they overlap a little, "Mostly not interleaved", with
the share of run pairs in one order); an interleaved cell says nothing. A kernel upgrade half-way (the runs'
provenance names two kernels) was shown only in the provenance table, under no cell: the cell now says "Mixed
kernels", with each kernel's runs per side, and a cell whose sides ran different kernels says the ratio compares
kernels. Runs that failed (4 pod timeouts beside 10 that finished) were counted only in the campaign's warnings:
the cell now says its pod median is of the runs that finished. Real result, failure and raw-log events in a real
DuckDB file, the real analyzer app and the real CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from analysis_synth import result_event
from fastapi.testclient import TestClient
from podtax import events
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import serve

T0 = datetime(2025, 8, 4, 8, tzinfo=UTC)
HOST = [1000.0, 1003.0, 998.0, 1001.0, 999.0, 1002.0, 1000.5, 997.5, 1001.5, 999.5]
POD = [v * 0.95 for v in HOST]
SAID = ("Not interleaved: every host run (10 runs, 2025-08-04 08:00 to 2025-08-04 08:27 UTC) started before the "
        "first pod run (10 runs, 2025-08-11 08:00 to 2025-08-11 08:27 UTC)")
OLD, NEW = "6.1.0-18-amd64", "6.1.0-28-amd64"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("sequence") / "podtax.duckdb")
    out = []
    for i, (h, p) in enumerate(zip(HOST, POD, strict=True)):
        # "blocks": the host side, then the pod side a week later; "mixed": the same values interleaved
        out.append(result_event(f"b-h{i}", "blocks", "node-1", "host", h, T0 + timedelta(minutes=3 * i)))
        out.append(result_event(f"b-p{i}", "blocks", "node-1", "kubernetes", p, T0 + timedelta(days=7, minutes=3 * i)))
        start = T0 + timedelta(days=1, minutes=6 * i)
        out.append(result_event(f"m-h{i}", "mixed", "node-1", "host", h, start))
        out.append(result_event(f"m-p{i}", "mixed", "node-1", "kubernetes", p, start + timedelta(minutes=3)))
    for day, campaign, kernel_of in ((20, "upgrade", lambda env, i: OLD if i < 5 else NEW),  # both sides, half-way
                                     (30, "split", lambda env, i: OLD if env == "host" else NEW)):  # one a side
        for i, (h, p) in enumerate(zip(HOST, POD, strict=True)):
            start = T0 + timedelta(days=day, minutes=6 * i)
            for env, value, at in (("host", h, start), ("kubernetes", p, start + timedelta(minutes=3))):
                run_id = f"{campaign}-{env}-{i}"
                out.append(result_event(run_id, campaign, "node-1", env, value, at))
                run = events.RunSpec(run_id=run_id, campaign=campaign, node="node-1", env=env, test="sysbench-cpu",
                                     params={"threads": 1}, cluster="local", attempt=1, timeout_s=600)
                log = events.RawLog(run=run, stdout="(the log)", exit_code=0, started_at=at,
                                    ended_at=at + timedelta(seconds=10),
                                    provenance=events.Provenance(kernel=kernel_of(env, i)))
                out.append(events.raw_log(log, "test"))
    for i, (h, p) in enumerate(zip(HOST, POD, strict=True)):  # "timeouts": 10 runs a side, and 4 pod runs timed out
        start = T0 + timedelta(days=40, minutes=6 * i)
        out.append(result_event(f"t-h{i}", "timeouts", "node-1", "host", h, start))
        out.append(result_event(f"t-p{i}", "timeouts", "node-1", "kubernetes", p, start + timedelta(minutes=3)))
    for i, (h, p) in enumerate(zip(HOST, POD, strict=True)):  # "nearly": host at 0..27 min, pod from 25 min on
        out.append(result_event(f"n-h{i}", "nearly", "node-1", "host", h, T0 + timedelta(days=50, minutes=3 * i)))
        out.append(result_event(f"n-p{i}", "nearly", "node-1", "kubernetes", p,
                                T0 + timedelta(days=50, minutes=25 + 3 * i)))
    for i in range(4):
        run = events.RunSpec(run_id=f"t-x{i}", campaign="timeouts", node="node-1", env="kubernetes",
                             test="sysbench-cpu", params={"threads": 1}, cluster="local", attempt=1, timeout_s=60)
        at = T0 + timedelta(days=40, hours=2, minutes=2 * i)
        out.append(events.run_failed(events.RunFailed(run=run, stage="kubernetes", reason="timeout",
                                                      detail="no log within 60 s", started_at=at,
                                                      ended_at=at + timedelta(seconds=60)), "test"))
    s.write_batch(out)
    yield s
    s.close()


def test_sides_run_one_after_the_other_are_said_to(store, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    with serve(create_app(store)) as url:
        assert main(["report", "blocks", "--api", url, "--json"]) == 0
        c = json.loads(capsys.readouterr().out)["cells"][0]
        assert main(["report", "blocks", "--api", url]) == 0
        table = capsys.readouterr().out
    assert c["verdict"] == "slower" and abs(c["ratio"] - 0.95) < 1e-9  # the figures are kept
    assert any(w.startswith(SAID) for w in c["warnings"]), c["warnings"]
    assert SAID in c["sentence"] and "read as the pod's effect" in c["sentence"], c["sentence"]
    assert "Not interleaved: every host run" in table
    html = TestClient(create_app(store)).get("/report/blocks").text
    assert SAID in html


def test_interleaved_sides_say_nothing_of_it(store, capsys):
    with serve(create_app(store)) as url:
        assert main(["report", "mixed", "--api", url, "--json"]) == 0
    c = json.loads(capsys.readouterr().out)["cells"][0]
    assert c["verdict"] == "slower" and "interleaved" not in c["sentence"] + " ".join(c["warnings"])


def _cell(store, campaign: str, capsys) -> dict:
    with serve(create_app(store)) as url:
        assert main(["report", campaign, "--api", url, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["cells"][0]


def test_a_kernel_upgrade_half_way_is_said_to(store, capsys):
    c = _cell(store, "upgrade", capsys)
    said = (f"Mixed kernels: this cell's runs ran 2 kernels ({OLD}: 5 host runs and 5 pod runs; {NEW}: 5 host runs "
            f"and 5 pod runs): the machine changed during the campaign")
    assert c["verdict"] == "slower" and any(w.startswith(said) for w in c["warnings"]), c["warnings"]
    assert said in c["sentence"] and "interleaved" not in c["sentence"]


def test_sides_on_different_kernels_compare_kernels(store, capsys):
    c = _cell(store, "split", capsys)
    said = (f"Mixed kernels: this cell's runs ran 2 kernels ({OLD}: 10 host runs; {NEW}: 10 pod runs): no kernel "
            f"ran both sides, so the ratio compares kernels as much as host and pod")
    assert said in c["sentence"], c["sentence"]


def test_failed_runs_are_said_in_their_cell(store, capsys):
    c = _cell(store, "timeouts", capsys)
    said = ("Failed runs: 4 of 14 pod runs failed (timeout: 4), so the pod median is of the 10 that finished. If they "
            "failed for being slow (a timeout), the slowest runs are missing and that side's median looks better than "
            "its runs were.")
    assert c["verdict"] == "slower" and said in c["warnings"] and said in c["sentence"], c["sentence"]


def test_sides_run_mostly_one_after_the_other_are_said_to(store, capsys):
    c = _cell(store, "nearly", capsys)  # 1 of the 100 (host, pod) pairs ran pod first: the pod run at 25 min
    said = ("Mostly not interleaved: in 99% of the (host, pod) run pairs the host run started first (host runs "
            "2025-09-23 08:00 to 2025-09-23 08:27 UTC, pod runs 2025-09-23 08:25 to 2025-09-23 08:52 UTC), so a change "
            "of the machine over the campaign would read mostly as the pod's effect")
    assert c["verdict"] == "slower" and said in c["sentence"], c["sentence"]


def test_the_summary_names_the_nodes_it_includes_with_a_note(store, capsys):
    head = "Included with a note of what their values cannot show (see each cell): node-1"
    with serve(create_app(store)) as url:
        for campaign, notes in (("blocks", "Not interleaved"), ("timeouts", "Failed runs"),
                                ("upgrade", "Mixed kernels"), ("mixed", None)):
            assert main(["report", campaign, "--api", url, "--json"]) == 0
            (s,) = json.loads(capsys.readouterr().out)["summary"]
            assert s["nodes_included"] == ["node-1"], s
            assert (f"{head} ({notes})." in s["sentence"]) if notes else ("with a note" not in s["sentence"]), s
