"""A JetStream request sent to a server that died, asked again once nats-py is back on a new connection."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from nats.aio.client import Client

T = TypeVar("T")


async def again_if_reconnected(nc: Client, ask: Callable[[], Awaitable[T]]) -> T:
    """`ask()`; when it times out and the connection was made again meanwhile (nats-server restarted: the request
    went to the server that died, and nats-py timed it out on the new, live connection), `ask()` once more. A
    timeout on the same connection is raised as it is (no answer: the caller says what that means)."""
    reconnects = nc.stats["reconnects"]
    try:
        return await ask()
    except TimeoutError:
        if nc.stats["reconnects"] == reconnects:
            raise
    return await ask()
