"""Why a campaign's runs failed, for `campaign status --follow`'s last line: it said only 'campaign x finished with 3
failed run(s) (exit status 3)', and the reasons (a tool killed at its timeout, a tool not installed...) were in the
analyzer's database and the services' logs. Asked of the analyzer (GET /api/runs?status=failed), which stores each
failure with a sentence naming the fix; when it cannot be asked (none, another NATS's, no answer, a malformed
PODTAX_API_URL or up.json), nothing is said."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import httpx
import typer

from podtax.cli.common import api_headers, api_url
from podtax.cli.earlier import _up_nats

TIMEOUT_S = 5.0
SHOWN = 3  # reasons shown, most frequent first


def reasons(rows: list[dict[str, Any]]) -> list[str]:
    """'<n> <reason>: <the first one's detail>' per failure reason (cancelled runs left out), most frequent first."""
    rows = [r for r in rows if r.get("failure_reason") != "cancelled"]
    counts = Counter(str(r.get("failure_reason") or "unknown") for r in rows)
    first = {}
    for r in rows:
        first.setdefault(str(r.get("failure_reason") or "unknown"), str(r.get("failure_detail") or "").strip())
    return [f"{n} {reason}" + (f": {first[reason]}" if first[reason] else "")
            for reason, n in counts.most_common(SHOWN)]


def why_failed(name: str) -> list[str]:
    """reasons() of campaign `name`'s failed runs the analyzer stored; [] when it cannot be asked."""
    try:
        if os.environ.get("PODTAX_NATS_URL") and not os.environ.get("PODTAX_API_URL") and not _up_nats():
            return []  # the analyzer podtax up started serves another NATS
        base = api_url()
        headers = api_headers(base)
    except (typer.Exit, OSError, ValueError):  # a malformed PODTAX_API_URL, a damaged up.json: it cannot be asked
        return []  # (api_url's line says why); the caller's status and line stay
    try:
        resp = httpx.get(f"{base.rstrip('/')}/api/runs", params={"campaign": name, "status": "failed",
                                                                 "limit": 100_000},
                         headers=headers, timeout=TIMEOUT_S)
        rows = resp.json() if resp.status_code == 200 else []
    except (httpx.HTTPError, httpx.InvalidURL, ValueError):
        return []
    return reasons([r for r in rows if isinstance(r, dict)]) if isinstance(rows, list) else []
