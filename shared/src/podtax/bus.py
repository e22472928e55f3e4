"""A small layer over nats-py JetStream: streams, publishing, durable pull consumers, dead letters.

Rules it enforces for every service:
- streams are created or updated idempotently at start (:meth:`Bus.ensure_streams`; podtax.busstreams);
- every publish carries `Nats-Msg-Id` = event id (JetStream drops duplicates) and, unless the
  consumer can derive it from the run id, `traceparent`;
- consumers are durable pull consumers with explicit ack; a handler's side effect is committed
  before the ack; a failing handler is retried with backoff up to `max_deliver` deliveries;
- a message that can never succeed (schema-invalid, or :class:`Permanent`) is terminated and
  copied to the dead-letter stream with its reason. Nothing is dropped silently;
- a batch whose handler finds a dependency down (:class:`Unavailable`: a full disk, a database out of
  memory) is held and retried in place, kept in progress, however long that takes: no delivery is
  counted, so a long outage dead-letters nothing.
This module holds the connection and publishing; the consuming side is podtax.busconsume (whose public
names are importable from here too; what it does with each message: podtax.busmessages).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import signal
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from nats.aio.client import Client
from nats.errors import NoRespondersError, NoServersError
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.errors import APIError, ServiceUnavailableError

from podtax import metrics, telemetry
from podtax.busconsume import (  # noqa: F401 - re-exported: podtax.bus is where services import them from
    REASON_HEADER,
    BatchHandler,
    Consumers,
    ConsumerSpec,
    Handler,
    Permanent,
    Unavailable,
)
from podtax.buspipeline import gone, pipelined, settle
from podtax.busreach import NOT_NATS, probe, refused_hint, start_hint
from podtax.busrefusal import (  # noqa: F401 - re-exported
    FULL,
    LIMITS,
    RESOURCES,
    STORE_CLOSED,
    for_want_of_room,
    lasting,
    refusal_text,
)
from podtax.busstreams import Streams
from podtax.config import redact  # re-exported: services import it from here
from podtax.events import Envelope, encode
from podtax.natsagain import unless_stopped, watch_stop
from podtax.natsclose import abandon, cancel_until_done, drain_within, stop_reconnecting
from podtax.natstls import NO_TLS, TlsOnlyClient, TlsRefused, unencrypted

log = logging.getLogger("podtax.bus")
# nats-py waits for ever, and swallows a cancellation, when its buffer is full (a server that stopped reading):
# each such wait ends after this long instead (said once as 'nats: flush timeout'; nothing is lost, it is sent later)
FLUSH_TIMEOUT_S = 5.0
PUBLISH_ACK_TIMEOUT_S = 30.0  # a publish not acked by then is taken as lost (Bus.publish_many)
# JetStream: the subject's last message is not the one a publish expected: 10071 "wrong last sequence: <n>" (a single
# server, or a cluster's leader that found it stored), 10164 "wrong last sequence" (a replicated stream's leader with
# another publish expecting that subject in flight: a lost race too; nats-py's kv.py takes both)
WRONG_LAST_SEQUENCE = frozenset({10071, 10164})
# JetStream (503): "expected last sequence per subject temporarily unavailable": a replicated stream's new leader not
# yet able to check it (after a leader change); nothing stored, NATS away for a moment
EXPECTED_SEQUENCE_NOT_READY = 10163


def at_limit(exc: BaseException) -> bool:
    """Whether `exc` is JetStream refusing a publish for want of room (for_want_of_room), raw or as Bus's Unacked."""
    return isinstance(exc, APIError | Unacked) and for_want_of_room(exc)


class BusError(RuntimeError):
    """NATS is unreachable or refused an operation; the message says what to do."""


class TooBig(BusError):
    """An event above the server's max_payload (Bus._payload): not sent until an admin raises it."""


class NatsLost(BusError):
    """NATS is away, or lost what podtax keeps there (a stream, a consumer, a bucket): not a podtax bug, so a handler
    failing with it is logged in one line (busconsume), not with its traceback."""


class Unacked(Unavailable, NatsLost):
    """Published events NATS did not ack in time (Bus.publish_many): a batch handler's batch is held and
    retried (Unavailable), a command stops with the reason (BusError). `err_code` and `description`: JetStream's, when
    it refused them (busrefusal tells a refusal by both: 10077 is want of room or not by its words)."""

    def __init__(self, reason: str, err_code: int | None = None, description: str | None = None) -> None:
        super().__init__(reason)
        self.err_code, self.description = err_code, description


