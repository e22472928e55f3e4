"""Close a nats-py connection within DRAIN_S seconds when its server hangs (paused, overloaded, or a network that drops
packets without a reset), draining it as before when it is live.

nats-py's drain() drains the subscriptions, bounded by the connection's drain_timeout (5 s in podtax), then flushes
with its default 10 s timeout, which drain_timeout does not bound (nats-py 2.16 Client.drain: `await self.flush()`
in its finally; nats.go issue 580 asks the same of Go's drain): a service told to stop while its server hung took
15 s to exit. drain_within bounds the whole close: a PING first (nc.flush) for up to DRAIN_S, so a server that hangs
throughout is closed at once and named as such; then nats-py's drain in a task of its own, for what is left of
DRAIN_S. A server that answered the PING and hung before the drain was done (bench/bench_close_nats_hung.py, 'hung
after the PING') took nats-py's whole drain, 5 + 10 s, as well: now, on expiry, the connection is closed (so the
drain's last flush returns at once) and the drain's waits for PONGs are ended with ConnectionClosedError, so the drain
ends with that error, which is read: asyncio logs no 'exception was never retrieved' (cancelling the drain instead
left its gathered subscription drains' CancelledError unread: a traceback in the log). nats-py's drain then closes
the connection once more: 'NATS connection closed' is logged twice.

Nothing is acked sooner for it: a service acks a message only once what it did with it is committed, and closing
sends nothing new, so closing early can only lose acks still unsent (the message comes back, its outcomes
de-duplicated), never send one.

Also here: nats-py's tasks stopped for good (stop_reconnecting, cancel_until_done: nats-py drops a cancel that lands
as one of its asyncio.wait_for's awaits completes) and a half-made connection closed (abandon)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from nats.aio.client import Client
from nats.errors import ConnectionClosedError, FlushTimeoutError

DRAIN_S = 3.0  # a live server answers and drains in milliseconds; one that has not by then hangs


def _read(task: asyncio.Future[None]) -> None:
    """Read the drain's error (ConnectionClosedError once closed under it), else asyncio logs it with a traceback."""
    if not task.cancelled():
        task.exception()


async def drain_within(nc: Client, seconds: float = DRAIN_S) -> str | None:
    """Drain `nc` (what it holds is sent and the server confirms it) within `seconds` in all: None. Else `nc` closed
    without waiting more, and why: the server did not answer a PING, or answered it but did not finish the drain.
    A drain that fails closes `nc` too (as before: what was sent is sent): None."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    try:
        await nc.flush(seconds)
    except FlushTimeoutError:
        await nc.close()
        return f"did not answer a PING within {seconds:g} s"
    except Exception:  # noqa: BLE001 - the connection lost meanwhile: closing anyway
        await nc.close()
        return None
    draining = asyncio.ensure_future(nc.drain())
    draining.add_done_callback(_read)
    await asyncio.wait({draining}, timeout=max(0.0, deadline - loop.time()))
    if draining.done():
        if draining.cancelled() or draining.exception() is not None:  # closing anyway
            await nc.close()
        return None
    await nc.close()  # first, so the drain's own last flush (10 s) returns at once instead of waiting
    for ping in getattr(nc, "_pongs", ()):  # nats-py's waits for the PONGs the hung server never sends (private; a
        if not ping.done():  # closed connection leaves them waiting): ended, so the drain ends with an error it reads
            ping.set_exception(ConnectionClosedError())
    await asyncio.wait({draining}, timeout=1.0)
    # waiting on something else: cancelled (its gathered subscription drains' CancelledError may then be logged as
    # never retrieved; nothing is lost for it)
    await cancel_until_done(draining)
    return f"answered a PING but did not finish draining within {seconds:g} s"


async def abandon(nc: Client) -> None:
    """Close a client whose first connection stopped inside nats-py's connect (its socket is open, nothing runs)."""
    transport = getattr(nc, "_transport", None)
    if transport is not None:
        with contextlib.suppress(Exception):
            transport.close()
            await transport.wait_closed()


async def stop_reconnecting(nc: Client) -> None:
    """End nats-py's reconnect loop for good. A cancellation it swallows (Python 3.11's asyncio.wait_for
    returns a result that arrives with the cancel) leaves it retrying for ever, even once closed: CI found
    `podtax import` hung at exit after NATS died, in asyncio.run's last cancellation of that task."""
    task = getattr(nc, "_reconnection_task", None)  # nats-py keeps no public handle on it
    if task is not None and not await cancel_until_done(task):
        logging.getLogger("podtax.bus").warning("NATS: the client's reconnect loop did not stop")


async def cancel_until_done(task: asyncio.Future[Any], tries: int = 50) -> bool:
    """Cancel `task` again until it is done (at most `tries` times, 0.1 s apart): whether it is. nats-py swallows
    a cancel arriving as one of its asyncio.wait_for's awaits completes (Python 3.11's wait_for returns the result)."""
    for _ in range(tries):
        if task.done():
            return True
        task.cancel()
        await asyncio.wait({task}, timeout=0.1)
    return task.done()
