"""A cell's "Failed runs" note counted a failed first attempt whose retry succeeded as any failed run (audit hB2,
left): "3 of 13 pod runs failed (no-report: 2, timeout: 1), so the pod median is of the 10 that finished", while
two of those 10 are the failed attempts' retries (the runner retries a run that never reported once, as
'<run id>-a2', attempt 2). The note now also says how many were retried successfully; a failed attempt still
counts as a run, as `podtax campaign status` counts it ("10 done, 3 failed"). Real result and failure events in a
real DuckDB file, the analyzer app and the CLI's main()."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from analysis_synth import result_event
from podtax import events
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import json_cells, serve

T0 = datetime(2025, 10, 6, 8, tzinfo=UTC)
HOST = [1000.0, 1003.0, 998.0, 1001.0, 999.0, 1002.0, 1000.5, 997.5, 1001.5, 999.5]


def _spec(run_id: str, attempt: int, campaign: str = "retried") -> events.RunSpec:
    return events.RunSpec(run_id=run_id, campaign=campaign, node="node-1", env="kubernetes", test="sysbench-cpu",
                          params={"threads": 1}, cluster="local", attempt=attempt, timeout_s=60)


def _failed(run_id: str, reason: str, at: datetime, campaign: str = "retried") -> events.Envelope:
    return events.run_failed(events.RunFailed(run=_spec(run_id, 1, campaign), stage="runner", reason=reason,
                                              detail="no result within 60 s + grace", started_at=at,
                                              ended_at=at + timedelta(seconds=60)), "test")


def _retry(run_id: str, value: float, at: datetime, campaign: str = "retried") -> events.Envelope:
    res = events.Result(run=_spec(f"{run_id}-a2", 2, campaign), tool="sysbench", tool_version="1.0.20",
                        parser_version="1",
                        metrics=[events.Metric(name="events_per_second", value=value, unit="events/s",
                                               higher_is_better=True)],
                        started_at=at, ended_at=at + timedelta(seconds=10))
    return events.result(res, "test")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("retried") / "podtax.duckdb")
    out = []
    for day, camp in enumerate(("retried", "all-retried")):  # a day apart: the campaigns' runs do not overlap
        for i, h in enumerate(HOST):  # 10 runs a side; pod runs 8 and 9 failed first (no report), then their retry ran
            start = T0 + timedelta(days=day, minutes=6 * i)
            out.append(result_event(f"{camp}-h{i}", camp, "node-1", "host", h, start))
            at = start + timedelta(minutes=3)
            if i < 8:
                out.append(result_event(f"{camp}-p{i}", camp, "node-1", "kubernetes", h * 0.95, at))
            else:
                out += [_failed(f"{camp}-p{i}", "no-report", at, camp),
                        _retry(f"{camp}-p{i}", h * 0.95, at + timedelta(hours=1), camp)]
    out.append(_failed("retried-x", "timeout", T0 + timedelta(hours=3)))  # and one that failed with no retry
    s.write_batch(out)
    yield s
    s.close()


def test_failed_runs_say_how_many_were_retried_successfully(store):
    with serve(create_app(store)) as url:
        (c,) = json_cells("report", "retried", "--api", url).values()
    assert (c["n_host"], c["n_pod"], c["verdict"]) == (10, 10, "slower")  # the retries are among the pod runs
    said = ("Failed runs: 3 of 13 pod runs failed (no-report: 2, timeout: 1), 2 of them then retried successfully, "
            "so the pod median is of the 10 that finished.")
    assert said in c["sentence"] and any(w.startswith(said) for w in c["warnings"]), c["sentence"]
    assert "the slowest runs are missing" in c["sentence"]  # the timeout was not retried


def test_no_run_is_missing_when_every_failed_run_was_retried(store):
    """Every failed run's retry finished: nothing slow is missing from the median, so the note does not say it
    may be (it did before)."""
    with serve(create_app(store)) as url:
        (c,) = json_cells("report", "all-retried", "--api", url).values()
    said = ("Failed runs: 2 of 12 pod runs failed (no-report: 2), 2 of them then retried successfully, so the pod "
            "median is of the 10 that finished.")
    assert said in c["sentence"], c["sentence"]
    assert "slowest runs are missing" not in c["sentence"] and not any("slowest" in w for w in c["warnings"])


def test_the_campaign_warning_says_the_retries_as_the_cell_does(store, capsys):
    """The campaign-wide warning of failed runs said '2 failed kubernetes runs ...: no-report' while the cell's note
    said both were then retried successfully: both now say it, from one query of the failed runs."""
    with serve(create_app(store)) as url:
        assert main(["report", "retried", "--api", url, "--json"]) == 0
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    assert warnings == [
        "2 failed kubernetes runs of sysbench-cpu threads=1 on node-1: no-report (no result within 60 s + grace), "
        "2 of them then retried successfully",
        "1 failed kubernetes run of sysbench-cpu threads=1 on node-1: timeout (no result within 60 s + grace)"]