class Bus(Streams, Consumers):
    def __init__(self, nc: Client, source: str) -> None:
        self.nc = nc
        self.js: JetStreamContext = nc.jetstream(publish_async_max_pending=20_000)
        self.source = source
        self._subs: list[JetStreamContext.PullSubscription] = []
        self._made: dict[str, datetime] = {}  # Consumers._made
        self._given: dict[str, int] = {}  # Consumers._given
        self.role: str | None = None  # the podtax role of its NATS user (natsauth.ROLES), None for another
        self.signed_in = False  # whether it connected as a user (password, nkey, creds): a server refusing nothing
        # to a connection without one has no authorization configured
        # nats-py drops JetStream's refusal of a pipelined publish (its reply handler raises instead of failing the
        # ack's future, which then never completes): the connection's error callback hands it to each publish_many
        # call in flight (its own future, so no call's start clears a refusal another has yet to see)
        self._refusal_waiters: set[asyncio.Future[APIError]] = set()
        self.inbox_refused = ""  # the server's refusal of this connection's reply inbox (Streams.inbox_problem)

    @classmethod
    async def connect(cls, url: str, source: str, *, timeout: float = 5.0, auth: dict[str, Any] | None = None) -> Bus:
        """auth: nats.connect() identity and TLS options (natsauth.connect_options); by default those of the
        PODTAX_NATS_* environment variables (user/password, nkey, creds file, TLS files)."""
        from podtax import natsauth

        if auth is None:
            from podtax.config import Common, load

            auth = natsauth.connect_options(load(Common))
        async def _closed() -> None:
            log.info("NATS connection closed")

        lost_at: list[float] = []  # when the connection was lost (monotonic), until it is back
        in_use = [url]  # the server of the list this connection uses (nats-py's connected_url is None once lost)

        async def _disconnected() -> None:
            if nc_ready.is_set() and not lost_at and not nc.is_closed:
                lost_at.append(time.monotonic())
                log.warning("NATS connection to %s lost; reconnecting (work waits until it is back)",
                            redact(in_use[0]))

        async def _reconnected() -> None:
            in_use[0] = nc.connected_url.geturl() if nc.connected_url else url
            if lost_at:
                log.warning("NATS connection back at %s after %.1f s", redact(in_use[0]),
                            time.monotonic() - lost_at.pop())

        errors: list[str] = []  # what went wrong while connecting; reported once, not once per retry
        bus: Bus | None = None

        async def _error(exc: Exception) -> None:
            if isinstance(exc, APIError) and bus is not None:  # a refused pipelined publish (see Bus.__init__)
                for waiter in bus._refusal_waiters:
                    if not waiter.done():
                        waiter.set_result(exc)
            text = str(exc) or type(exc).__name__
            if bus is not None and "permissions violation for subscription to" in text.lower() \
                    and "_inbox" in text.lower():  # every request as this user will time out: say why once
                bus.inbox_refused = text
            if nc_ready.is_set() and (not errors or errors[-1] != text):
                log.warning("NATS: %s", text)
            errors.append(text)
            del errors[:-20]  # a refusal (the server's -ERR) may be followed by the reset of its connection

        nc_ready = asyncio.Event()
        user = auth.get("user") or _url_user(url)

        nc = TlsOnlyClient()  # with TLS configured, nothing is sent to a server that does not require it
        try:
            # nats-py retries the first connection forever when reconnects are unlimited: bound it. Not with
            # asyncio.wait_for: a cancel (Ctrl-C) nats-py's connect swallows left it retrying, and wait_for waiting
            # for it for ever (1 Ctrl-C of 8 hung `podtax campaign status`); it is cancelled until it stops
            connecting = asyncio.ensure_future(nc.connect(
                servers=[u.strip() for u in url.split(",")], name=source, connect_timeout=timeout,
                max_reconnect_attempts=-1, allow_reconnect=True, closed_cb=_closed, error_cb=_error,
                disconnected_cb=_disconnected, reconnected_cb=_reconnected,
                drain_timeout=5, flush_timeout=FLUSH_TIMEOUT_S, inbox_prefix=natsauth.inbox_prefix(user), **auth,
            ))
            try:
                await asyncio.wait({connecting}, timeout=timeout * 2)
            finally:
                await cancel_until_done(connecting)
            if connecting.cancelled() or not connecting.done():
                raise TimeoutError
            connecting.result()
        except TlsRefused:
            await abandon(nc)
            raise BusError(f"cannot use NATS at {redact(url)}: {NO_TLS}") from None
        except (NoServersError, OSError, TimeoutError, NatsTimeout) as exc:
            why = next((e for e in reversed(errors) if refused_hint(e)), None) or (
                errors[-1] if errors else (str(exc) or f"no answer within {timeout * 2:g} s"))
            hint = refused_hint(why)
            if hint in (None, NOT_NATS) and ("timeout" in why.lower() or hint == NOT_NATS):
                hint = await probe(url, timeout) or hint  # what answers there, and how
            raise BusError(f"cannot reach NATS at {redact(url)} ({why}); {hint or start_hint(url)}") from None
        in_use[0] = nc.connected_url.geturl() if nc.connected_url else url
        if unencrypted(nc):
            await nc.close()
            raise BusError(f"cannot use NATS at {redact(url)}: {NO_TLS}")
        if await _without_jetstream(nc):
            await nc.close()
            raise BusError(f"NATS at {redact(url)} has no JetStream, where podtax keeps its streams and state: start "
                           "nats-server with -js (or a jetstream {} block in its configuration), or point "
                           "PODTAX_NATS_URL at one that has it")
        nc_ready.set()
        bus = cls(nc, source)
        bus.role = natsauth.role_of(user)
        bus.signed_in = bool(user or auth.get("user_credentials") or auth.get("nkeys_seed"))
        return bus

    # ------------------------------------------------------------ publish

    def _headers(self, event: Envelope) -> dict[str, str]:
        return publish_headers(event)

    def wire_bytes(self, event: Envelope) -> int:
        """What nats-server counts against max_payload in the publish of `event` (module function wire_bytes)."""
        return wire_bytes(event)

    def _payload(self, event: Envelope, headers: dict[str, str]) -> bytes:
        """The encoded event, its size with its `headers` checked against max_payload (nats-py checks the body only,
        and the server closed the connection for good: 'maximum payload exceeded: 8231 vs 8192')."""
        payload = encode(event)
        if (size := len(payload) + header_bytes(headers)) > self.nc.max_payload:
            raise TooBig(f"{event.type} {event.id} is {size} bytes with its NATS headers, above the server's "
                         f"max_payload of {self.nc.max_payload}; lower the output cap "
                         f"(PODTAX_AGENT_OUTPUT_CAP_BYTES) or raise max_payload in nats-server")
        return payload

    async def publish(self, event: Envelope, last_on_subject: int | None = None) -> None:
        """Publish and wait for JetStream's ack (the event is stored when this returns). A full stream raises
        Unacked saying so (`podtax campaign submit` and `cancel` gave nats-py's traceback). With `last_on_subject`,
        JetStream stores it only if the last message on its subject is still that stream sequence (0: none), else
        refuses it (APIError, err_code in WRONG_LAST_SEQUENCE): a check of what the subject held and the publish, made
        one."""
        headers = self._headers(event)
        if last_on_subject is not None:
            headers["Nats-Expected-Last-Subject-Sequence"] = str(last_on_subject)
        payload = self._payload(event, headers)
        try:  # after a SIGTERM, its ack is waited for STOP_GRACE_S at most (natsagain.Stopped), not nats-py's 5 s
            await unless_stopped(lambda: self.js.publish(event.subject, payload, headers=headers))
        except APIError as exc:
            if for_want_of_room(exc):
                raise Unacked(refusal_text(exc, event.subject), exc.err_code, exc.description) from None
            if exc.err_code == FULL and exc.description == STORE_CLOSED:  # NATS away (busrefusal), as publish_many's
                raise Unacked(refusal_text(exc, event.subject), None) from None
            raise
        metrics.PUBLISHED.labels(event.type).inc()

    async def publish_many(self, events: Sequence[Envelope], timeout: float = PUBLISH_ACK_TIMEOUT_S) -> int:
        """Pipelined publish: all in flight at once, returns when every one is acked, with how many JetStream
        acked as duplicates (a Nats-Msg-Id it stored within DUPLICATE_WINDOW_S: not stored again). A server that dies
        with publishes in flight never acks them, and nats-py would wait for those acks forever (and,
        once 4,000 are outstanding, block every later publish): when the acks are not all in within
        `timeout` seconds, the rest are cancelled (which frees their slots) and :class:`Unacked` is
        raised, so a batch handler's batch is held and retried (its events are de-duplicated by their
        Nats-Msg-Id). Publishes answered 'no response from stream' (its stream between leaders: none stored) are made
        again until then (buspipeline.Pipeline.acks). A refusal names no publish (nats-py drops it: see Bus.__init__),
        so every call in flight when one arrives ends with it (a call whose acks were still coming publishes its events
        again: deduplicated)."""
        duplicates = 0
        refused: asyncio.Future[APIError] = asyncio.get_running_loop().create_future()
        self._refusal_waiters.add(refused)  # only refusals from now on end this call's wait

        def unacked(acked: int) -> str:
            return (f"NATS acked {acked} of {len(events)} published events within {timeout:g} s (the server "
                    "restarted or is overloaded, or the events' stream has no leader?)")

        async def acked(fut: asyncio.Future[Any]) -> Any:
            if not fut.done():  # only an ack not in yet is waited for, beside a refusal (gathering them all: +12% CPU)
                await asyncio.wait((fut, refused), return_when=asyncio.FIRST_COMPLETED)
                if not fut.done():
                    why = refused.result()  # 10077 'store is closed': no code, NATS away (busrefusal)
                    refusal = for_want_of_room(why) or lasting(why)
                    raise Unacked(refusal_text(why), *((why.err_code, why.description) if refusal else (None, None)))
            return fut.result()  # a publish JetStream refused raises here

        try:
            async with pipelined(self.js, timeout, unacked) as pipe:
                for e in events:
                    headers = self._headers(e)
                    await pipe.publish(e.subject, self._payload(e, headers), headers)
                # answered 'no response from stream' (its stream between leaders): published again, as KV puts are;
                # before, the whole batch failed (NoStreamResponseError). Is the events' stream not there?
                # (asked once per stream among them, of a subject of its own: a batch may span streams)
                await pipe.acks(lambda subject: gone(self.js.find_stream_name_by_subject(subject)), acked)
                duplicates = sum(bool(fut.result().duplicate) for fut in pipe.futures)
        finally:
            self._refusal_waiters.discard(refused)
            settle([refused])
        for event_type, n in collections.Counter(e.type for e in events).items():  # one update per type
            metrics.PUBLISHED.labels(event_type).inc(n)
        return duplicates

    async def close(self) -> None:
        """Stop consuming, flush what is in flight (drain, bounded by natsclose.DRAIN_S in all), close."""
        # what was not acked comes back to a consumer; a command (no consumer) says its own line, not this warning
        level = logging.WARNING if self._subs else logging.INFO
        for sub in self._subs:  # a pull subscription never finishes draining by itself (nats-py)
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        self._subs.clear()
        try:
            if self.nc.is_connected:
                where = redact(self.nc.connected_url.geturl()) if self.nc.connected_url else "its URL"
                why = await drain_within(self.nc)  # a server that hangs took 15 s (nats-py's drain, then close)
                if why:
                    log.log(level, "NATS at %s %s: closed without draining; what was not acknowledged is delivered "
                            "again", where, why)
            elif not self.nc.is_closed:  # reconnecting to a server that died: stop here, not at the loop's end
                await self.nc.close()
        except ConnectionError as exc:  # nats-py writes what it held while reconnecting (pulls, acks) to the lost
            # connection first: a service stopped right after NATS died ended with this traceback
            log.warning("NATS: the connection was lost as it closed (%s): what was not acked comes back", exc)
        await stop_reconnecting(self.nc)


