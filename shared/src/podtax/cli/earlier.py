"""`podtax campaign submit`'s check of the analyzer for an earlier campaign of the same name.

Run ids are made of the campaign's name and the cell, and the analyzer keeps the first result of a run id. The
runner refuses a name its KV holds, but after a NATS reset (its store lost) the name is free there while the
analyzer's DuckDB still holds the earlier campaign: a campaign submitted again under that name would have its
results for every cell the two share dropped in favour of the earlier ones. So submit asks the analyzer too."""

from __future__ import annotations

import httpx

from podtax.cli.common import api_headers, api_url, fail, warn

TIMEOUT_S = 10.0


def earlier_campaign(name: str, base: str, campaigns: list[dict]) -> str | None:
    """Why `name` cannot be submitted: the analyzer's campaign list (GET /api/campaigns) holds it; else None."""
    for c in campaigns:
        if c.get("name") == name:
            ok, failed = int(c.get("runs_ok", 0)), int(c.get("runs_failed", 0))
            held = (f"already has results in the analyzer at {base} ({ok} ok, {failed} failed" if ok or failed
                    else f"was already submitted to the analyzer at {base} (no results yet")
            return (f"campaign {name!r} {held}: an earlier submission, e.g. before a NATS reset); its run ids "
                    f"would be this one's and the analyzer keeps the first result of each: choose another name")
    return None


async def check_analyzer(name: str) -> None:
    """Refuse (one line, exit 2) a name the analyzer already holds; an analyzer that cannot be asked is one
    warning line, and the campaign is submitted (NATS is what it needs)."""
    base = api_url()
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT_S) as client:
            resp = await client.get(f"{base.rstrip('/')}/api/campaigns", headers=api_headers(base))
        resp.raise_for_status()
        campaigns = resp.json()
        if not isinstance(campaigns, list):
            raise ValueError("its campaign list is not a list")
    except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
        warn(f"could not check the analyzer at {base} for an earlier campaign {name!r} ({type(exc).__name__}: "
             f"{str(exc)[:200]}); if it holds one (e.g. from before a NATS reset), their shared cells keep its "
             f"results: set PODTAX_API_URL to the analyzer to have it checked")
        return
    if why := earlier_campaign(name, base, [c for c in campaigns if isinstance(c, dict)]):
        raise fail(why, 2)
