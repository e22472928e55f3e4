"""Imported runs the database holds twice (imports_twice.py): GET lists them, POST takes them once."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from pydantic import BaseModel

from podtax_analyzer.imports_twice import find

router = APIRouter(tags=["imports"])


class ImportedTwice(BaseModel):
    run_id: str  # the copy (dropped by POST)
    kept_run_id: str  # the run kept: the same capture
    campaign: str
    node: str
    kept_node: str
    env: str
    imported_from: str
    kept_imported_from: str  # the kept run's file: check both before POST when they may be two runs
    moved: bool = False  # POST: the copy's outcome went to the run kept, which had none or a failure


@router.get("/api/imports/twice", response_model=list[ImportedTwice],
            summary="Imported runs stored twice under two run ids (an older podtax spelled the node otherwise, or "
                    "stored a copy under another file name; or two runs of one manifest logged the same text at one "
                    "start)")
def imports_twice(request: Request, campaign: str | None = None) -> list[dict[str, Any]]:
    return find(request.app.state.store.cursor(), campaign)


@router.post("/api/imports/twice", response_model=list[ImportedTwice],
             summary="Take once the imported runs stored twice: the copies' rows go, the kept runs stay")
async def drop_imports_twice(request: Request, campaign: str | None = None) -> list[dict[str, Any]]:
    """Without ?campaign it acts on every campaign: a campaign sent as JSON, or a misspelt parameter, would drop
    the copies of all of them instead of the one meant, so both are refused (as POST /api/reparse does)."""
    unknown = sorted(set(request.query_params) - {"campaign"})
    if unknown:
        raise HTTPException(422, f"unknown parameter(s) {', '.join(unknown)}: POST /api/imports/twice takes "
                                 "?campaign=NAME (none: every campaign)")
    async for chunk in request.stream():  # refused at its first chunk: a large body is never held
        if chunk:
            raise HTTPException(422, "POST /api/imports/twice takes no body: pass ?campaign=NAME in the URL")
    store = request.app.state.store
    twice, changed = await asyncio.to_thread(store.drop_imported_twice, campaign)
    if changed and (on_change := getattr(request.app.state, "runs_changed", None)):
        on_change(changed)  # the service publishes the kept runs' scores and sweeps the dropped ones' away
    return twice
