"""The store's flush asks DuckDB for a memory limit of 0 to make it walk its eviction queues and evict
every unpinned block; DuckDB takes that limit when nothing is pinned, until the flush sets it back, and a
read starting on another cursor in between failed with OutOfMemory. Reads and the flush's eviction now
exclude each other (reads do not exclude one another). A real DuckDB file, real raw logs and results, a
real reader thread querying while flushes run after every batch; the window DuckDB's 0 stays is widened (a
pause after each eviction) so a read meets it every run when nothing holds reads back."""

from __future__ import annotations

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
    done = threading.Event()
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

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for b in range(BATCHES):
            store.write_batch(_batch(b * 20, 20))
    finally:
        done.set()
        reader.join()
        store.close()
    assert reads[0] > BATCHES, f"only {reads[0]} reads: the window was hardly tried"
    assert not failures, f"{len(failures)} of {reads[0] + len(failures)} reads failed, e.g. {failures[0]!r}"
