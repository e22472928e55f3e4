"""`podtax campaign submit`'s check of the analyzer for an earlier campaign of the same name.

Run ids are made of the campaign's name and the cell, and the analyzer keeps the first result of a run id. The
runner refuses a name its KV holds, but after a NATS reset (its store lost) the name is free there while the
analyzer's DuckDB still holds the earlier campaign: a campaign submitted again under that name would have its
results for every cell the two share dropped in favour of the earlier ones. So submit asks the analyzer too.

An analyzer it knows of (PODTAX_API_URL, or the running `podtax up`'s) that it cannot ask (no answer, 5xx, 401/403)
refuses the submission in one line (exit 1) unless --skip-analyzer-check: it only warned and submitted, and if the
analyzer held the name, the two submissions' runs then mixed in its cells (the analyzer said so, after the fact).
A --dry-run publishes nothing, so there it is one warning line saying that submit would refuse, and why.
Without one known (PODTAX_API_URL unset and no `podtax up` here, or PODTAX_NATS_URL another NATS), a warning."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import datetime
from urllib.parse import quote, urlsplit

import httpx
from nats.js.api import RawStreamMsg
from nats.js.errors import APIError, NotFoundError

from podtax import events, subjects
from podtax.bus import EXPECTED_SEQUENCE_NOT_READY, WRONG_LAST_SEQUENCE, Bus
from podtax.cli import deadline
from podtax.cli.common import api_headers, api_url, fail, up_record, warn

TIMEOUT_S = 10.0
COUNTS = ("runs_ok", "runs_failed", "runs", "runs_imported")


def earlier_campaign(name: str, base: str, held: dict) -> str | None:
    """Why `name` cannot be submitted: the analyzer holds it (`held`: its GET /api/campaigns/{name} answer), or
    None when it holds no run of it (`runs` 0: the runner refused it, or a publish was retried), so no run id
    to share. An answer without `runs` (an older analyzer) is refused as held; one whose runs were all imported
    is refused saying so."""
    runs = held.get("runs")
    if runs == 0:
        return None
    if runs is not None and runs == held.get("runs_imported"):  # all from `podtax import`, their own run ids
        return (f"campaign {name!r} holds {runs} run(s) imported into the analyzer at {base} (podtax import): "
                f"a campaign submitted under that name would join their cells and move their ratios; choose "
                f"another name")
    ok, failed = held.get("runs_ok", 0), held.get("runs_failed", 0)
    what = (f"already has results in the analyzer at {base} ({ok} ok, {failed} failed" if ok or failed
            else f"was already submitted to the analyzer at {base} (no results yet")
    return (f"campaign {name!r} {what}: an earlier submission, e.g. before a NATS reset); its run ids "
            f"would be this one's and the analyzer keeps the first result of each: choose another name")


SKIP = "--skip-analyzer-check"


def _said(name: str, base: str, why: str, setting: str = "PODTAX_API_URL to the analyzer",
          refuse: bool = False, dry_run: bool = False) -> None:
    """One warning line, or with `refuse` one error line and exit 1 (an analyzer it knows of did not answer); with
    `refuse` and `dry_run` (nothing is published) one warning line saying submit would refuse."""
    where = f"the analyzer at {base}" if base else "an analyzer"
    said = f"could not check {where} for an earlier campaign {name!r} ({' '.join(why.split())})"
    if refuse:
        fix = "submit once it answers" if setting.startswith("PODTAX_API_URL") else f"set {setting}"
        mix = (f"if it holds one (e.g. from before a NATS reset), the two submissions' runs would mix in its cells: "
               f"{fix}, or pass {SKIP} to submit unchecked")
        if dry_run:
            return warn(f"{said}; without --dry-run submit would refuse (exit 1): {mix}")
        raise fail(f"{said}; {mix}")
    warn(f"{said}; if it holds one (e.g. from before a NATS reset), their shared cells keep its results: set "
         f"{setting} to have it checked")


def _counts_ok(body: dict) -> bool:
    return all(isinstance(body.get(k, 0), int) and not isinstance(body.get(k, 0), bool) and body.get(k, 0) >= 0
               for k in COUNTS)


async def check_analyzer(name: str, remaining_s: float | None = None, skip: bool = False,
                         dry_run: bool = False) -> None:
    """Refuse (one line, exit 2) a name the analyzer holds runs of (GET /api/campaigns/{name}: 200); its 404
    naming the campaign unknown, or `runs` 0, lets it go. Anything else (no answer within min(TIMEOUT_S, a third
    of `remaining_s`, the command's deadline left), 401/403, another 404, 5xx, a body that is not the campaign)
    is one error line and exit 1 when the analyzer is one it knows of (PODTAX_API_URL, `podtax up`'s) and not
    `skip` (with `dry_run`, which publishes nothing, a warning saying so); else one warning line, and the campaign
    is submitted (NATS is what it needs). With PODTAX_NATS_URL
    set but not PODTAX_API_URL, the analyzer `podtax up` started belongs to another NATS: not asked, a warning."""
    if os.environ.get("PODTAX_NATS_URL") and not os.environ.get("PODTAX_API_URL") and not _up_nats():
        return _said(name, "", "PODTAX_NATS_URL is set but not PODTAX_API_URL; the analyzer podtax up started "
                     "here, if any, serves its own NATS")
    base = api_url()
    known = not skip and bool(os.environ.get("PODTAX_API_URL") or up_record().get("api_url"))
    left = deadline.seconds() if remaining_s is None else remaining_s
    limit = max(0.1, min(TIMEOUT_S, left / 3))
    try:
        async with httpx.AsyncClient(timeout=limit) as client:
            resp = await asyncio.wait_for(client.get(f"{base.rstrip('/')}/api/campaigns/{quote(name, safe='')}",
                                                     headers=api_headers(base)), limit)
        body = resp.json() if resp.headers.get("content-type", "").startswith("application/json") else None
    except TimeoutError:
        return _said(name, base, f"no answer within {limit:g} s", refuse=known, dry_run=dry_run)
    except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
        return _said(name, base, f"{type(exc).__name__}: {str(exc)[:200]}", refuse=known, dry_run=dry_run)
    if resp.status_code in (401, 403):
        return _said(name, base, f"HTTP {resp.status_code}: it needs a token for reads",
                     "PODTAX_API_TOKEN to its token", known, dry_run)
    if resp.status_code == 404 and isinstance(body, dict) and body.get("detail") == f"unknown campaign {name!r}":
        return None  # the analyzer's own answer: no such campaign (another 404 is a server without the route)
    if resp.status_code != 200 or not isinstance(body, dict) or body.get("name") != name or not _counts_ok(body):
        return _said(name, base, f"HTTP {resp.status_code}, {resp.text[:200]!r}", refuse=known, dry_run=dry_run)
    if why := earlier_campaign(name, base, body):
        raise fail(why, 2)


def _servers(urls: str) -> set[tuple[str, int]]:
    """(host, port) of each server in a NATS URL list (`nats://u:p@a:4222,nats://b:4223`); user and scheme aside."""
    found = set()
    for url in urls.split(","):
        try:
            parts = urlsplit(url.strip() if "://" in url else f"nats://{url.strip()}")
            found.add(((parts.hostname or "").lower(), parts.port or 4222))
        except ValueError:  # a port out of range: matches no server
            continue
    return found


def _up_nats() -> bool:
    """PODTAX_NATS_URL names a server of the running `podtax up`'s NATS: its analyzer is this NATS's."""
    info = up_record()  # none, or a damaged one: no NATS of podtax up's to compare with
    return bool(info.get("nats_url")) and \
        bool(_servers(os.environ["PODTAX_NATS_URL"]) & _servers(str(info["nats_url"])))


async def unplanned(bus: Bus, name: str) -> tuple[str | None, int]:
    """Why `name` cannot be published now: NATS holds a campaign.submitted of it that the runner has neither planned
    (its KV's campaign.<name>, checked before) nor refused (refused.<name>, which names the submission refused: one
    refused before it does not count; a record without, of an older runner, counts): the runner is down or behind. It
    plans the first submission of a name and ignores the rest as duplicates, while the analyzer takes the last one in
    NATS as current and leaves out reports of the others (submissions.py): a second publish, after JetStream's 120 s
    window for the same message id, made the analyzer drop every report of the runs that ran. None: publish. Beside
    it, the stream sequence of that last campaign.submitted (0: none), which the publish expects (publish_once)."""
    held = await last_submission(bus, name)
    if held is None:
        return None, 0
    refused = await Bus.kv_json(await bus.kv(subjects.RUNNER_BUCKET), f"refused.{name}")
    if refused is not None and refusal_of(refused, held):
        return None, held.seq or 0  # the runner refused the one held: a new submission is planned
    at = f" at {held.time.isoformat(timespec='seconds')}" if held.time else ""
    return (f"campaign {name!r} was already submitted{at} and the runner has not planned it yet (is it running? "
            f"podtax campaign status {name} --follow waits for it); it plans that one, so nothing was submitted: "
            f"wait for it, or choose another name"), held.seq or 0


async def last_submission(bus: Bus, name: str) -> RawStreamMsg | None:
    """The last campaign.submitted of `name` NATS holds, None when it holds none."""
    try:
        return await bus.js.get_last_msg(subjects.STREAM, subjects.join(subjects.CAMPAIGN_SUBMITTED, name))
    except NotFoundError:
        return None


def refusal_of(refused: dict, held: RawStreamMsg) -> bool:
    """Whether the runner's refusal record (refused.<name>) is of `held`, the last campaign.submitted of the name NATS
    holds: by its stream sequence (`seq`) and, when the held message carries a time and the record names one
    (`submitted`), by that time too (the stream deleted and made again by hand, the runner's KV kept, starts its
    sequences again: an old record's seq named a new submission). A message without a time, of another publisher, is
    matched by its sequence only (it was read with a new now() at each decode, so the name stayed blocked for ever); a
    record without `seq` (an earlier runner's) by its time; a record naming neither counts (an older runner's)."""
    seq = refused.get("seq")
    if isinstance(seq, int) and not isinstance(seq, bool) and seq != held.seq:
        return False
    return events.same_submission(_time(refused.get("submitted")), _submitted(held.data))


def _time(value: object) -> datetime | None:
    """An ISO 8601 time, else None (unknown)."""
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _submitted(data: bytes | None) -> datetime | None:
    """The time a campaign.submitted as NATS holds it carries (the submission the runner refuses names), else None
    (none in it: decoded, it would be now())."""
    try:
        if "time" not in json.loads(data or b""):
            return None
        event = events.decode(data or b"")
    except (ValueError, TypeError):  # not an event of podtax's (pydantic's ValidationError is one), or not an object
        return None
    return event.time if isinstance(event, events.CampaignSubmittedV1) else None


async def publish_once(bus: Bus, event: events.CampaignSubmittedV1, last: int) -> None:
    """Publish a submission only if the last campaign.submitted of its name is still stream sequence `last` (0: none),
    as `unplanned` found it; else one line, exit 2. Two `podtax campaign submit` of one name at once (or another
    publisher between the check and the publish) both passed the check: both were stored (the runner plans the first,
    the analyzer takes the last: the reports of the runs that ran were left out), or, with one message id, the second
    was dropped by NATS as a duplicate and still said 'submitted'. JetStream makes the check and the store one step. Its
    refusal is 10071 on a single server, 10164 on a replicated stream (both WRONG_LAST_SEQUENCE; 10164 gave a
    traceback); 10163 (a new leader not ready to check) is one line too, exit 1: submit again."""
    name = event.data.campaign
    try:
        await bus.publish(event, last)
    except APIError as exc:
        if exc.err_code == EXPECTED_SEQUENCE_NOT_READY:  # a replicated stream's leader changing: nothing stored
            raise fail(f"NATS could not check the last submission of campaign {name!r} just now (JetStream error "
                       f"{exc.err_code}: {exc.description}; its stream's leader is changing), so nothing was "
                       f"submitted: submit it again in a few seconds") from None
        if exc.err_code not in WRONG_LAST_SEQUENCE:
            raise
        raise fail(f"campaign {name!r} was submitted by another publisher (another podtax campaign submit of it?) "
                   f"while this one checked it, so nothing was submitted: follow that one (podtax campaign status "
                   f"{name} --follow), or choose another name", 2) from None
