"""The consuming side of :class:`podtax.bus.Bus` (a mixin; Bus owns the connection and its JetStream context
`js`): durable pull consumers with explicit ack, one message or one batch at a time; a handler's side effect is
committed before the ack; a failing handler is retried with backoff up to `max_deliver` deliveries; a message that
can never succeed (schema-invalid, misplaced, or :class:`Permanent`) is terminated and copied to the dead-letter
stream with its reason; a batch whose dependency is down (:class:`Unavailable`) is held in progress and retried in
place, however long that takes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import ConnectionReconnectingError, NoRespondersError, OutboundBufferLimitError
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StreamInfo
from nats.js.errors import NotFoundError, ServiceUnavailableError
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from podtax import metrics, natsfetch, subjects, telemetry
from podtax.busmessages import (
    consumer_of,
    ended_unwatched,
    log_failure,
    message_context,
    read,
    settle,
    with_heartbeat,
)
from podtax.events import Event
from podtax.natsagain import Stopped, again_if_reconnected

log = logging.getLogger("podtax.bus")
BACKOFF_S: tuple[float, ...] = (1, 2, 5, 10, 30)
HOLD_BACKOFF_S: tuple[float, ...] = (1, 2, 5, 10, 30)  # retries of a held batch (Unavailable); then every 30 s
REASON_HEADER = "Podtax-Dead-Reason"
FETCH_TIMEOUT_S = 0.5  # an idle consumer's fetch returns empty after this long (then `stop` is checked)


class Permanent(Exception):
    """Raised by a handler for a message that can never succeed; it is dead-lettered with `reason`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Unavailable(Exception):
    """Raised by a batch handler when a dependency is down, not the messages (its disk is full, its
    database out of memory): the batch is held and retried until it succeeds; `reason` says what to fix."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


Handler = Callable[[Event], Awaitable[None]]
# The stream sequence of the message a Handler is handling (None outside one): what names that message for good (its
# event's fields may not: a `time` missing is read as now() at each decode), e.g. in the runner's refused.<name>
HANDLED_SEQUENCE: ContextVar[int | None] = ContextVar("podtax_handled_sequence", default=None)
# A batch handler commits a whole batch at once and returns the events it rejects permanently.
BatchHandler = Callable[[list[Event]], Awaitable[dict[str, str]]]


@dataclass(frozen=True)
class ConsumerSpec:
    durable: str
    subjects: Sequence[str]
    max_deliver: int = 5
    ack_wait_s: float = 60.0
    batch: int = 100
    # once a waiting fetch got its first message, how long it waits for the batch to fill (seconds);
    # None: until full or FETCH_TIMEOUT_S, as a throughput-only consumer may prefer
    linger_s: float | None = 0.02


class Consumers:
    nc: Client
    js: JetStreamContext
    _subs: list[JetStreamContext.PullSubscription]
    _made: dict[str, datetime]  # when NATS made each consumer of this service (its ConsumerInfo.created)
    _given: dict[str, int]  # the highest stream sequence each consumer was given

    async def dead_letter(self, msg: Msg, reason: str) -> None:
        headers = dict(msg.headers or {})
        headers[REASON_HEADER] = reason[:1000]
        headers["Podtax-Original-Subject"] = msg.subject
        # one dead letter per message, however many consumers reject it (the parser and the analyzer both read
        # raw logs): its id is the message's place in the stream, which JetStream de-duplicates (2 min window)
        headers["Nats-Msg-Id"] = f"dead-{msg.metadata.stream}-{msg.metadata.sequence.stream}"
        try:  # published again when it went to a server that died (NATS restarted; de-duplicated by its id)
            await again_if_reconnected(self.nc, lambda: self.js.publish(subjects.dead_letter(msg.subject), msg.data,
                                                                        headers=headers))
        except Exception as exc:  # noqa: BLE001 - refused (no answer on a live connection: permissions)
            if isinstance(exc, Stopped) or not self.nc.is_connected:
                raise  # NATS away (a SIGTERM while it was: Stopped): not acked, so delivered again
            log.error("could not dead-letter %s (%s: %s); dropped it: %s", msg.subject, type(exc).__name__, exc,
                      reason)
        else:
            log.warning("dead-lettered %s: %s", msg.subject, reason)
        if await settle(msg.term(), "terminate", msg):  # else delivered again, dead-lettered then
            metrics.MESSAGES.labels(consumer_of(msg), "dead").inc()

    async def _subscribe(self, spec: ConsumerSpec) -> JetStreamContext.PullSubscription:
        config = ConsumerConfig(  # `name` too: the API subject then carries the filter (natsauth.ROLE_READ_API)
            name=spec.durable, durable_name=spec.durable, ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.ALL,
            max_deliver=spec.max_deliver, ack_wait=spec.ack_wait_s, max_ack_pending=50_000,
            filter_subjects=list(spec.subjects) if len(spec.subjects) > 1 else None,
            filter_subject=spec.subjects[0] if len(spec.subjects) == 1 else None,
        )
        made = await again_if_reconnected(self.nc, lambda: self.js.add_consumer(subjects.STREAM, config))
        self._made[spec.durable] = getattr(made, "created", None)
        sub = await self.js.pull_subscribe_bind(durable=spec.durable, stream=subjects.STREAM)
        self._subs.append(sub)
        return sub

    async def _fetch(self, sub: JetStreamContext.PullSubscription, spec: ConsumerSpec) -> list[Msg]:
        try:
            msgs = await natsfetch.fetch(sub, spec.batch, timeout=FETCH_TIMEOUT_S, linger=spec.linger_s)
        except (NatsTimeout, TimeoutError):
            return []
        except (ServiceUnavailableError, NoRespondersError, ConnectionReconnectingError,
                OutboundBufferLimitError) as exc:
            # a server of a cluster went away, or the consumer's leader is moving, or NATS is away with nats-py's
            # buffer for it full (its pull request refused: it ended the service): keep consuming once it is back
            await _consumer_there(self.js, sub, spec, self._made.get(spec.durable), self._given.get(spec.durable))
            log.warning("fetch failed (%s); retrying", type(exc).__name__)
            await asyncio.sleep(1.0)
            return []
        if msgs:
            last = msgs[-1].metadata
            given = max(natsfetch.stream_seq(m) for m in msgs)
            self._given[spec.durable] = max(self._given.get(spec.durable, 0), given)
            metrics.PENDING.labels(last.consumer).set(last.num_pending)
            again = sum(natsfetch.num_delivered(m) > 1 for m in msgs)
            if again:
                metrics.REDELIVERIES.labels(last.consumer).inc(again)
        return msgs

    async def _decode(self, msg: Msg) -> Event | None:
        event, why = read(msg)
        if why is not None:
            await self.dead_letter(msg, why)
        return event

    async def _retry_or_dead(self, msg: Msg, error: str, max_deliver: int) -> None:
        delivered = msg.metadata.num_delivered
        if delivered >= max_deliver:
            await self.dead_letter(msg, f"gave up after {delivered} deliveries: {error}")
        else:
            await settle(msg.nak(delay=BACKOFF_S[min(delivered, len(BACKOFF_S)) - 1]), "nak", msg)
            metrics.MESSAGES.labels(consumer_of(msg), "retry").inc()

    async def consume(self, spec: ConsumerSpec, handler: Handler, stop: asyncio.Event,
                      sub: JetStreamContext.PullSubscription | None = None) -> None:
        """Handle messages one by one until `stop` is set (from `sub`, when its consumer is made already)."""
        sub = sub or await self._subscribe(spec)
        while not stop.is_set():
            for msg in await self._fetch(sub, spec):
                await self.handle_message(spec, handler, msg)

    async def handle_message(self, spec: ConsumerSpec, handler: Handler, msg: Msg) -> None:
        """One message of `spec`'s consumer: decoded, handled, then acked, retried or dead-lettered."""
        event = await self._decode(msg)
        if event is None:
            return
        ctx = message_context(msg, event)
        started = time.perf_counter()
        handled = HANDLED_SEQUENCE.set(msg.metadata.sequence.stream)  # copied into the handler's task
        try:
            with telemetry.tracer("podtax.bus").start_as_current_span(f"{spec.durable} {event.type}", context=ctx):
                await with_heartbeat([msg], handler(event), spec.ack_wait_s / 3)
        except Permanent as exc:
            await self.dead_letter(msg, exc.reason)
        except Stopped:  # told to stop while it waited for NATS: left unacked (delivered again), no delivery counted
            raise
        except Exception as exc:  # noqa: BLE001 - any failure is retried, then dead-lettered
            log_failure(exc, "handler failed for %s", msg.subject)
            await self._retry_or_dead(msg, f"{type(exc).__name__}: {exc}", spec.max_deliver)
        else:  # NATS away with nats-py's buffer full: one line, delivered again (it ended the service)
            if await settle(msg.ack(), "ack", msg):  # not acked: delivered again, counted then
                metrics.MESSAGES.labels(spec.durable, "ack").inc()
        finally:
            HANDLED_SEQUENCE.reset(handled)
        metrics.HANDLER_SECONDS.labels(spec.durable).observe(time.perf_counter() - started)

    async def consume_batches(self, spec: ConsumerSpec, handler: BatchHandler, stop: asyncio.Event) -> None:
        """Handle messages in batches: one commit per batch, then ack every message of it.

        Batches are handled one at a time and in order, but the next batch is fetched and decoded
        while the previous one is being handled: a handler that waits on I/O or on a thread (a
        DuckDB commit, publish acks) then overlaps with the decoding, which needs the event loop."""
        sub = await self._subscribe(spec)
        handling: asyncio.Task[None] | None = None
        try:
            while not stop.is_set():
                decoded = await self._fetch_decoded(sub, spec)
                if handling is not None:  # a held batch may take long: keep the fetched one in progress
                    await with_heartbeat([m for m, _ in decoded], handling, spec.ack_wait_s / 3)
                    handling = None
                if decoded:
                    handling = asyncio.create_task(self._handle_batch(spec, handler, decoded, stop))
            if handling is not None:
                await handling
        except asyncio.CancelledError:
            if handling is not None:
                handling.cancel()
            raise
        finally:  # stopped otherwise (a dead letter's Stopped): the batch under way ends first, as no cancel stops
            if handling is not None and not handling.done():  # its commit in a thread; the caller closes its store next
                await asyncio.wait({handling})
                ended_unwatched(handling)

    async def _fetch_decoded(self, sub: JetStreamContext.PullSubscription,
                             spec: ConsumerSpec) -> list[tuple[Msg, Event]]:
        decoded: list[tuple[Msg, Event]] = []
        for msg in await self._fetch(sub, spec):
            event, why = read(msg)  # no await per message: only an invalid one needs the bus (its dead letter)
            if event is not None:
                decoded.append((msg, event))
            else:
                await self.dead_letter(msg, why or "")
        return decoded

    async def _handle_batch(self, spec: ConsumerSpec, handler: BatchHandler,
                            decoded: list[tuple[Msg, Event]], stop: asyncio.Event) -> None:
        # One span per message, a child of the message's own context (so parse and store sit in
        # the run's trace), linked to the batch span; follow-ups are published in that span.
        tracer = telemetry.tracer("podtax.bus")
        with tracer.start_as_current_span(f"{spec.durable} batch", attributes={"messaging.batch.message_count":
                                                                                  len(decoded)}) as batch:
            if isinstance(trace.get_tracer_provider(), TracerProvider):
                link = [trace.Link(batch.get_span_context())]
                spans = [tracer.start_span(f"{spec.durable} {e.type}", context=message_context(m, e), links=link)
                         for m, e in decoded]
                scope = {run_id: trace.set_span_in_context(span) for span, (_, e) in zip(spans, decoded)
                         if (run_id := telemetry.event_run_id(e))}
            else:  # tracing off: no per-message context or span (a follow-up is published in its run's trace)
                spans, scope = [trace.INVALID_SPAN] * len(decoded), {}
            started = time.perf_counter()
            try:
                with telemetry.run_scope(scope):
                    rejected = await _held(spec, handler, decoded, stop)
            except Stopped:  # told to stop while its outcomes waited for NATS (Bus.publish_many): the batch is left
                for span in spans:  # unacked, delivered again (never acked without its outcomes acked)
                    span.end()
                raise
            except Exception as exc:  # noqa: BLE001
                log_failure(exc, "batch handler failed (%d messages)", len(decoded))
                for span in spans:
                    span.set_status(trace.Status(trace.StatusCode.ERROR, str(exc)))
                    span.end()
                for msg, _ in decoded:
                    await self._retry_or_dead(msg, f"{type(exc).__name__}: {exc}", spec.max_deliver)
                return
            if rejected is None:  # stopped while held: redelivered to the next consumer after ack_wait
                for span in spans:
                    span.end()
                return
            committed: list[Msg] = []
            for span, (msg, event) in zip(spans, decoded):
                if event.id in rejected:
                    span.set_status(trace.Status(trace.StatusCode.ERROR, rejected[event.id]))
                    await self.dead_letter(msg, rejected[event.id])
                else:
                    committed.append(msg)
                span.end()
            await natsfetch.ack_all(committed)
            metrics.MESSAGES.labels(spec.durable, "ack").inc(len(decoded) - len(rejected))
            metrics.HANDLER_SECONDS.labels(spec.durable).observe(time.perf_counter() - started)