def publish_headers(event: Envelope) -> dict[str, str]:
    """The headers Bus.publish sends with `event`: Nats-Msg-Id, and the trace context when a span is current."""
    return telemetry.inject_for({"Nats-Msg-Id": event.id}, event)


def header_bytes(headers: dict[str, str]) -> int:
    """The size of the header block nats-py writes for `headers` (`NATS/1.0`, a `key: value` line each, a blank line),
    which nats-server counts against max_payload beside the body."""
    return len(b"NATS/1.0\r\n\r\n") + sum(len(f"{k}: {v.strip()}\r\n".encode()) for k, v in headers.items())


def wire_bytes(event: Envelope) -> int:
    """What nats-server counts against max_payload in Bus.publish of `event`: its body and its headers' block."""
    return len(encode(event)) + header_bytes(publish_headers(event))


async def _without_jetstream(nc: Client) -> bool:
    """Whether the server has no JetStream: every JetStream request then failed in a traceback
    (ServiceUnavailableError, description None; audit hH). Its INFO says so (nothing asked); then no server answering
    JetStream's API confirms it (in a cluster or through a leaf node, another server may answer for it). Any other
    outcome of the question (a user not allowed to ask it, a slow server) is left to the requests that follow."""
    if getattr(nc, "_server_info", {}).get("jetstream"):
        return False
    try:
        await nc.request("$JS.API.INFO", b"", timeout=2)
    except (NoRespondersError, ServiceUnavailableError):
        return True
    except Exception:  # noqa: BLE001 - not this question's to answer
        return False
    return False


def _url_user(url: str) -> str | None:
    """The user name in the first server URL (`nats://cli:password@host:4222`, as `podtax up` writes it)."""
    return urlsplit(url.split(",")[0].strip()).username


def stop_on_signals() -> asyncio.Event:
    """An event set on SIGTERM or SIGINT, so services drain and exit cleanly; it also ends a request's wait for
    NATS to be back (natsagain.watch_stop: Stopped)."""
    stop = asyncio.Event()
    watch_stop(stop)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop
