"""Analysis routes of the analyzer's HTTP API: campaigns, comparisons, cell values, node scores.

Every route gets a fresh read cursor from ``request.app.state.store.cursor()``; the handlers are
plain ``def`` so FastAPI runs the CPU-bound comparison in its thread pool.
"""

from __future__ import annotations

import json
import logging
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
    runs_failed: int = Field(ge=0, description="Runs recorded as failed (a run stopped by its campaign's cancel is no "
                                              "failure: the runner counts it cancelled).")
    cells: int = Field(ge=0, description="Cells (node, test, params, metric) with at least one result.")
    runs: int = Field(ge=0, description="Runs recorded, whatever their end (ok, failed, cancelled): 0 when none ran "
                                        "(e.g. the runner refused the campaign), so no run id of it is held.")
    runs_imported: int = Field(0, ge=0, description="Of `runs`, those whose log came from `podtax import`.")
    first_run_at: datetime | None
    last_run_at: datetime | None


def _cursor(request: Request) -> duckdb.DuckDBPyConnection:
    return request.app.state.store.cursor()


def campaign_infos(cur: duckdb.DuckDBPyConnection, name: str | None = None) -> list[CampaignInfo]:
    """Every campaign with its counts, or only `name` (its WHERE in each part, before the aggregates: a lookup
    reads one campaign's runs, not the whole store's)."""
    only, params = ("campaign = $name", {"name": name}) if name is not None else ("true", {})
    rows = cur.execute(f"""
        WITH names AS (SELECT campaign FROM runs WHERE {only} UNION SELECT campaign FROM campaigns WHERE {only}),
        counts AS (
            SELECT campaign, count(*) FILTER (WHERE status = 'ok') AS ok,
                   count(*) FILTER (WHERE status = 'failed' AND failure_reason IS DISTINCT FROM 'cancelled')
                       AS failed,  -- a run stopped by its campaign's cancel is cancelled, as the runner counts it
                   count(*) AS runs, min(started_at) AS first_at, max(started_at) AS last_at
            FROM runs WHERE {only} GROUP BY campaign),
        cells AS (
            SELECT r.campaign, count(DISTINCT (r.node, r.test, r.params_key, m.name)) AS cells
            FROM (SELECT * FROM runs WHERE {only}) r JOIN metrics m ON m.run_id = r.run_id WHERE r.status = 'ok'
            GROUP BY r.campaign),
        imported AS (
            SELECT r.campaign, count(*) AS n FROM (SELECT campaign, run_id FROM runs WHERE {only}) r
            JOIN (SELECT run_id FROM raw_logs WHERE {only} AND imported_from IS NOT NULL) i USING (run_id)
            GROUP BY r.campaign)
        SELECT n.campaign, coalesce(c.ok, 0), coalesce(c.failed, 0), coalesce(k.cells, 0), c.first_at, c.last_at,
               coalesce(c.runs, 0), coalesce(i.n, 0)
        FROM names n LEFT JOIN counts c USING (campaign) LEFT JOIN cells k USING (campaign)
            LEFT JOIN imported i USING (campaign)
        ORDER BY n.campaign""", params).fetchall()
    return [CampaignInfo(name=r[0], runs_ok=r[1], runs_failed=r[2], cells=r[3], first_run_at=r[4], last_run_at=r[5],
                         runs=r[6], runs_imported=r[7])
            for r in rows]


@router.get("/api/campaigns", response_model=list[CampaignInfo], summary="Campaigns with run counts")
def list_campaigns(request: Request) -> list[CampaignInfo]:
    return campaign_infos(_cursor(request))


@router.get("/api/campaigns/{campaign}", response_model=CampaignInfo,
            summary="One campaign with its run counts; 404 when the analyzer holds no such campaign")
def get_campaign(request: Request, campaign: str) -> CampaignInfo:
    found = campaign_infos(_cursor(request), campaign)
    if not found:
        raise HTTPException(status_code=404, detail=f"unknown campaign {campaign!r}")
    return found[0]


@router.get("/api/campaigns/{campaign}/comparisons", response_model=CampaignReport,
            summary="Comparison table of a campaign's two sides (pod/host, nomad/kubernetes), with flags and "
                    "summary sentences")
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
    # a key whose statistics raise is said at debug level here: the service's publications say it, once a state
    return node_scores(_cursor(request), cluster=cluster, node=node, test=test, env=env, level=logging.DEBUG)


class Placement(BaseModel):
    placed_at: datetime = Field(description="When the scheduler decided.")
    namespace: str | None
    pod: str | None
    pod_uid: str | None
    node: str | None = Field(description="The chosen node; null when nothing fits.")
    test: str | None = Field(description="The benchmark the pod named (its label).")
    candidates: list[dict] = Field(description="Best candidates first: node and total score 0..100.")
    message: str | None = Field(description="The decision and what the benchmark evidence did (the group ranked "
                                            "by, evidence ignored as flagged or older than the score TTL).")


@router.get("/api/placements", response_model=list[Placement],
            summary="What the scheduler decided, newest first (its PlacementMade messages)")
def get_placements(
    request: Request,
    namespace: str | None = None,
    pod: str | None = None,
    node: str | None = None,
    test: str | None = None,
    limit: int = Query(100, ge=1, le=10_000),
) -> list[Placement]:
    where, params = [], {"limit": limit}
    for col, val in (("namespace", namespace), ("pod", pod), ("node", node), ("test", test)):
        if val is not None:
            where.append(f"{col} = ${col}")
            params[col] = val
    rows = _cursor(request).execute(
        "SELECT placed_at, namespace, pod, pod_uid, node, test, candidates, message FROM placements "
        f"{'WHERE ' + ' AND '.join(where) if where else ''} ORDER BY placed_at DESC, event_id LIMIT $limit",
        params).fetchall()
    return [Placement(placed_at=r[0], namespace=r[1], pod=r[2], pod_uid=r[3], node=r[4], test=r[5],
                      candidates=json.loads(r[6]) if r[6] else [], message=r[7]) for r in rows]
