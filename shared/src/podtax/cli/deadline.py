"""Deadlines for the CLI: no command waits on NATS for ever.

nats-py keeps a publish waiting for its acknowledgement as long as it is reconnecting, which with a
dead server is for ever. Every CLI step that waits on NATS goes through :func:`within`, which gives
up after PODTAX_CLI_TIMEOUT seconds (30 by default) without an answer and says what it was doing.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Awaitable
from typing import TypeVar

from podtax.bus import Bus, BusError
from podtax.cli.common import fail, nats_url

ENV = "PODTAX_CLI_TIMEOUT"
DEFAULT_S = 30.0
T = TypeVar("T")


def seconds() -> float:
    """PODTAX_CLI_TIMEOUT as a number of seconds; raises ValueError naming the variable when invalid."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        return DEFAULT_S
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{ENV}={text!r} is not a number of seconds") from None
    if not 0 < value <= 86400:
        raise ValueError(f"{ENV}={text!r} must be more than 0 and at most 86400 seconds")
    return value


async def within(step: Awaitable[T], what: str, timeout_s: float | None = None) -> T:
    """Await `step`, or raise BusError when NATS has not answered within the deadline."""
    limit = seconds() if timeout_s is None else timeout_s
    inner = asyncio.ensure_future(step)
    try:
        done = await asyncio.wait_for(inner, limit)
    except TimeoutError:
        raise BusError(f"NATS did not answer within {limit:g} s while {what} (is the server down? "
                       f"{ENV} sets this deadline)") from None
    except asyncio.CancelledError:  # Ctrl-C: a step that failed as it was cancelled (a NATS request timing out on a
        if inner.done() and not inner.cancelled():  # hung server) is said no more: asyncio printed 'Task exception
            inner.exception()  # was never retrieved' and its traceback after the command's own line
        raise
    task = asyncio.current_task()
    if task is not None and task.cancelling():  # Python 3.11's wait_for returns the result of a step that completes
        raise asyncio.CancelledError  # as the cancel (Ctrl-C) lands and drops the cancel: podtax import went on, exit 0
    return done


async def connect(source: str = "podtax/cli") -> Bus:
    """Connect to NATS for a CLI command. The connection gives up within 2x its timeout, which is kept
    below the command's deadline, so an unreachable server is named as such (BusError), not as a
    server that "did not answer within N s"."""
    return await Bus.connect(nats_url(), source, timeout=min(5.0, seconds() / 3))


def run(step: Awaitable[T], what: str, extra_s: float = 0.0) -> T:
    """`asyncio.run(step)` bounded by the deadline (plus `extra_s` the command itself waits on
    purpose); a missed deadline or unreachable NATS exits 1 with one line saying what was going on."""
    try:
        limit = seconds() + extra_s
    except ValueError as exc:
        if inspect.iscoroutine(step):
            step.close()  # never started
        raise fail(str(exc), 2) from None
    try:
        return asyncio.run(within(step, what, limit))
    except BusError as exc:
        raise fail(str(exc), 1) from None