async def _consumer_there(js: JetStreamContext, sub: JetStreamContext.PullSubscription, spec: ConsumerSpec,
                          made: datetime | None, given: int | None) -> None:
    """Raise ConsumerGone when NATS says the consumer or its stream does not exist: a NATS restarted with an empty
    store, or another server at PODTAX_NATS_URL. Pulling from it went on for ever, silently (NATS answers no pull),
    and what the service keeps of NATS (its streams, buckets, consumers) is gone with it: the service stops, and
    started again it makes them (the runner, the analyzer) or waits for their owner's. `made`: when NATS made the
    consumer; a stream made after it is a new one (the store lost, the stream made again by a restarted runner).
    `given`: the highest stream sequence the consumer was given. A consumer made again starts from the stream's first
    message (DeliverPolicy.ALL): the line says what that costs."""
    try:
        await sub.consumer_info()
    except NotFoundError as exc:
        from podtax.bus import NatsLost

        stream = await _stream(js)
        remade = getattr(stream, "created", None)  # None: nats-py before 2.15 (review r8), read as the consumer alone
        if stream is not None and not (made and remade and remade > made):  # the consumer alone went
            had = f"it had been given up to stream sequence {given}" if given else "it had been given none"
            raise NatsLost(f"JetStream consumer {spec.durable} was deleted while this service ran ({exc.description}; "
                           f"its stream {subjects.STREAM} is there: `nats consumer rm`, or another tool); stopping. "
                           "Started again, this service makes it again, and is given again every message the stream "
                           "holds for it, from the first (up to PODTAX_NATS_STREAM_MAX_AGE_S old; "
                           f"{had}): a host agent runs those of its node's run requests it has not measured (its "
                           "state directory names those it has), the parser publishes the results of every log again "
                           "(the analyzer stores none twice)") from None
        if stream is None and await _kept_since(js, made):  # the stream alone went, the store was kept
            raise NatsLost(f"JetStream stream {subjects.STREAM} disappeared while this service ran (consumer "
                           f"{spec.durable}: {exc.description}) and {subjects.DLQ_STREAM}, older than this consumer, "
                           "is there (NATS kept its store, or PODTAX_NATS_URL names another server with an older "
                           f"{subjects.DLQ_STREAM}): if NATS kept its store, the stream was deleted (`nats stream "
                           "rm`, or another tool) and the messages it held are gone; stopping, so that started "
                           "again this service makes or waits for the stream and its consumer") from None
        raise NatsLost(f"NATS lost JetStream consumer {spec.durable} ({exc.description}): the NATS server restarted "
                       "with an empty store, or PODTAX_NATS_URL names another one; stopping, so that started again "
                       "this service makes or waits for the streams and consumers (what NATS lost is lost)") from None
    except Exception:  # noqa: BLE001 - no answer (a cluster's leader moving, NATS away): fetched again
        pass


