"""Report routes of the analyzer's HTTP API: the HTML report, the workbook, raw exports, and the
campaign-to-campaign comparison. All are read-only GETs; the CLI fetches them (`podtax report --html`,
`podtax export`, `podtax compare`), so the CLI never needs the analyzer package installed."""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Literal
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, Response, StreamingResponse
from starlette.background import BackgroundTask

from podtax_analyzer.campaign_compare import compare_campaigns
from podtax_analyzer.compare_models import CampaignChange
from podtax_analyzer.comparisons import UnknownCampaign, compare_campaign
from podtax_analyzer.exports import NoRoom, chunks, zip_file
from podtax_analyzer.html_report import html_file
from podtax_analyzer.report_data import load_report_data

router = APIRouter(tags=["report"])
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
Threshold = Query(0.01, ge=0.0, lt=1.0, description="Practical threshold as a fraction (0.01 = 1%).")
Correction = Query("holm", description="Multiple-comparison correction.")


def _unknown(name: str) -> HTTPException:
    return HTTPException(status_code=404, detail=f"unknown campaign {name!r}")


def _not_itself(base: str | None, new: str) -> None:
    """422 when a campaign would be compared with itself (every cell against itself: nothing to say)."""
    if base == new:
        raise HTTPException(status_code=422, detail=f"base and new are both {new!r}: name two different campaigns")


def _attachment(filename: str) -> dict[str, str]:
    return {"Content-Disposition": f"attachment; filename*=UTF-8''{quote(filename, safe='')}"}


def _streamed(make: Callable[[], tuple[IO[bytes], int]], media_type: str,
              headers: dict[str, str] | None = None) -> Response:
    """A response made in a temporary file (exports.spooled), sent a chunk at a time, then closed (so deleted).
    507 (Insufficient Storage) naming TMPDIR when its disk is full."""
    try:
        out, size = make()
    except NoRoom as exc:
        raise HTTPException(status_code=507, detail=str(exc)) from None
    return StreamingResponse(chunks(out), media_type=media_type, background=BackgroundTask(out.close),
                             headers={**(headers or {}), "Content-Length": str(size)})


@router.get("/report/{campaign}", response_class=HTMLResponse, summary="The campaign report as one HTML page")
def html_report(request: Request, campaign: str, threshold: float = Threshold,
                correction: Literal["holm", "bh"] = Correction,
                compare: str | None = Query(None, description="Also compare with this (base) campaign.")) -> Response:
    con = request.app.state.store.cursor()
    try:
        data = load_report_data(con, campaign, threshold=threshold, correction=correction)
        _not_itself(compare, campaign)
        change = (compare_campaigns(con, compare, campaign, threshold=threshold, correction=correction)
                  if compare else None)
    except UnknownCampaign as exc:
        raise _unknown(str(exc)) from None
    return _streamed(lambda: html_file(data, change), "text/html")


@router.get("/api/campaigns/{campaign}/export.xlsx", summary="The campaign as an Excel workbook",
            response_class=Response, responses={200: {"content": {XLSX: {}}}})
def export_xlsx(request: Request, campaign: str, threshold: float = Threshold,
                correction: Literal["holm", "bh"] = Correction) -> Response:
    try:
        data = load_report_data(request.app.state.store.cursor(), campaign, threshold=threshold,
                                correction=correction)
    except UnknownCampaign:
        raise _unknown(campaign) from None
    from podtax_analyzer.workbook import write_workbook  # openpyxl and lxml: ~20 MB, loaded on first use

    return Response(write_workbook(data), media_type=XLSX, headers=_attachment(f"{campaign}.xlsx"))


@router.get("/api/campaigns/{campaign}/export.zip", summary="Runs, metrics, phases and comparisons as CSV or "
            "Parquet files in one zip", response_class=Response, responses={200: {"content": {"application/zip": {}}}})
def export_files(request: Request, campaign: str, format: Literal["csv", "parquet"] = Query("csv"),
                 threshold: float = Threshold, correction: Literal["holm", "bh"] = Correction) -> Response:
    con = request.app.state.store.cursor()
    try:  # the comparison table only: the report's run values, provenance and placements are not in these files
        report = compare_campaign(con, campaign, threshold=threshold, correction=correction)
    except UnknownCampaign:
        raise _unknown(campaign) from None
    return _streamed(lambda: zip_file(con, report, format), "application/zip", _attachment(f"{campaign}-{format}.zip"))


@router.get("/api/compare", response_model=CampaignChange, summary="Did a cell's ratio change from BASE to NEW?")
def compare(request: Request, base: str, new: str, threshold: float = Threshold,
            correction: Literal["holm", "bh"] = Correction) -> CampaignChange:
    _not_itself(base, new)
    try:
        return compare_campaigns(request.app.state.store.cursor(), base, new, threshold=threshold,
                                 correction=correction)
    except UnknownCampaign as exc:
        raise _unknown(str(exc)) from None
