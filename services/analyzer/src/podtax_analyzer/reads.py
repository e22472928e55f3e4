"""The store's statements and its eviction exclude each other; statements do not exclude one another.

To evict, the store's flush asks DuckDB for a memory limit of 0 (store.CACHE_MB). DuckDB took it when nothing
was pinned, until the flush set the limit back, and a statement starting in between, on any cursor, failed
with OutOfMemory; the flush now holds memory DuckDB cannot evict meanwhile (Store._evict), so DuckDB refuses
the 0, and statements are held back from the eviction all the same. Every statement of a store's cursor
(`Cursor`) runs under `ReadWriteLock.reading` and the flush evicts under `writing`, which waits for the
statements under way and holds back new ones until the limit is back (the eviction's 5-17 ms). The eviction
is an optimisation, so the flush waits at most store.EVICT_WAIT_S: if a statement is still running then (a long
report, export or reparse), the flush skips the eviction and lets the held-back statements go at once, so a long
read delays neither the analyzer's writes nor the other reads (a later flush evicts).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import duckdb


class ReadWriteLock:
    """Any number of readers at once, or one writer. A writer waiting holds back new readers."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False  # a writer holds the lock or waits for the readers under way

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._writer)
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextlib.contextmanager
    def writing(self, timeout: float | None = None) -> Iterator[bool]:
        """Yields True holding the lock, or False (not holding it, new readers let through again at once) if the
        readers under way, or another writer, have not finished within `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout

        def left() -> float | None:
            return None if deadline is None else max(0.0, deadline - time.monotonic())

        with self._cond:
            got = self._cond.wait_for(lambda: not self._writer, left())
            if got:
                self._writer = True
                got = self._cond.wait_for(lambda: not self._readers, left())
                if not got:
                    self._writer = False
                    self._cond.notify_all()
        if not got:
            yield False
            return
        try:
            yield True
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


class Cursor:
    """A DuckDB cursor whose statements run under `lock.reading()`; the rest (fetch*, register, close...)
    is the cursor's own. `execute` returns this cursor, so a chained statement is under the lock too."""

    def __init__(self, con: duckdb.DuckDBPyConnection, lock: ReadWriteLock) -> None:
        self._con = con
        self._lock = lock

    def execute(self, query: str, parameters: Any = None) -> Cursor:
        with self._lock.reading():  # None is not passed on: DuckDB then prepares the statement (~80 us more)
            self._con.execute(query) if parameters is None else self._con.execute(query, parameters)
        return self

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self._con.close()
