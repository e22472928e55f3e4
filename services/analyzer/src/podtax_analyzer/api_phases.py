"""Control-plane routes of the analyzer's HTTP API: per-object phase latencies and the phase table."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, HTTPException, Query, Request
from pydantic import BaseModel, Field

from podtax_analyzer.comparisons import UnknownCampaign, campaign_exists, compare_campaign
from podtax_analyzer.phase_table import PhaseTable, phase_latencies, phase_table, pooled_objects
from podtax_analyzer.provision_starts import provision_starts
from podtax_analyzer.rowstream import json_array

router = APIRouter(tags=["control plane"])


class PhaseLatency(BaseModel):
    run_id: str
    cluster: str
    node: str
    env: str
    backend: str
    test: str
    params: str
    object: str
    phase: str
    start_s: float
    latency_s: float
    lower_bound: bool = Field(False, description="An object given up while waiting: latency_s is the time until "
                                                 "then, and the phase took longer.")
    upper_bound: bool = Field(False, description="The phase's end was seen only by a re-list after a dropped watch "
                                                 "(WATCH_GAP), or it holds a retry's wait (RETRIED: a call sent "
                                                 "again, timed from its first attempt): the phase took less.")
    status: str | None


@router.get("/api/campaigns/{campaign}/phases", response_model=list[PhaseLatency],
            summary="Per-object phase latencies of a campaign's control-plane runs (for distributions)")
def get_phases(
    request: Request,
    campaign: str,
    phase: str | None = Query(None, description="Only this phase (accepted, provisioned, bound, ...)."),
    env: str | None = Query(None, description="Only this side (kubernetes, nomad)."),
    limit: int = Query(100_000, ge=1, le=1_000_000),
) -> list[PhaseLatency]:
    con = request.app.state.store.cursor()
    if not campaign_exists(con, campaign):
        raise HTTPException(status_code=404, detail=f"unknown campaign {campaign!r}")
    rows = phase_latencies(con, campaign, phase=phase, env=env, limit=limit)
    return json_array(rows, lambda row: PhaseLatency(**row))  # type: ignore[return-value]


@router.get("/api/campaigns/{campaign}/phase-table", response_model=PhaseTable,
            summary="Control-plane phases side by side: medians, ratio with CI, verdict, flags, definitions")
def get_phase_table(
    request: Request,
    campaign: str,
    threshold: float = Query(0.01, ge=0.0, lt=1.0, description="Practical threshold as a fraction (0.01 = 1%)."),
    correction: Literal["holm", "bh"] = Query("holm", description="Multiple-comparison correction."),
) -> PhaseTable:
    con = request.app.state.store.cursor()
    try:
        report = compare_campaign(con, campaign, threshold=threshold, correction=correction)
    except UnknownCampaign:
        raise HTTPException(status_code=404, detail=f"unknown campaign {campaign!r}") from None
    return phase_table(report, pooled_objects(con, campaign), provision_starts(con, campaign))
