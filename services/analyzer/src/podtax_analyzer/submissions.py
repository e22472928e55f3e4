"""Reports of an earlier submission of a campaign, left out of the store. Run ids are made of the campaign's name,
cell, env and repetition, so a campaign submitted again under its name (after a NATS reset) plans the same ones, and
a report of the earlier submission that NATS delivers after it (a host agent's late log, a kept copy) was stored as
the new submission's run, whose own result was then dropped (the first result of a run wins). The runner stamps each
run with its submission (RunSpec.submitted, the campaign.submitted event's time) and its reports echo it.

Which submission of a name is current is decided in stream order, never by the senders' clocks: the analyzer's one
consumer reads the events in the order NATS holds them, so a campaign.submitted of a time not seen before for its
name becomes the current one (campaigns.submitted_at), and one seen before (a redelivery) changes nothing; every
time seen is kept (campaign_submissions). Ordered by time instead, a submission from a machine whose clock was behind
the first submitter's had every report dropped. A stamped report of another submission than its campaign's current
one is left out (its raw log, result or failure, in one error line), as the runner leaves it out: the store has no
column to tell two submissions' runs of one id apart, and stored it would stand for the new submission's run. That
submission may be one the analyzer never saw (it ran before a NATS reset while the analyzer was down or behind):
a time not seen is taken as earlier only when it is earlier than the current one's; a later one is a submission whose
campaign.submitted is still to be read (see `ahead`), and its report is stored. "Another submission" is
RunSpec.of_another_submission, which the runner decides by too; `ahead` is the analyzer's alone: the runner stamps runs
with the one submission it planned, so it never holds a report of a submission still to come. A report without the
stamp (an older runner or agent), or of a campaign the analyzer holds no submission of, is stored, as before.
Times compare in UTC; one without a timezone (events.decode accepts it) is read as UTC. The CLI refuses to publish a
name whose earlier campaign.submitted the runner has not planned yet (cli/earlier.unplanned): the runner plans the first
and ignores the rest, which the analyzer would take as current.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from podtax import events
from podtax.events import utc

log = logging.getLogger("podtax.analyzer.store")
REPORTS = (events.RawLogV1, events.ResultV1, events.RunFailedV1)


def ahead(stamp: datetime, cur: datetime, seen: set[tuple[str, datetime]], run: events.RunSpec) -> bool:
    """Whether a report's submission, not the current one, is one still to be read: a time not seen for the name and
    later than the current one's. A report can come before its campaign.submitted (an analyzer restarted holding
    that event fetched and not acked: NATS gives it again only after ack_wait, the next ones at once; review r5):
    stored, as the runner runs that submission. A time seen before, or earlier than the current one, is an earlier
    submission's (one the analyzer may never have read: it ran before a NATS reset)."""
    return (run.campaign, stamp) not in seen and stamp > cur


def current(cursor: Callable[[], Any], batch: Sequence[events.Envelope]) -> Sequence[events.Envelope]:
    """`batch` without the reports of another submission of their campaign than the current one at their place in
    the stream, and without the campaign.submitted events of a time already seen (redeliveries): those left are new
    submissions, each current from its place on. `cursor` opens a cursor on the store (the submissions held)."""
    names = sorted({e.data.run.campaign for e in batch if isinstance(e, REPORTS) and e.data.run.submitted}
                   | {e.data.campaign for e in batch if isinstance(e, events.CampaignSubmittedV1)})
    if not names:
        return batch
    with cursor() as con:
        held = con.execute("SELECT campaign, submitted_at FROM campaign_submissions WHERE campaign IN "
                           "(SELECT unnest($1::varchar[]))", [names]).fetchall()
        now: dict[str, datetime] = {c: utc(t) for c, t in con.execute(
            "SELECT campaign, submitted_at FROM campaigns WHERE campaign IN (SELECT unnest($1::varchar[]))",
            [names]).fetchall()}
    seen = {(c, utc(t)) for c, t in held} | set(now.items())
    kept: list[events.Envelope] = []
    for e in batch:
        if isinstance(e, events.CampaignSubmittedV1):
            key = (e.data.campaign, utc(e.time))
            if key in seen:
                continue  # a redelivery: the current submission stays
            seen.add(key)
            now[e.data.campaign] = key[1]
        elif isinstance(e, REPORTS) and (run := e.data.run).submitted is not None:
            stamp = utc(run.submitted)
            cur = now.get(run.campaign)
            if cur is not None and run.of_another_submission(cur) and not ahead(stamp, cur, seen, run):
                log.error("%s of run %s not stored: it is of an earlier submission of campaign %s (submitted at %s), "
                          "not of the current one (submitted at %s), which has the same run ids",
                          e.type, run.run_id, run.campaign, stamp.isoformat(), cur.isoformat())
                continue
        kept.append(e)
    return kept
