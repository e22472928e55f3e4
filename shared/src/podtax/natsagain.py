"""A JetStream request sent to a server that died, asked again once nats-py is back on a new connection."""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import TypeVar

import nats.errors
import nats.js.errors
from nats.aio.client import Client

from podtax.config_checks import redact

T = TypeVar("T")
log = logging.getLogger("podtax.bus")

WAIT_S = 60.0  # how long a request waits for NATS to be back (nats-py tries again every 2 s) before it fails
POLL_S = 0.1
STOP_GRACE_S = 0.5  # how long a request in flight may still take once the service is told to stop
# 'no responders' (503): what a request may get from a server just started again, before its JetStream is up
NO_RESPONDERS = (nats.errors.NoRespondersError, nats.js.errors.ServiceUnavailableError,
                 nats.js.errors.NoStreamResponseError)


# the stop event of each event loop's service (bus.stop_on_signals: set on SIGTERM/SIGINT), held weakly both ways:
# an event awaited holds its loop, so a strong value kept every closed loop's entry (review r11)
_STOPS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, weakref.ref[asyncio.Event]] = weakref.WeakKeyDictionary()


class Stopped(Exception):
    """The service was told to stop (SIGTERM, Ctrl-C) while it waited: for another role's stream or bucket
    (busstreams), or for NATS to be back during a request (again_if_reconnected)."""


def watch_stop(stop: asyncio.Event) -> None:
    """Make `stop` (set on SIGTERM) end the waits of again_if_reconnected in this event loop."""
    _STOPS[asyncio.get_running_loop()] = weakref.ref(stop)


def stop_event() -> asyncio.Event | None:
    """The stop event of this event loop's service (watch_stop), None when there is none (a CLI, a test)."""
    stop = _STOPS.get(asyncio.get_running_loop())
    return stop() if stop is not None else None


def _stop_if_told(stop: weakref.ref[asyncio.Event] | None) -> None:
    event = stop() if stop is not None else None
    if event is not None and event.is_set():
        raise Stopped("stopped while waiting for NATS")


async def _unless_stopped(ask: Callable[[], Awaitable[T]], stop: weakref.ref[asyncio.Event] | None) -> T:
    """`ask()`; once the stop event is set (or if it is), its answer is waited for STOP_GRACE_S more at most, then
    Stopped: a request in flight as the SIGTERM came waited up to nats-py's timeout (5 s) for a server that died or
    hangs, while a live server's answer (a dead letter of a batch being drained) still comes within the grace."""
    event = stop() if stop is not None else None
    if event is None:
        return await ask()
    asking, grace = asyncio.ensure_future(ask()), asyncio.ensure_future(stop_grace_over(event))
    try:
        await asyncio.wait((asking, grace), return_when=asyncio.FIRST_COMPLETED)
    finally:
        grace.cancel()
        if not asking.done():
            asking.cancel()  # its answer, if one comes, is dropped
    if not asking.done():
        raise Stopped("stopped while waiting for NATS")
    return asking.result()


async def stop_grace_over(stop: asyncio.Event) -> None:
    """Return STOP_GRACE_S after `stop` is set (after it is set already: STOP_GRACE_S from now): how long, once the
    service is told to stop, a request in flight (_unless_stopped) or a batch's acks (buspipeline.pipelined) may
    still get a live server's answer before they are given up."""
    await stop.wait()
    await asyncio.sleep(STOP_GRACE_S)


async def unless_stopped(ask: Callable[[], Awaitable[T]]) -> T:
    """`ask()`, ended by the service's stop (watch_stop) as a request of again_if_reconnected is: once the stop is set,
    its answer is waited for STOP_GRACE_S more at most, then Stopped. Asked once (a single publish, Bus.publish: one
    with an expected last sequence is not sent again)."""
    return await _unless_stopped(ask, _STOPS.get(asyncio.get_running_loop()))


def _where(nc: Client) -> str:
    return redact(",".join(u.geturl() for u in nc.servers)) or "its URL"


async def again_if_reconnected(nc: Client, ask: Callable[[], Awaitable[T]], wait_s: float = WAIT_S) -> T:
    """`ask()`; asked again when the connection was lost meanwhile (nats-server restarted: the request went to the
    server that died). A timeout while nats-py is still away waits for it to be back (one line says so), up to
    `wait_s`; a timeout on a connection made again meanwhile, or a 'no responders' after one, is asked again at
    once (a 503 a little later). A timeout on the same live connection, a 'no responders' without a reconnect, and
    anything after `wait_s` are raised as they are (the caller says what they mean). The service's stop event
    (watch_stop) set while it waits for NATS, or for the answer to a request in flight, raises Stopped at once
    (before, a SIGTERM waited up to `wait_s`, 60 s, past Kubernetes' 30 s grace; then up to nats-py's 5 s timeout
    for a request in flight)."""
    loop = asyncio.get_running_loop()
    stop = _STOPS.get(loop)
    deadline, first, said = loop.time() + wait_s, nc.stats["reconnects"], False
    while True:
        reconnects = nc.stats["reconnects"]
        try:
            return await _unless_stopped(ask, stop)
        except TimeoutError:
            if (nc.is_connected and nc.stats["reconnects"] == reconnects) or nc.is_closed or loop.time() > deadline:
                raise
        except NO_RESPONDERS:
            if nc.stats["reconnects"] == first or nc.is_closed or loop.time() > deadline:
                raise
            _stop_if_told(stop)  # a server back without its JetStream answers 503 until the deadline (review r11)
            await asyncio.sleep(POLL_S * 5)
        if not nc.is_connected and not said:
            said = True
            log.warning("waiting for NATS at %s (it went away during a request; asked again once it is back, for up "
                        "to %.0f s)", _where(nc), wait_s)
        while not nc.is_connected and not nc.is_closed and loop.time() < deadline:
            _stop_if_told(stop)
            await asyncio.sleep(POLL_S)
        _stop_if_told(stop)
