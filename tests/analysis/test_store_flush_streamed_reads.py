"""DuckDB's `execute` returns a streamed result: the query's last pipeline runs as the rows are fetched, allocating
as it goes. The store's cursors ran statements under the reads lock but fetched outside it, so a route streaming
rows (rowstream.batches: /api/runs, /api/results, the phases) fetched while the flush's eviction asked DuckDB for a
limit of 0, and such a fetch failed with OutOfMemory ('0 bytes/0 bytes used'). A real DuckDB file, a real reader
thread streaming a campaign's raw logs a batch at a time while batches are written and flushed (an eviction each).
DuckDB's 0 lasts only inside its own call, too short to meet on purpose, so the eviction here waits until the reader
has either fetched (a Python function in the query tells: it runs inside the fetch) or asked for the lock (held
back): a fetch during an eviction is seen every time it can happen."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from podtax_analyzer.reads import ReadWriteLock
from podtax_analyzer.rowstream import batches
from podtax_analyzer.store import Store

from tests.analysis.test_store_vacuum import _batch

FLUSHES = 8
SEEDED = 400
WAIT_S = 60


class _Watched(ReadWriteLock):
    """The store's reads lock, saying while the reader thread waits for it."""

    def __init__(self, reader: list[threading.Thread], asked: threading.Event) -> None:
        super().__init__()
        self._reader, self._asked = reader, asked

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """`asked` is set while the reader waits for the lock (cleared once it holds it)."""
        mine = threading.current_thread() in self._reader
        if mine:
            self._asked.set()
        with super().reading():
            if mine:
                self._asked.clear()
            yield


def test_streamed_fetches_never_meet_the_flushs_eviction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("podtax_analyzer.store.FLUSH_BATCHES", 1)  # a flush after every batch
    store = Store(tmp_path / "podtax.duckdb", 128, cache_mb=0)  # any cached block of the file: the flush evicts
    for b in range(SEEDED // 100):
        store.write_batch(_batch(b * 100, 100, campaign="streamed"))
    reader: list[threading.Thread] = []
    asked, moved, evicting = threading.Event(), threading.Event(), threading.Event()
    done, ended = threading.Event(), threading.Event()
    store._reads = _Watched(reader, asked)
    fetched_while_evicting: list[int] = []
    failures: list[BaseException] = []
    evictions = [0]
    streams: list[int] = []

    def fetching(n: int) -> int:  # called inside DuckDB's fetch, row by row
        if evicting.is_set():
            fetched_while_evicting.append(n)
        moved.set()
        return n

    evict = Store._evict

    def watched_evict(self: Store, con: duckdb.DuckDBPyConnection) -> None:
        moved.clear()
        evicting.set()
        try:  # the reader is streaming: it fetches now (the bug) or asks for the lock and is held back
            assert _either(asked, moved, ended), "the reader neither fetched nor asked for the lock"
            evict(self, con)
            evictions[0] += 1
        finally:
            evicting.clear()

    monkeypatch.setattr(Store, "_evict", watched_evict)

    def rows() -> Iterator[int]:
        query = "SELECT fetching(n::INTEGER) AS n, run_id, stdout FROM raw_logs, range(50) t(n) WHERE campaign = $1"
        for chunk in batches(store.cursor(), query, ["streamed"], 100):  # as the API's routes stream their rows
            yield len(chunk)

    def read() -> None:
        try:
            while not done.is_set():
                streams.append(sum(rows()))
        except duckdb.Error as exc:
            failures.append(exc)
        finally:
            ended.set()

    store.cursor().create_function("fetching", fetching, [int], int)  # type: ignore[list-item]  # every cursor's
    reader.append(threading.Thread(target=read))
    reader[0].start()
    try:
        for b in range(FLUSHES * 10):
            if evictions[0] >= FLUSHES or failures:
                break
            assert _either(moved, ended, ended), "the reader stopped"  # each batch while the reader is mid-stream
            store.write_batch(_batch(10_000 + b * 10, 10))
    finally:
        done.set()
        reader[0].join()
        store.close()
    assert not failures, f"a streamed read failed: {failures[0]!r}"
    assert not fetched_while_evicting, (f"{len(fetched_while_evicting)} rows fetched during {evictions[0]} "
                                        "evictions: fetches run outside the reads lock")
    assert evictions[0] >= FLUSHES
    assert streams and set(streams) == {SEEDED * 50}


def _either(a: threading.Event, b: threading.Event, stop: threading.Event) -> bool:
    """Poll (every millisecond, at most WAIT_S) until `a` or `b` is set, or `stop`."""
    deadline, tick = time.monotonic() + WAIT_S, threading.Event()
    while not (a.is_set() or b.is_set() or stop.is_set()):
        if time.monotonic() > deadline:
            return False
        tick.wait(0.001)
    return True
