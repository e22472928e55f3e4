"""The analyzer's HTTP API (for people and the CLI): health, runs, results, reparse + analysis routes."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
from fastapi import FastAPI, HTTPException, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from podtax_analyzer import api_auth
from podtax_analyzer.reparse import reparse
from podtax_analyzer.reparse_jobs import Busy, ReparseJobs
from podtax_analyzer.rowstream import batches, json_array
from podtax_analyzer.store import Store


class Health(BaseModel):
    status: str
    db: str
    runs: int  # -1 while the database does not answer (storage says why)
    nats: str = "connected"
    storage: str = "ok"  # or what failed in the last write and what to fix (batches are held meanwhile)


class Run(BaseModel):
    run_id: str
    campaign: str
    node: str
    env: str
    test: str
    params: dict[str, Any]
    attempt: int
    status: str
    tool_version: str | None
    started_at: datetime | None
    ended_at: datetime | None
    flags: list[str]
    failure_reason: str | None
    failure_detail: str | None


class MetricValue(BaseModel):
    name: str
    value: float
    unit: str
    higher_is_better: bool


class ResultRow(BaseModel):
    run_id: str
    campaign: str
    node: str
    env: str
    test: str
    params: dict[str, Any]
    tool: str | None
    tool_version: str | None
    started_at: datetime | None
    flags: list[str]  # the run's flags, each 'NAME: what' (PARAM_MISMATCH, SHORT, VERSION_MISMATCH...)
    metrics: list[MetricValue]


class ReparseReport(BaseModel):
    logs: int
    results: int
    failures: int
    changed: int
    provenance: int = 0  # of `changed`, the runs whose outcome is the same: only tool build/version/arch or limits
    job_id: str | None = None


class ReparseJob(ReparseReport):
    campaign: str | None
    state: str
    started_at: datetime
    finished_at: datetime | None
    error: str | None


def without_folder(text: str, path: Path) -> str:
    """`text` with `path`'s folder left out wherever it names it (as given and resolved): /healthz is open to
    anyone who reaches the API (probes), and a full path says more of the machine (a home folder, a user's name)
    than the file's name; the analyzer's log keeps the whole text."""
    for folder in sorted({str(path.parent.resolve()), str(path.parent)}, key=len, reverse=True):
        if folder.rstrip(os.sep) not in ("", "."):  # not the root's or the current folder's
            text = text.replace(folder.rstrip(os.sep) + os.sep, "")
    return text


def create_app(store: Store, token: str | None = None, reads_need_token: bool = False,
               loopback_only: bool = False, allowed_hosts: frozenset[str] = frozenset()) -> FastAPI:
    """token: the bearer token mutating calls need (PODTAX_API_TOKEN; None refuses them all). loopback_only: answer
    only to a loopback Host header (an analyzer listening on loopback: api_auth.host_refusal); allowed_hosts: the
    other names it answers to (PODTAX_ANALYZER_ALLOWED_HOSTS)."""
    app = FastAPI(title="podtax analyzer", version="0.1.0",
                  description="Pod-vs-host benchmark results, comparisons and node scores.")
    app.state.store = store
    api_auth.install(app, token, reads_need_token, loopback_only, allowed_hosts)
    jobs = app.state.reparse_jobs = ReparseJobs(lambda campaign, progress: reparse(store, campaign, progress))

    @app.get("/healthz", response_model=Health, responses={503: {"model": Health}})
    def healthz(request: Request, response: Response) -> Health:
        """200 while the database answers, takes writes and NATS is connected; 503 (same body) otherwise."""
        fault = getattr(request.app.state, "storage_problem", lambda: None)()
        try:
            with request.app.state.store.cursor() as cur:
                (n,) = cur.execute("SELECT count(*) FROM runs").fetchone()
        except duckdb.Error as exc:  # a database DuckDB invalidated answered 500, a traceback (audit hG)
            n, fault = -1, fault or f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        connected = getattr(request.app.state, "nats_connected", lambda: True)()
        if not connected or fault:
            response.status_code = 503
        status = "nats disconnected" if not connected else "storage unavailable" if fault else "ok"
        return Health(status=status, db=store.path.name, runs=n, nats="connected" if connected else "disconnected",
                      storage=without_folder(fault, store.path) if fault else "ok")

    @app.get("/api/runs", response_model=list[Run])
    def runs(request: Request, campaign: str | None = None, status: str | None = Query(None, pattern="^(ok|failed)$"),
             limit: int = Query(1000, ge=1, le=100_000)) -> list[Run]:
        rows = batches(request.app.state.store.cursor(), """
            SELECT run_id, campaign, node, env, test, params, attempt, status, tool_version, started_at, ended_at,
                   flags, failure_reason, failure_detail FROM runs
            WHERE ($1::varchar IS NULL OR campaign = $1) AND ($2::varchar IS NULL OR status = $2)
            ORDER BY started_at NULLS LAST, run_id LIMIT $3""", [campaign, status, limit])
        return json_array(rows, lambda r: Run(**{**r, "params": json.loads(r["params"])}))  # type: ignore[return-value]

    @app.get("/api/results", response_model=list[ResultRow])
    def results(request: Request, campaign: str | None = None, node: str | None = None,
                limit: int = Query(1000, ge=1, le=100_000)) -> list[ResultRow]:
        rows = batches(request.app.state.store.cursor(), """
            SELECT r.run_id, r.campaign, r.node, r.env, r.test, r.params, r.tool, r.tool_version, r.started_at, r.flags,
                   list({'name': m.name, 'value': m.value, 'unit': m.unit,
                         'higher_is_better': m.higher_is_better} ORDER BY m.name) AS metrics
            FROM runs r JOIN metrics m USING (run_id)
            WHERE r.status = 'ok' AND ($1::varchar IS NULL OR r.campaign = $1) AND ($2::varchar IS NULL OR r.node = $2)
            GROUP BY ALL ORDER BY r.started_at, r.run_id LIMIT $3""", [campaign, node, limit])
        return json_array(rows, lambda r: ResultRow(**{**r, "params": json.loads(r["params"])}))  # type: ignore[return-value]

    @app.post("/api/reparse", response_model=ReparseReport, status_code=200,
              responses={202: {"model": ReparseJob}, 409: {"description": "a reparse is running (its job_id)"}})
    async def reparse_logs(request: Request, campaign: str | None = None, wait: bool = True) -> Any:
        """Re-derive stored results with today's parsers, one job at a time; wait=false answers 202 at once
        (follow it with GET /api/reparse/{job_id}). It takes no body: a campaign sent as JSON, or a misspelt
        parameter, would re-parse every campaign instead of the one meant."""
        unknown = sorted(set(request.query_params) - {"campaign", "wait"})
        if unknown:
            raise HTTPException(422, f"unknown parameter(s) {', '.join(unknown)}: POST /api/reparse takes "
                                     "?campaign=NAME and ?wait=false")
        async for chunk in request.stream():  # refused at its first chunk: a large body is never held
            if chunk:
                raise HTTPException(422, "POST /api/reparse takes no body: pass ?campaign=NAME (and ?wait=false) "
                                         "in the URL")
        try:
            job = jobs.start(campaign)
        except Busy as exc:
            return JSONResponse({"detail": f"{exc}; follow it with GET /api/reparse/{exc.job.id}",
                                 "job_id": exc.job.id}, status_code=409)
        if not wait:
            return JSONResponse(ReparseJob(**job.view()).model_dump(mode="json"), status_code=202)
        await asyncio.to_thread(job.done.wait)
        if job.state == "failed":
            raise HTTPException(500, f"reparse job {job.id} failed: {job.error}")
        if job.counts["logs"] == 0 and campaign:
            raise HTTPException(404, f"no raw logs stored for campaign {campaign!r}")
        return ReparseReport(**job.counts, job_id=job.id)

    @app.get("/api/reparse/{job_id}", response_model=ReparseJob)
    def reparse_job(job_id: str) -> ReparseJob:
        job = jobs.jobs.get(job_id)
        if job is None:
            raise HTTPException(404, f"no reparse job {job_id!r} (only the last few are kept)")
        return ReparseJob(**job.view())

    try:
        from podtax_analyzer.api_analysis import router
    except ImportError:  # pragma: no cover - only while the analysis module is absent
        pass
    else:
        app.include_router(router)
    from podtax_analyzer.api_report import router as report_router

    app.include_router(report_router)
    from podtax_analyzer.api_phases import router as phases_router

    app.include_router(phases_router)
    from podtax_analyzer.api_imports import router as imports_router

    app.include_router(imports_router)
    from podtax_analyzer.api_retired import router as retired_router

    app.include_router(retired_router)
    return app
