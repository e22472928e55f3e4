"""The analyzer's lookup of one campaign (GET /api/campaigns/{campaign}: its counts, 404 when unknown) and
`podtax campaign submit`'s reading of it (podtax.cli.earlier.check_analyzer): a name the analyzer holds runs of
(cancelled ones too) is refused (exit 2), its 404 or a campaign with no run lets the campaign go, a 401/403 is
one refusal (exit 1) naming PODTAX_API_TOKEN, a server without the route or answering 5xx is one refusal (exit 1;
--skip-analyzer-check makes them warnings: tests/report/test_submit_check_edges.py). It replaced the
list of every campaign, which aggregates over the whole store. Real DuckDB file, the real analyzer app
(TestClient, and uvicorn on a free port for the CLI)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest
import typer
from fastapi import FastAPI, HTTPException
from fastapi.testclient import TestClient
from podtax import events
from podtax.cli.earlier import check_analyzer
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store, resubmitted

from tests.report.conftest import insert_cells, serve, steady_campaign

TOKEN = "t0ken-for-tests-0123456789"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    store = Store(tmp_path_factory.mktemp("lookup") / "podtax.duckdb")
    con = store.cursor()
    insert_cells(con, steady_campaign("held"))
    insert_cells(con, steady_campaign("other", seed=6))
    con.execute("INSERT INTO campaigns VALUES ('only-submitted', TIMESTAMPTZ '2025-01-06 07:00:00+00', '{}')")
    con.execute("INSERT INTO runs (run_id, event_id, campaign, cluster, node, env, test, params, params_key, attempt, "
                "sequence, status, flags, failure_reason, stored_at) VALUES ('cancelled-only.c1', 'e1', "
                "'cancelled-only', 'lab', 'n1', 'host', 'fio', '{}', '', 1, 1, 'failed', [], 'cancelled', now())")
    con.execute("INSERT INTO runs (run_id, event_id, campaign, cluster, node, env, test, params, params_key, attempt, "
                "sequence, status, flags, stored_at) VALUES ('imp-0f3a', 'e2', 'old', 'lab', 'n1', 'host', 'fio', "
                "'{}', '', 1, 1, 'ok', [], now())")
    con.execute("INSERT INTO raw_logs VALUES ('imp-0f3a', 'imp-0f3a.log', 'old', 'lab', 'n1', 'host', 'fio', '{}', '', "
                "1, now(), now(), 0, '', '', NULL, false, false, '{}', 'fio.log', now())")
    yield store
    store.close()


def test_the_lookup_answers_one_campaign_as_the_list_does_and_404_when_unknown(store: Store) -> None:
    client = TestClient(create_app(store))
    listed = {c["name"]: c for c in client.get("/api/campaigns").json()}
    assert set(listed) == {"held", "other", "only-submitted", "cancelled-only", "old"}
    for name in listed:
        resp = client.get(f"/api/campaigns/{name}")
        assert resp.status_code == 200 and resp.json() == listed[name], resp.text
    assert listed["held"]["runs_ok"] > 0 and listed["held"]["cells"] == 6
    assert listed["only-submitted"]["runs_ok"] == 0 and listed["only-submitted"]["cells"] == 0
    assert listed["only-submitted"]["runs"] == 0 and listed["held"]["runs"] == listed["held"]["runs_ok"]
    assert (listed["cancelled-only"]["runs"], listed["cancelled-only"]["runs_failed"]) == (1, 0)
    assert (listed["old"]["runs"], listed["old"]["runs_imported"], listed["held"]["runs_imported"]) == (1, 1, 0)
    resp = client.get("/api/campaigns/new")
    assert resp.status_code == 404 and resp.json() == {"detail": "unknown campaign 'new'"}


def test_the_analyzer_says_a_resubmission_only_of_a_campaign_with_runs(
        store: Store, caplog: pytest.LogCaptureFixture) -> None:
    con = store.cursor()
    con.execute("INSERT INTO campaigns VALUES ('cancelled-only', TIMESTAMPTZ '2025-01-06 07:00:00+00', '{}')")
    with caplog.at_level(logging.ERROR, logger="podtax.analyzer.store"):
        for name in ("only-submitted", "cancelled-only"):  # submitted again, at another time
            assert resubmitted(con, events.campaign_submitted(events.CampaignSubmitted(campaign=name, spec={}))) == (
                name == "cancelled-only")  # no run of 'only-submitted' (the runner refused it): none to drop
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and said[0].startswith("campaign cancelled-only submitted again"), said


def test_the_lookup_needs_the_token_when_reads_do(store: Store) -> None:
    client = TestClient(create_app(store, TOKEN, reads_need_token=True))
    assert client.get("/api/campaigns/held").status_code == 401
    assert client.get("/api/campaigns/held", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def _check(url: str, name: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """check_analyzer(name) against `url`: the exit code it raised, else 0."""
    monkeypatch.setenv("PODTAX_API_URL", url)
    try:
        asyncio.run(check_analyzer(name))
    except typer.Exit as exc:
        return exc.exit_code
    return 0


def test_submit_refuses_a_held_name_and_lets_an_unknown_one_go(
        store: Store, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("PODTAX_API_TOKEN", raising=False)
    with serve(create_app(store)) as url:
        assert _check(url, "held", monkeypatch) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and err.startswith("error: campaign 'held' already has results in the "
                                                             f"analyzer at {url} ("), err
        assert _check(url, "cancelled-only", monkeypatch) == 2  # its cancelled run holds a run id
        assert "'cancelled-only' was already submitted to the analyzer" in capsys.readouterr().err
        assert _check(url, "only-submitted", monkeypatch) == 0  # the runner refused it: no run id to share
        assert capsys.readouterr().err == ""
        assert _check(url, "old", monkeypatch) == 2  # its runs were imported: say so, not 'an earlier submission'
        assert capsys.readouterr().err.startswith(f"error: campaign 'old' holds 1 run(s) imported into the analyzer "
                                                  f"at {url} (podtax import): a campaign submitted under that name")
        assert _check(url, "new", monkeypatch) == 0
        assert capsys.readouterr().err == ""


def test_submit_says_a_refused_check_needs_the_token_and_checks_with_it(
        store: Store, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("PODTAX_API_TOKEN", raising=False)
    with serve(create_app(store, TOKEN, reads_need_token=True)) as url:
        for name in ("held", "new"):  # neither read as 'no such campaign'
            assert _check(url, name, monkeypatch) == 1
            err = capsys.readouterr().err
            assert len(err.splitlines()) == 1 and err.startswith("error: could not check the analyzer at "), err
            assert f"campaign {name!r} (HTTP 401" in err and "set PODTAX_API_TOKEN to its token" in err, err
        monkeypatch.setenv("PODTAX_API_TOKEN", TOKEN)
        assert _check(url, "held", monkeypatch) == 2
        assert "campaign 'held' already has results" in capsys.readouterr().err


def _failing() -> FastAPI:
    app = FastAPI()

    @app.get("/api/campaigns/{campaign}")
    def broken(campaign: str) -> None:
        raise HTTPException(503, "store gone")

    return app


@pytest.mark.parametrize(("app", "status"), [(FastAPI(), "HTTP 404"), (_failing(), "HTTP 503")])
def test_submit_reads_another_404_or_a_5xx_as_unchecked(
        app: FastAPI, status: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("PODTAX_API_TOKEN", raising=False)
    with serve(app) as url:
        assert _check(url, "held", monkeypatch) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("error: could not check the analyzer at "), err
    assert f"for an earlier campaign 'held' ({status}" in err and "submit once it answers" in err, err
