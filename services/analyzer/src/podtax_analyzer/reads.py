"""The store's statements and its eviction exclude each other; statements do not exclude one another.

To evict, the store's flush asks DuckDB for a memory limit of 0 (store.CACHE_MB). DuckDB took it when nothing
was pinned, until the flush set the limit back, and a statement starting in between, on any cursor, failed
with OutOfMemory; the flush now holds memory DuckDB cannot evict meanwhile (Store._evict), so DuckDB refuses
the 0, and statements are held back from the eviction all the same. Every statement of a store's cursor
(`Cursor`) runs under `ReadWriteLock.reading` and the flush evicts under `writing`, which waits for the
statements under way (milliseconds for the analyzer's; a long report query delays that flush by its length)
and holds back new ones until the limit is back (the eviction's 5-17 ms).
"""

from __future__ import annotations

import contextlib
import threading
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
    def writing(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._writer)
            self._writer = True
            self._cond.wait_for(lambda: not self._readers)
        try:
            yield
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
