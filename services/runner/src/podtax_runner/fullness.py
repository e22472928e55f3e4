"""Whether the events stream is full, for the runner's expiry of runs that never reported.

A full events stream (discard new) refuses every report: a host agent keeps its run's log on disk and sends it again,
the runner holds its own executors' (outbox.py). A run expired meanwhile as no-report was failed and run again,
and its measured log, stored once there was room, was a second result for one planned run. So no run expires
while the stream is full, and each is given its grace again from the moment it is not (Runner.tick)."""

from __future__ import annotations

import asyncio
import logging

from nats.js import JetStreamContext
from podtax import subjects

log = logging.getLogger("podtax.runner")
PROBE_EVERY_S = 5.0  # how often the runner looks at the stream's size (one stream info request)
ANSWER_S = 1.0  # how long it waits for the answer


async def full(js: JetStreamContext, max_payload: int) -> str:
    """Why the events stream counts as full (within the larger of a message's size and 5 % of its limit, capped at
    `max_payload`, of its size limit), or '' (no limit, room, or no answer: then runs expire as before)."""
    try:  # asked under the runner's lock: never for long (NATS away: a request waited 5 s, and each tick with it)
        info = await asyncio.wait_for(js.stream_info(subjects.STREAM), ANSWER_S)
    except Exception as exc:  # noqa: BLE001 - NATS away: the expiry goes on as before
        log.debug("events stream size not known: %s", exc)
        return ""
    limit, used = info.config.max_bytes or -1, info.state.bytes or 0
    if limit <= 0 or used + min(max_payload, max(1, limit // 20)) <= limit:
        return ""
    return (f"the events stream {subjects.STREAM} is full ({used:,} of its {limit:,} bytes): reports are refused, "
            "so no run expires as no-report until there is room (each then gets its grace again); raise its size "
            f"limit as a NATS admin (`nats stream edit {subjects.STREAM} --max-bytes`; PODTAX_NATS_STREAM_MAX_BYTES "
            "applies only when the stream is created) or wait until old events age out (PODTAX_NATS_STREAM_MAX_AGE_S)")
