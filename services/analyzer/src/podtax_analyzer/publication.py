"""How the analyzer publishes its score and cell-statistics events (service.Analyzer._publish).

A score event (`podtax.score.updated.<env>.<node>`, one per (test, metric, params) a new result changed) is a notice:
the score itself is in the scores bucket (put first), which is what the scheduler reads, and no podtax service
consumes the event. A busy node's score subject can reach its limit of messages
(PODTAX_NATS_STREAM_MAX_MSGS_PER_SUBJECT, 1,000,000 by default, within PODTAX_NATS_STREAM_MAX_AGE_S): before, that
refusal failed the whole publication, its runs went back to the pending set and were published again every cycle,
for ever, the set growing with every new result, and the events NATS had taken (other nodes' scores, cell
statistics) were stored again each time under new ids. Now a score event refused for want of room is said and
dropped (the bucket holds the score); and every event is published under an id made of its subject and content, so
one sent again (its cell statistics refused: the runner needs those, they are sent again) is stored once
(JetStream's de-duplication window)."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence

from podtax import events
from podtax.bus import Bus, at_limit

log = logging.getLogger("podtax.analyzer")


def stable(event: events.Envelope) -> events.Envelope:
    """`event` under an id made of its subject and content (its `updated_at` left out: the same figures)."""
    data = event.data.model_dump(mode="json", exclude={"updated_at"})  # type: ignore[attr-defined]
    digest = hashlib.sha256(f"{event.type}\n{event.subject}\n{sorted(data.items())}".encode()).hexdigest()[:40]
    return event.model_copy(update={"id": digest})


class Publisher:
    """Publishes score events (a refusal for want of room said and dropped) and cell statistics (anything else
    raised: the caller publishes them again)."""

    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self.refused = ""  # why score events were last refused ('' once NATS takes them): said once

    async def publish(self, scores: Sequence[events.Envelope], cells: Sequence[events.Envelope]) -> None:
        """Cell statistics first (a refusal raised), then scores: a refusal of a score still in flight after its call
        ended would end the next call waiting (Bus.publish_many), which must not be the cell statistics'."""
        if cells:
            await self.bus.publish_many([stable(e) for e in cells])
        if not scores:
            return
        try:
            await self.bus.publish_many([stable(e) for e in scores])
        except Exception as exc:
            if not at_limit(exc):
                raise
            if str(exc) != self.refused:
                log.error("NATS refuses score events (%s); the scores are in the scores bucket (what the scheduler "
                          "reads): their events are dropped until there is room (said once)", exc)
            self.refused = str(exc)
            return
        self.refused = ""
