"""`podtax campaign submit`'s check of the analyzer for an earlier campaign of the same name.

Run ids are made of the campaign's name and the cell, and the analyzer keeps the first result of a run id. The
runner refuses a name its KV holds, but after a NATS reset (its store lost) the name is free there while the
analyzer's DuckDB still holds the earlier campaign: a campaign submitted again under that name would have its
results for every cell the two share dropped in favour of the earlier ones. So submit asks the analyzer too."""

from __future__ import annotations

from urllib.parse import quote

import httpx

from podtax.cli.common import api_headers, api_url, fail, warn

TIMEOUT_S = 10.0


def earlier_campaign(name: str, base: str, held: dict) -> str:
    """Why `name` cannot be submitted: the analyzer holds it (`held`: its GET /api/campaigns/{name} answer)."""
    ok, failed = int(held.get("runs_ok", 0)), int(held.get("runs_failed", 0))
    what = (f"already has results in the analyzer at {base} ({ok} ok, {failed} failed" if ok or failed
            else f"was already submitted to the analyzer at {base} (no results yet")
    return (f"campaign {name!r} {what}: an earlier submission, e.g. before a NATS reset); its run ids "
            f"would be this one's and the analyzer keeps the first result of each: choose another name")


def _unchecked(name: str, base: str, why: str, setting: str = "PODTAX_API_URL to the analyzer") -> None:
    warn(f"could not check the analyzer at {base} for an earlier campaign {name!r} ({why}); if it holds one (e.g. "
         f"from before a NATS reset), their shared cells keep its results: set {setting} to have it checked")


async def check_analyzer(name: str) -> None:
    """Refuse (one line, exit 2) a name the analyzer holds (GET /api/campaigns/{name}: 200); its 404 naming the
    campaign unknown lets it go. Anything else (no answer, 401/403, another 404, 5xx, a body that is not the
    campaign) is one warning line, and the campaign is submitted (NATS is what it needs)."""
    base = api_url()
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT_S) as client:
            resp = await client.get(f"{base.rstrip('/')}/api/campaigns/{quote(name, safe='')}",
                                    headers=api_headers(base))
        body = resp.json() if resp.headers.get("content-type", "").startswith("application/json") else None
    except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
        return _unchecked(name, base, f"{type(exc).__name__}: {str(exc)[:200]}")
    if resp.status_code in (401, 403):
        return _unchecked(name, base, f"HTTP {resp.status_code}: it needs a token for reads",
                          "PODTAX_API_TOKEN to its token")
    if resp.status_code == 404 and isinstance(body, dict) and body.get("detail") == f"unknown campaign {name!r}":
        return None  # the analyzer's own answer: no such campaign (another 404 is a server without the route)
    if resp.status_code != 200 or not isinstance(body, dict) or body.get("name") != name:
        return _unchecked(name, base, f"HTTP {resp.status_code}, {resp.text[:200]!r}")
    raise fail(earlier_campaign(name, base, body), 2)
