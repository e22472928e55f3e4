"""The analyzer API's doors (issue 12, item 6): mutating calls need PODTAX_API_TOKEN as a bearer token,
POST /api/reparse runs one job at a time (a second call gets 409 with the running job's id), and
reparse reads the logs batch by batch. FastAPI TestClient over a real DuckDB file and the real parsers."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from podtax import config, events
from podtax_analyzer import api as api_module
from podtax_analyzer.api import create_app
from podtax_analyzer.api_auth import host_refusal, verdict
from podtax_analyzer.reparse import reparse
from podtax_analyzer.reparse_jobs import ReparseJobs
from podtax_analyzer.store import Store

CORPUS = Path(__file__).parents[1] / "corpus/debian12-x86_64"
TOKEN = "t0ken-for-tests-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "api.duckdb")
    now = events.now()
    log = (CORPUS / "sysbench-cpu-prime100000-1t.log").read_text()
    store.write_batch([events.raw_log(events.RawLog(
        run=events.RunSpec(run_id=f"run-{i}", campaign="c", node="n", env="host", test="sysbench-cpu",
                           params={"threads": 1, "max_prime": 100000, "events": 200}),
        stdout=log, exit_code=0, started_at=now, ended_at=now), "test") for i in range(5)])
    yield store
    store.close()


@pytest.mark.parametrize(("method", "path", "header", "token", "reads", "code"), [
    ("GET", "/api/runs", None, None, False, 0),            # reads open on loopback by default
    ("POST", "/api/reparse", None, None, False, 403),      # no token configured: no changes at all
    ("POST", "/api/reparse", None, TOKEN, False, 401),
    ("POST", "/api/reparse", "Bearer nope", TOKEN, False, 401),
    ("POST", "/api/reparse", "Basic " + TOKEN, TOKEN, False, 401),
    ("POST", "/api/reparse", f"Bearer {TOKEN}", TOKEN, False, 0),
    ("DELETE", "/api/anything", f"bearer {TOKEN}", TOKEN, False, 0),
    ("GET", "/api/runs", None, TOKEN, True, 401),          # reads protected when asked
    ("GET", "/healthz", None, TOKEN, True, 0),             # probes stay open
])
def test_verdict(method: str, path: str, header: str | None, token: str | None, reads: bool, code: int) -> None:
    assert verdict(method, path, header, token, reads)[0] == code


def test_mutating_calls_need_the_token_and_reads_stay_open(store: Store) -> None:
    client = TestClient(create_app(store, TOKEN))
    resp = client.post("/api/reparse")
    assert resp.status_code == 401 and resp.headers["www-authenticate"].startswith("Bearer")
    assert "PODTAX_API_TOKEN" in resp.json()["detail"]
    assert client.post("/api/reparse", headers={"Authorization": "Bearer wrong-wrong-wrong"}).status_code == 401
    assert store.cursor().execute("SELECT count(*) FROM runs").fetchone() == (0,), "nothing ran without the token"
    assert client.get("/api/runs").status_code == 200
    resp = client.post("/api/reparse", headers=AUTH)
    assert resp.status_code == 200, resp.text
    assert resp.json()["logs"] == 5 and resp.json()["results"] == 5 and resp.json()["job_id"]
    assert client.get(f"/api/reparse/{resp.json()['job_id']}").json()["state"] == "done"


def test_no_token_configured_refuses_changes(store: Store) -> None:
    client = TestClient(create_app(store, None))
    resp = client.post("/api/reparse", headers=AUTH)
    assert resp.status_code == 403 and "PODTAX_API_TOKEN" in resp.json()["detail"]


def test_reads_can_need_the_token(store: Store) -> None:
    client = TestClient(create_app(store, TOKEN, reads_need_token=True))
    assert client.get("/api/runs").status_code == 401
    assert client.get("/api/runs", headers=AUTH).status_code == 200
    assert client.get("/healthz").status_code == 200


def test_reads_that_need_a_token_none_has_say_so(store: Store) -> None:
    """PODTAX_API_READS_NEED_TOKEN without PODTAX_API_TOKEN: every read is refused, and the answer said "this
    analyzer accepts no changes" to a GET (audit hS); it names the setting that closes the reads."""
    resp = TestClient(create_app(store, None, reads_need_token=True)).get("/api/runs")
    assert resp.status_code == 403
    assert "reads need a token (PODTAX_API_READS_NEED_TOKEN)" in resp.json()["detail"], resp.json()


