"""What a resuming runner does with the reports kept in its bucket (outbox.KEPT: NATS refused them): each copy of a run
still in flight and not recorded as reported, of the campaign's own submission, is sent instead of running the run
again; every other copy is removed. Before (review r1 of a1f16ee), only the copies of active campaigns were looked at
and only those of runs no longer in flight removed: a copy of a finished or unknown campaign, of a run recorded as
reported, or one that did not decode stayed in the bucket for ever, and a copy of a campaign of the same name
submitted again would have been sent as its run's report. A copy the runner kept before copies named their
submission (the bare event) is sent when its run is in flight and not reported, as it cannot be told from another
submission's: it was removed as undecodable and the run run again (review r6, L3)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from nats.js.kv import KeyValue
from podtax import events

from podtax_runner.outbox import KEPT, kept_copy
from podtax_runner.spool import Spool, names_run
from podtax_runner.state import CampaignState

log = logging.getLogger("podtax.runner")


def split_key(key: str) -> tuple[str, str] | None:
    """(campaign, run id) of a KEPT key (`held.<campaign>.<run id>`: a run id has no dot), None for another key."""
    prefix, _, rest = key.partition(".")
    campaign, _, run_id = rest.rpartition(".")
    return (campaign, run_id) if prefix == KEPT and campaign and run_id else None


def sorted_out(entries: list[tuple[str, bytes]], campaigns: dict[str, CampaignState]
               ) -> tuple[dict[str, events.Envelope], dict[str, str]]:
    """Of the kept copies (`entries`: keys and values), those to send (by run id) and the keys to remove, each with
    why; `campaigns` are the active campaigns (not finished) by name."""
    send: dict[str, events.Envelope] = {}
    remove: dict[str, str] = {}
    for key, value in entries:
        where = split_key(key)
        try:
            submitted, event = kept_copy(value)
        except ValueError as exc:
            remove[key] = f"it does not decode ({exc})"
            continue
        run_id = event.data.run.run_id  # a spool file's key may hold it cut (spool.file_key)
        state = campaigns.get(where[0]) if where else None
        s = state.runs.get(run_id) if state is not None and where else None
        if where is None or not names_run(where[1], run_id):
            remove[key] = f"it is of run {run_id}, not of its key"
        elif state is None:
            remove[key] = f"campaign {where[0]} is finished or unknown"
        elif submitted is not None and submitted != state.created_at.isoformat():  # None: of the runner before
            remove[key] = (f"it is of a submission of campaign {where[0]} made at {submitted or 'an unknown time'}, "
                           f"not of the one made at {state.created_at.isoformat()}")
        elif s is None or s.status != "dispatched" or s.reported_at is not None:
            remove[key] = f"run {run_id} is " + ("unknown" if s is None else "recorded as reported"
                                                 if s.reported_at is not None else s.status)
        else:
            send[run_id] = event
    return send, remove


async def copies(kv: KeyValue, spool: Spool | None, entries: list[tuple[str, bytes]], active: list[CampaignState]
                 ) -> dict[str, events.Envelope]:
    """The reports an earlier runner kept (its bucket's copies, `entries`: the KEPT keys and values, then `spool`'s) to
    send instead of running their runs again, by run id; every other copy is removed (from `kv`, from the spool)."""
    campaigns = {c.name: c for c in active}
    send, stale = sorted_out(entries, campaigns)
    for key, why in stale.items():  # a copy whose report NATS took, or left by a finished campaign: gone now
        log.info("removing the kept report %s: %s", key, why)
        with contextlib.suppress(Exception):
            await kv.delete(key)
    for key, path in await asyncio.to_thread(spool.entries) if spool else []:
        try:  # one file at a time: read, sorted out and removed alone (its bytes dropped before the next)
            value = await asyncio.to_thread(path.read_bytes)
        except OSError as exc:
            log.warning("the spooled report %s could not be read (%s): left there", path.name, exc)
            continue
        spooled, gone = sorted_out([(key, value)], campaigns)
        del value
        for run_id, event in spooled.items():
            send.setdefault(run_id, event)
        for why in gone.values():
            log.info("removing the spooled report %s: %s", path.name, why)
            with contextlib.suppress(OSError):
                await asyncio.to_thread(path.unlink)
    return send
