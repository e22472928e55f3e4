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

DuckDB's `execute` returns a streamed result: the query's last pipeline (a scan, the rows after a sort) runs as
rows are fetched, and DuckDB's worker threads go on filling the result's buffer between fetches (up to its
streaming_buffer_size), allocating as they go. The routes streaming up to 100,000 rows (rowstream) fetched them
outside the lock, and a fetch meeting the eviction's 0 failed with OutOfMemory ('0 bytes/0 bytes used'; 1 of 443
streamed reads of raw logs beside a flush per batch). So every fetch of a `Cursor` runs under `reading` too, and
`Cursor.stream` holds it from the statement to the last row (or until closed): a flush meanwhile skips its eviction,
as for any long read. A stream left before its end must be closed (rowstream's answer closes it however the client
goes); a writer waiting for the readers holds new ones back, so every writer waits with a timeout. Relations
(`sql`, `query`, `table`...) and `fetch_record_batch` would run or stream outside the lock: a Cursor refuses them.
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
    """A DuckDB cursor whose statements and fetches run under `lock.reading()`; the rest (register, close...)
    is the cursor's own. `execute` returns this cursor, so a chained fetch is under the lock too."""

    def __init__(self, con: duckdb.DuckDBPyConnection, lock: ReadWriteLock) -> None:
        self._con = con
        self._lock = lock

    def execute(self, query: str, parameters: Any = None) -> Cursor:
        with self._lock.reading():
            self._run(query, parameters)
        return self

    def stream(self, query: str, parameters: Any = None, size: int = 1000) -> Rows:
        """The rows of `query`, `size` at a time, under `lock.reading()` from the statement until the last row is
        fetched or the rows are closed (the statement runs, and raises, before this returns)."""
        held = contextlib.ExitStack()
        held.enter_context(self._lock.reading())
        try:
            self._run(query, parameters)
        except BaseException:
            held.close()
            raise
        return Rows(self._con, size, held)

    def _run(self, query: str, parameters: Any) -> None:
        # None is not passed on: DuckDB then prepares the statement (~80 us more)
        self._con.execute(query) if parameters is None else self._con.execute(query, parameters)

    def __getattr__(self, name: str) -> Any:
        if name in _OUTSIDE_THE_LOCK:
            raise AttributeError(f"Cursor.{name} would run or stream outside the reads lock: execute and fetch*")
        attr = getattr(self._con, name)
        return _reading(attr, self._lock) if name in _FETCHES else attr

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self._con.close()


_FETCHES = frozenset({"fetchone", "fetchall", "fetchmany", "fetchnumpy", "fetchdf", "fetch_df", "fetch_df_chunk",
                      "df", "fetch_arrow_table", "arrow", "pl"})
_OUTSIDE_THE_LOCK = frozenset({"fetch_record_batch", "sql", "query", "table", "view", "values", "from_query",
                               "table_function", "read_csv", "read_json", "read_parquet", "from_df", "from_arrow"})


def _reading(fetch: Any, lock: ReadWriteLock) -> Any:
    """`fetch`, each call under `lock.reading()`."""
    def locked(*args: Any, **kwargs: Any) -> Any:
        with lock.reading():
            return fetch(*args, **kwargs)
    return locked


class Rows:
    """A streamed result's rows, a list of `size` tuples at a time, holding `held` (the reads lock) until the last
    is fetched, a fetch fails, or `close`. Rows left before their end must be closed (rowstream's response does,
    however the client goes): garbage collection only is a fallback, late (a cycle held one 15-20 s)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, size: int, held: contextlib.ExitStack) -> None:
        self._con, self._size, self._held = con, size, held
        self._open = True
        self.description = con.description

    def __iter__(self) -> Rows:
        return self

    def __next__(self) -> list[tuple[Any, ...]]:
        if not self._open:
            raise StopIteration
        try:
            rows = self._con.fetchmany(self._size)
        except BaseException:
            self.close()
            raise
        if not rows:
            self._held.close()
            self._open = False
            raise StopIteration
        return rows

    def close(self) -> None:
        """Release the lock; before the last row, close the cursor first (DuckDB's worker threads filling the
        result's buffer stop), so no fetch or worker runs outside the lock. Touches DuckDB: not on an event loop."""
        if self._open:
            self._open = False
            try:
                with contextlib.suppress(duckdb.Error):
                    self._con.close()
            finally:
                self._held.close()

    def __del__(self) -> None:
        self.close()
