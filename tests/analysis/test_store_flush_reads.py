"""The store's flush asks DuckDB for a memory limit of 0 to make it walk its eviction queues and evict
every unpinned block; DuckDB takes that limit when nothing is pinned, until the flush sets it back, and a
read starting on another cursor in between failed with OutOfMemory. Reads and the flush's eviction now
exclude each other (reads do not exclude one another). A real DuckDB file, real raw logs and results, a
real reader thread querying while flushes run after every batch; the window DuckDB's 0 stays is widened (a
pause after each eviction) so a read meets it every run when nothing holds reads back."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import duckdb
import pytest
from podtax_analyzer.store import Store

from tests.analysis.test_store_vacuum import _batch

BATCHES = 40


def test_reads_never_meet_the_flushs_zero_memory_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("podtax_analyzer.store.FLUSH_BATCHES", 1)  # a flush, with its eviction, after every batch
    evict = Store._evict

    def evict_and_pause(self: Store, con: duckdb.DuckDBPyConnection) -> None:
        evict(self, con)
        time.sleep(0.02)  # were DuckDB's limit 0 now, it would stay so until the flush sets it back

    monkeypatch.setattr(Store, "_evict", evict_and_pause)
    store = Store(tmp_path / "podtax.duckdb", 128, cache_mb=0)
    done, read_since = threading.Event(), threading.Event()
    failures: list[BaseException] = []
    reads = [0]

    def read() -> None:
        cur = store.cursor()
        while not done.is_set():
            try:
                cur.execute("SELECT count(*), sum(value) FROM metrics").fetchone()
                reads[0] += 1
            except duckdb.Error as exc:
                failures.append(exc)
            read_since.set()

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for b in range(BATCHES):
            # each batch (and its flush) starts only after a read since the last one: the reader keeps reading
            # while it runs, however a loaded host shares the cores out (it once had too few reads in a CI run)
            assert read_since.wait(60), f"the reader stopped after {reads[0]} reads"
            read_since.clear()
            store.write_batch(_batch(b * 20, 20))
    finally:
        done.set()
        reader.join()
        store.close()
    assert not failures, f"{len(failures)} of {reads[0] + len(failures)} reads failed, e.g. {failures[0]!r}"
    assert reads[0] >= BATCHES


def test_a_long_read_makes_the_flush_skip_its_eviction_not_hold_every_statement(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A statement still running when a flush must evict: the flush skips the eviction and returns, and another
    cursor's statement runs while the first still does (before, both waited for the long one); once it ends, a
    flush evicts again."""
    evictions = [0]
    evict = Store._evict

    def counted(self: Store, con: duckdb.DuckDBPyConnection) -> None:
        evictions[0] += 1
        evict(self, con)

    monkeypatch.setattr(Store, "_evict", counted)
    caplog.set_level(logging.INFO, "podtax.analyzer.store")
    store = Store(tmp_path / "podtax.duckdb", 128, cache_mb=0)  # any block of the file cached: the flush evicts
    release, started = threading.Event(), threading.Event()

    def hold(x: int) -> int:
        started.set()
        release.wait()
        return x

    slow = store.cursor()
    slow.create_function("hold", hold, [int], int)  # type: ignore[list-item]
    long_read = threading.Thread(target=lambda: slow.execute("SELECT hold(count(*)::INTEGER) FROM metrics"))
    try:
        store.write_batch(_batch(0, 20))
        store.cursor().execute("CHECKPOINT")  # the file's blocks, now cached, are over cache_mb
        long_read.start()
        assert started.wait(30), "the long read never started"
        flush = threading.Thread(target=store._flush)
        flush.start()
        flush.join(30)
        assert not flush.is_alive(), "the flush waited for the long read"
        assert store.cursor().execute("SELECT 1").fetchone() == (1,)
        assert long_read.is_alive(), "the long read ended before the flush was tried"
        assert evictions[0] == 0
        assert "eviction skipped" in caplog.text
    finally:
        release.set()
        long_read.join()
    store._flush()
    store.close()
    assert evictions[0] == 1, "the flush after the long read did not evict"