async def _kept_since(js: JetStreamContext, made: datetime | None) -> bool:
    """Whether the dead-letter stream NATS has was made no later than `made` (the consumer): the store was kept."""
    try:
        dlq = await js.stream_info(subjects.DLQ_STREAM)
    except Exception:  # noqa: BLE001 - not found, or no answer: the wording of a NATS lost
        return False
    created = getattr(dlq, "created", None)
    return bool(made and created and created <= made)


async def _stream(js: JetStreamContext) -> StreamInfo | None:
    """The PODTAX stream NATS has (None: it has none, or no answer: the wording of a NATS lost)."""
    try:
        return await js.stream_info(subjects.STREAM)
    except Exception:  # noqa: BLE001 - not found, or no answer
        return None


async def _held(spec: ConsumerSpec, handler: BatchHandler, decoded: list[tuple[Msg, Event]],
                stop: asyncio.Event) -> dict[str, str] | None:
    """`handler(batch)`; while it raises :class:`Unavailable`, the batch is kept in progress and retried
    after HOLD_BACKOFF_S (no redelivery, so no delivery is counted); None when `stop` is set meanwhile."""
    msgs = [m for m, _ in decoded]
    attempt = 0
    try:
        while True:
            try:
                return await handler([e for _, e in decoded])
            except Unavailable as exc:
                attempt += 1
                delay = HOLD_BACKOFF_S[min(attempt, len(HOLD_BACKOFF_S)) - 1]
                log.error("%s: %s; %d messages held, retry %d in %.0f s (none is dead-lettered)", spec.durable,
                          exc.reason, len(msgs), attempt, delay)
                metrics.HELD.labels(spec.durable).set(len(msgs))
                with contextlib.suppress(TimeoutError):
                    await with_heartbeat(msgs, asyncio.wait_for(stop.wait(), delay), spec.ack_wait_s / 3)
                if stop.is_set():
                    return None
    finally:
        metrics.HELD.labels(spec.durable).set(0)
