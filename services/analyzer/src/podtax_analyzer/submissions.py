"""Reports of an earlier submission of a campaign, left out of the store. Run ids are made of the campaign's name,
cell, env and repetition, so a campaign submitted again under its name (after a NATS reset) plans the same ones, and
a report of the earlier submission that NATS delivers after it (a host agent's late log, a kept copy) was stored as
the new submission's run, whose own result was then dropped (the first result of a run wins). The runner stamps each
run with its submission (RunSpec.submitted, the campaign.submitted event's time) and its reports echo it; the
campaigns table holds the newest submission of each name. A report older than that is left out (its raw log, result
or failure), in one error line: the store has no column to tell two submissions' runs of one id apart, and stored it
would stand for the new submission's run. A report without the stamp (an older runner or agent) is stored, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from podtax import events

log = logging.getLogger("podtax.analyzer.store")
REPORTS = (events.RawLogV1, events.ResultV1, events.RunFailedV1)


def current(cursor: Callable[[], Any], batch: Sequence[events.Envelope]) -> Sequence[events.Envelope]:
    """`batch` without the reports of an earlier submission than the newest its campaign has (stored, or in `batch`);
    `cursor` opens a cursor on the store (only when a report carries its submission)."""
    stamped = [e for e in batch if isinstance(e, REPORTS) and e.data.run.submitted is not None]
    if not stamped:
        return batch
    names = sorted({e.data.run.campaign for e in stamped})
    with cursor() as con:
        newest: dict[str, datetime] = dict(con.execute(
            "SELECT campaign, submitted_at FROM campaigns WHERE campaign IN (SELECT unnest($1::varchar[]))",
            [names]).fetchall())
    for e in batch:
        if isinstance(e, events.CampaignSubmittedV1) and e.data.campaign in names:
            newest[e.data.campaign] = max(newest.get(e.data.campaign, e.time), e.time)
    stale = [e for e in stamped if (t := newest.get(e.data.run.campaign)) is not None and e.data.run.submitted < t]
    for e in stale:
        run = e.data.run
        log.error("%s of run %s not stored: it is of an earlier submission of campaign %s (submitted at %s), not of "
                  "the newest one (submitted at %s), which has the same run ids", e.type, run.run_id, run.campaign,
                  run.submitted.isoformat() if run.submitted else "?", newest[run.campaign].isoformat())
    left = {id(e) for e in stale}
    return [e for e in batch if id(e) not in left] if left else batch
