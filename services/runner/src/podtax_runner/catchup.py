"""Wait until a durable consumer has handled what was in its stream when the service started.

A restarted runner must not expire a run whose result is waiting in the outcome stream: that run would
be failed as no-report, retried, and its result then met as a late duplicate. A fixed grace from the
restart is not enough on a loaded machine (the backlog may take longer to read), so expiry waits until
the outcome consumer has caught up: nothing left to deliver, and everything delivered acked (or acked
up to the stream's last message at start)."""

from __future__ import annotations

import asyncio
import logging

from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

log = logging.getLogger("podtax.runner")
POLL_S = 0.5
LIMIT_S = 600.0  # past this, runs expire again anyway (a consumer that never catches up must not stall them)


async def caught_up(js: JetStreamContext, stream: str, durable: str, stop: asyncio.Event) -> None:
    """Return once `durable` has handled its stream's backlog as of now (at once when it does not exist
    yet: a first start has no backlog), when `stop` is set, or after LIMIT_S. NATS away is waited out."""
    start = None
    waited = 0.0
    while not stop.is_set() and waited < LIMIT_S:
        try:
            if start is None:
                start = (await js.stream_info(stream)).state.last_seq
            info = await js.consumer_info(stream, durable)
        except NotFoundError:
            return
        except Exception as exc:  # noqa: BLE001 - NATS away or slow: try again
            log.warning("waiting for NATS to read the %s backlog: %s", durable, exc)
        else:
            floor = info.ack_floor.stream_seq if info.ack_floor else 0
            if not info.num_pending and (not info.num_ack_pending or (floor or 0) >= start):
                if waited >= 5:
                    log.info("%s caught up with its backlog after %.0f s", durable, waited)
                return
        await asyncio.sleep(POLL_S)
        waited += POLL_S
    if waited >= LIMIT_S:
        log.warning("%s has not caught up with its backlog after %.0f s; runs expire again", durable, waited)
