"""What podtax.busconsume does with each message it handles: read it (decode, or why it is dead-lettered), the
context it was published in, its ack, nak or term (settle: NATS away is one line), a handler's failure logged, and
the heartbeat that keeps a long handler's messages in progress."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Sequence

from nats.aio.msg import Msg
from nats.errors import (
    ConnectionClosedError,
    ConnectionDrainingError,
    ConnectionReconnectingError,
    NoRespondersError,
    NoServersError,
    OutboundBufferLimitError,
    StaleConnectionError,
)
from nats.errors import TimeoutError as NatsTimeout
from nats.js.errors import KeyValueError, NoStreamResponseError, NotFoundError, ServiceUnavailableError
from opentelemetry import context as otel_context
from opentelemetry import trace
from pydantic import ValidationError

from podtax import telemetry
from podtax.events import Event, decode, misplaced
from podtax.templates import pydantic_msg

log = logging.getLogger("podtax.bus")
NATS_AWAY = (ConnectionClosedError, ConnectionDrainingError, ConnectionReconnectingError, NoRespondersError,
             NatsTimeout, NoServersError, OutboundBufferLimitError, StaleConnectionError, NoStreamResponseError,
             NotFoundError, ServiceUnavailableError)  # nats-py's errors saying NATS is away (OutboundBufferLimit:
# and nats-py's buffer for it full) or lost a stream, a consumer, a bucket


async def settle(call: Awaitable[None], what: str, msg: Msg) -> bool:
    """An ack, nak, term or in_progress of `msg`, and whether it was sent; NATS away (NATS_AWAY: its outbound buffer
    full too) is one line, not an error that ends the consumer (before: a runner whose campaign save failed so exited
    1; an ack so ended any service): unsettled, the message is delivered again after its consumer's ack_wait (so not
    counted as finished: the caller counts it only on True)."""
    try:
        await call
    except NATS_AWAY as exc:
        log.warning("could not %s %s (%s: %s): NATS away; delivered again after ack_wait", what, msg.subject,
                    type(exc).__name__, exc)
        return False
    return True


def log_failure(exc: Exception, what: str, *args: object) -> None:
    """Log a handler's failure: NATS away or having lost what podtax keeps there (NATS_AWAY, podtax's NatsLost) in
    one line, its type and message, as the line that follows says what became of NATS; any other with its traceback,
    nats-py's errors too (a bad subject, a payload above max_payload, a stale revision: a bug to find)."""
    from podtax.bus import NatsLost

    if isinstance(exc, (*NATS_AWAY, NatsLost)) and not isinstance(exc, KeyValueError):  # a key's absence: an answer
        log.error(f"{what}: %s: %s", *args, type(exc).__name__, exc)
    else:
        log.exception(what, *args)


def read(msg: Msg) -> tuple[Event | None, str | None]:
    """The message's event, or None and why it is dead-lettered: schema-invalid, or misplaced (an event
    on a subject its type and content do not give)."""
    try:
        event = decode(msg.data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        at = f"{where}: " if where else ""
        return None, f"schema-invalid: {at}{pydantic_msg(first['msg'])} ({exc.error_count()} errors)"
    why = misplaced(event, msg.subject)
    return (None, why) if why is not None else (event, None)


def consumer_of(msg: Msg) -> str:
    try:
        return msg.metadata.consumer or "?"
    except Exception:  # noqa: BLE001 - not a JetStream message
        return "?"


def message_context(msg: Msg, event: Event) -> otel_context.Context:
    """The context a message was published in; a run's own trace when none travelled with it."""
    ctx = telemetry.extract(msg.headers)
    if not trace.get_current_span(ctx).get_span_context().is_valid:
        run_id = telemetry.event_run_id(event)
        if run_id:
            return telemetry.run_context(run_id)
    return ctx


async def with_heartbeat(msgs: Sequence[Msg], work: Awaitable[None], every_s: float) -> None:
    """Await `work`, telling JetStream the messages are in progress so a long run is not redelivered."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=every_s)
            if done:
                return task.result()
            for msg in msgs:  # NATS away with nats-py's buffer full: one line (it failed the handler), not told
                await settle(msg.in_progress(), "tell in progress", msg)
    finally:  # cancelled (the service stopping: NATS lost): its failure is the stop's, not an asyncio traceback
        if not task.done():
            task.add_done_callback(ended_unwatched)
        elif not task.cancelled():  # it failed as the stop came (the same loop turn): retrieved, not left to asyncio
            task.exception()


def ended_unwatched(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.info("a handler left running as its consumer stopped ended with %s: %s", type(exc).__name__, exc)
