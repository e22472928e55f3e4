"""A controller's queue of keys to reconcile (client-go's workqueue, simplified): a key added is handled on the event
loop's next turn, once however often it was added before then, in the order keys were first added; a key added while
the queue is handled (a reconcile's own writes) is handled in that same turn. A handler's ApiError (a write refused,
its object gone or changed meanwhile) ends that key's turn: it is handled again when next added."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from podtax_kubesim.util import ApiError

K = TypeVar("K", bound=Hashable)


class WorkQueue(Generic[K]):
    def __init__(self, handle: Callable[[K], None]) -> None:
        self.handle = handle
        self.keys: dict[K, None] = {}  # a dict: unique keys, in insertion order
        self._scheduled = False

    def add(self, key: K) -> None:
        self.keys[key] = None
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._drain)

    def _drain(self) -> None:
        self._scheduled = False
        while self.keys:
            key = next(iter(self.keys))
            del self.keys[key]
            try:
                self.handle(key)
            except ApiError:
                continue