def test_second_reparse_gets_409_with_the_running_jobs_id(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = threading.Event()

    class GatedJobs(ReparseJobs):  # the real job runner and reparse; the first job waits at a gate
        def __init__(self, run) -> None:  # type: ignore[no-untyped-def]
            super().__init__(lambda campaign, progress: (gate.wait(10), run(campaign, progress))[1])

    monkeypatch.setattr(api_module, "ReparseJobs", GatedJobs)
    client = TestClient(create_app(store, TOKEN))
    first = client.post("/api/reparse", params={"wait": "false"}, headers=AUTH)
    assert first.status_code == 202 and first.json()["state"] == "running"
    job_id = first.json()["job_id"]
    second = client.post("/api/reparse", headers=AUTH)
    assert second.status_code == 409
    assert second.json()["job_id"] == job_id and job_id in second.json()["detail"]
    gate.set()
    job = client.app.state.reparse_jobs.jobs[job_id]
    assert job.done.wait(30)
    status = client.get(f"/api/reparse/{job_id}").json()
    assert status["state"] == "done" and status["logs"] == 5
    third = client.post("/api/reparse", headers=AUTH)  # free again
    assert third.status_code == 200 and third.json()["job_id"] != job_id
    assert client.get("/api/reparse/nope").status_code == 404


def test_reparse_reads_in_batches(store: Store) -> None:
    seen: list[int] = []
    counts = reparse(store, "c", lambda c: seen.append(c["logs"]), batch=2)
    assert seen == [2, 4, 5]
    assert counts["logs"] == 5 and counts["results"] == 5
    assert store.cursor().execute("SELECT count(*), count(DISTINCT run_id) FROM runs").fetchone() == (5, 5)
    assert reparse(store, "other", batch=2)["logs"] == 0


def test_a_bad_token_setting_is_not_echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODTAX_API_TOKEN", "s3cret")
    with pytest.raises(config.ConfigError) as info:
        config.load(config.AnalyzerSettings)
    assert "PODTAX_API_TOKEN" in str(info.value) and "s3cret" not in str(info.value)


@pytest.mark.parametrize("kwargs,says", [
    ({"json": {"campaign": "base"}}, "takes no body"),  # before: 200, every campaign re-parsed
    ({"content": b"{bad"}, "takes no body"),
    ({"params": {"campain": "base"}}, "unknown parameter(s) campain"),
])
def test_reparse_refuses_what_it_would_ignore(store: Store, kwargs: dict, says: str) -> None:
    client = TestClient(create_app(store, TOKEN))
    resp = client.post("/api/reparse", headers=AUTH, **kwargs)
    assert resp.status_code == 422 and says in resp.json()["detail"]
    assert not client.app.state.reparse_jobs.jobs  # nothing was started



@pytest.mark.parametrize(("header", "loopback"), [("[fe80::0001]:8700", False), ("[FE80::1]", False),
                                                 ("podtax.example.org.:8700", False), ("localhost.:8700", True),
                                                 ("LOCALHOST.", True), ("[::0001]:8700", True), ("127.0.0.1.", True)])
def test_a_host_spelt_otherwise_is_the_allowed_or_loopback_name(header: str, loopback: bool) -> None:
    """The allowed names are normalized (config.host_names: final dot, canonical address); the Host header's name was
    compared as sent, so `[fe80::0001]` and `localhost.` were refused (review hR #3)."""
    assert host_refusal(header, loopback_only=True, allowed=config.host_names("podtax.example.org,FE80::0001")) is None
    assert (host_refusal(header, loopback_only=True) is None) == loopback


@pytest.mark.parametrize("header", ["[fe80::2]:8700", "evil.example.:8700", "127.0.0.1.evil.example", "[fe80::1",
                                    ".", "", None])
def test_other_hosts_are_still_refused(header: str | None) -> None:
    assert host_refusal(header, loopback_only=True, allowed=config.host_names("podtax.example.org,fe80::1"))
