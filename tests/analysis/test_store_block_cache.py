"""Every FLUSH_BATCHES batches, the store brings the file's blocks DuckDB keeps (its block cache, tag
BASE_TABLE) back to `cache_mb`: DuckDB kept every block a checkpoint wrote, so the analyzer's memory grew
with the file up to its memory limit (bench_analyzer_history.py). A real DuckDB file, real raw logs and
results, DuckDB's own accounting."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax_analyzer.store import FLUSH_BATCHES, Store

from tests.analysis.test_store_vacuum import _batch


def _cached_blocks(store: Store) -> int:
    with store.cursor() as con:
        return con.execute("SELECT memory_usage_bytes FROM duckdb_memory() WHERE tag = 'BASE_TABLE'").fetchone()[0]


@pytest.mark.parametrize(("memory_mb", "cache_mb", "trimmed"), [
    (128, 0, True),  # the service always sets a limit: the blocks beyond cache_mb are evicted
    (128, 32, False),  # fewer than cache_mb: all kept
    (None, 0, False),  # DuckDB's default limit (the bench's anchor): nothing is evicted
])
def test_the_block_cache_is_brought_back_to_cache_mb_every_flush_batches(
        tmp_path: Path, memory_mb: int | None, cache_mb: int, trimmed: bool) -> None:
    store = Store(tmp_path / "podtax.duckdb", memory_mb, cache_mb=cache_mb)
    try:
        for b in range(FLUSH_BATCHES - 1):
            store.write_batch(_batch(b * 100, 100))
        with store.cursor() as con:
            con.execute("CHECKPOINT")  # the rows go to the file: DuckDB keeps the blocks it wrote
        before = _cached_blocks(store)
        store.write_batch(_batch((FLUSH_BATCHES - 1) * 100, 100))
        after = _cached_blocks(store)
        rows = store.cursor().execute("SELECT count(*) FROM runs").fetchone()[0]
    finally:
        store.close()
    assert before > 0, "the checkpoint left no block in DuckDB's cache: nothing to test"
    assert rows == FLUSH_BATCHES * 100  # what was evicted is read back from the file
    assert (after == 0) is trimmed, f"{after} bytes of the file's blocks kept after the flush ({before} before)"


def _dead_nodes(store: Store) -> int:
    with store.cursor() as con:
        return con.execute("SELECT sum(dead_nodes) FROM duckdb_eviction_queues()").fetchone()[0]


def test_dead_eviction_queue_nodes_are_freed_past_dead_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DuckDB's eviction queues keep a node (~0.8 KB of C++ heap) for every buffer a query unpinned until a
    queue holds 32,768: past DEAD_NODES at a flush, the store has DuckDB walk them, even with a block
    cache under its bound."""
    monkeypatch.setattr("podtax_analyzer.store.DEAD_NODES", 100)
    store = Store(tmp_path / "podtax.duckdb", 128, cache_mb=1024)
    try:
        for b in range(FLUSH_BATCHES - 1):
            store.write_batch(_batch(b * 100, 100))
        with store.cursor() as con:
            for _ in range(20):  # queries leave dead nodes: each unpins buffers that are then freed
                con.execute("SELECT name, list(value ORDER BY value) FROM metrics GROUP BY name").fetchall()
        before = _dead_nodes(store)
        store.write_batch(_batch((FLUSH_BATCHES - 1) * 100, 100))
        after = _dead_nodes(store)
    finally:
        store.close()
    assert before > 100, f"only {before} dead nodes: nothing to test"
    assert after <= 100, f"{after} dead nodes after the flush ({before} before)"
