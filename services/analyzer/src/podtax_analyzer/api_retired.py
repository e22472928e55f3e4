"""A node's retired runs (retired.py): GET lists them, POST retires a node's runs before a time, DELETE undoes it."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from fastapi import APIRouter, HTTPException, Query, Request
from pydantic import BaseModel, Field

from podtax_analyzer import retired

router = APIRouter(tags=["scores"])


class RetiredScore(BaseModel):
    env: str
    test: str
    params_key: str
    metric: str
    runs: int = Field(description="How many runs this score (GET /api/scores' key) would count but for the "
                                  "retirement.")


class Retired(BaseModel):
    cluster: str
    node: str
    before: datetime = Field(description="The node's runs started before it count in no score (still stored).")
    retired_at: datetime = Field(description="When the user retired them.")
    runs: int = Field(description="How many of the node's successful runs that leaves out (every test and env).")
    scores: list[RetiredScore] = Field(default_factory=list, description="Per score it changes, the runs it leaves "
                                       "out of that score.")


@router.get("/api/retired", response_model=list[Retired],
            summary="Nodes whose runs before a time count in no score (podtax retire)")
def get_retired(request: Request, cluster: str | None = None, node: str | None = None) -> list[dict[str, Any]]:
    return retired.listed(request.app.state.store.cursor(), cluster, node)


def _changed(request: Request, run_ids: set[str]) -> None:
    if run_ids and (on_change := getattr(request.app.state, "runs_changed", None)):
        on_change(run_ids)  # the service publishes the node's scores again and sweeps those left without a run


@router.post("/api/retired", response_model=Retired,
             summary="Score a node only by its runs started from `before` on; the older runs stay stored")
async def post_retired(request: Request, node: str, before: datetime = Query(
        description="ISO 8601 time (UTC when it names no zone); not in the future"),
        cluster: str | None = None) -> dict[str, Any]:
    try:
        row, ids = await asyncio.to_thread(retired.retire, request.app.state.store, node, before, cluster)
    except retired.Refusal as exc:
        raise HTTPException(exc.status, str(exc)) from None
    _changed(request, ids)
    return row


@router.delete("/api/retired", response_model=Retired, summary="Count every run of a node again")
async def delete_retired(request: Request, node: str, cluster: str | None = None) -> dict[str, Any]:
    try:
        row, ids = await asyncio.to_thread(retired.undo, request.app.state.store, node, cluster)
    except retired.Refusal as exc:
        raise HTTPException(exc.status, str(exc)) from None
    _changed(request, ids)
    return row
