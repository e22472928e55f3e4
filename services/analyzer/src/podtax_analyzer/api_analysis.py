"""Analysis routes of the analyzer's HTTP API: campaigns, comparisons, cell values, node scores.

Every route gets a fresh read cursor from ``request.app.state.store.cursor()``; the handlers are
plain ``def`` so FastAPI runs the CPU-bound comparison in its thread pool.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import duckdb
from fastapi import APIRouter, HTTPException, Query, Request
from podtax.events import NodeScore
from pydantic import BaseModel, Field

from podtax_analyzer.comparisons import UnknownCampaign, cell_values, compare_campaign
from podtax_analyzer.report_models import CampaignReport, CellValues
from podtax_analyzer.scores import node_scores

router = APIRouter(tags=["analysis"])


class CampaignInfo(BaseModel):
    name: str
    runs_ok: int = Field(ge=0, description="Runs with a result.")
    runs_failed: int = Field(ge=0, description="Runs recorded as failed.")
    cells: int = Field(ge=0, description="Cells (node, test, params, metric) with at least one result.")
    first_run_at: datetime | None
    last_run_at: datetime | None


def _cursor(request: Request) -> duckdb.DuckDBPyConnection:
    return request.app.state.store.cursor()


@router.get("/api/campaigns", response_model=list[CampaignInfo], summary="Campaigns with run counts")
def list_campaigns(request: Request) -> list[CampaignInfo]:
    rows = _cursor(request).execute("""
        WITH names AS (SELECT campaign FROM runs UNION SELECT campaign FROM campaigns),
        counts AS (
            SELECT campaign, count(*) FILTER (WHERE status = 'ok') AS ok,
                   count(*) FILTER (WHERE status = 'failed') AS failed,
                   min(started_at) AS first_at, max(started_at) AS last_at
            FROM runs GROUP BY campaign),
        cells AS (
            SELECT r.campaign, count(DISTINCT (r.node, r.test, r.params_key, m.name)) AS cells
            FROM runs r JOIN metrics m ON m.run_id = r.run_id WHERE r.status = 'ok' GROUP BY r.campaign)
        SELECT n.campaign, coalesce(c.ok, 0), coalesce(c.failed, 0), coalesce(k.cells, 0), c.first_at, c.last_at
        FROM names n LEFT JOIN counts c USING (campaign) LEFT JOIN cells k USING (campaign)
        ORDER BY n.campaign""").fetchall()
    return [CampaignInfo(name=r[0], runs_ok=r[1], runs_failed=r[2], cells=r[3], first_run_at=r[4], last_run_at=r[5])
            for r in rows]


@router.get("/api/campaigns/{campaign}/comparisons", response_model=CampaignReport,
            summary="Pod/host comparison table of a campaign, with flags and summary sentences")
def get_comparisons(
    request: Request,
    campaign: str,
    threshold: float = Query(0.01, ge=0.0, lt=1.0, description="Practical threshold as a fraction (0.01 = 1%)."),
    correction: Literal["holm", "bh"] = Query("holm", description="Multiple-comparison correction."),
) -> CampaignReport:
    try:
        return compare_campaign(_cursor(request), campaign, threshold=threshold, correction=correction)
    except UnknownCampaign:
        raise HTTPException(status_code=404, detail=f"unknown campaign {campaign!r}") from None


@router.get("/api/cells/{cell_id}", response_model=CellValues, summary="Raw values of one cell by run")
def get_cell(request: Request, cell_id: str) -> CellValues:
    found = cell_values(_cursor(request), cell_id)
    if found is None:
        raise HTTPException(status_code=404, detail=f"unknown cell {cell_id!r}")
    return found


@router.get("/api/scores", response_model=list[NodeScore], summary="Node scores (per run, never sums)")
def get_scores(
    request: Request,
    node: str | None = None,
    test: str | None = None,
    env: Literal["host", "kubernetes"] | None = None,
    cluster: str | None = None,
) -> list[NodeScore]:
    return node_scores(_cursor(request), cluster=cluster, node=node, test=test, env=env)
