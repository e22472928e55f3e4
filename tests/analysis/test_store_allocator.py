"""Every FLUSH_BATCHES batches, the store makes DuckDB's allocator (its own jemalloc) return the pages
the batches freed: they stayed resident and grew with the history (bench_analyzer_history.py). A real
DuckDB file, real raw logs and results; the allocator's own count of dirty pages (freed, still resident)."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest
from podtax_analyzer.store import FLUSH_BATCHES, Store

from tests.analysis.test_store_vacuum import _batch

MALLCTL_ARENAS_ALL = 4096  # jemalloc's index for "every arena" in a stats name


def _mallctl():  # noqa: ANN202 - a ctypes function
    try:
        import _duckdb

        return ctypes.CDLL(_duckdb.__file__).duckdb_je_mallctl
    except (ImportError, OSError, AttributeError):
        pytest.skip("DuckDB is not built with jemalloc here (it is on 64-bit Linux)")


def _dirty_pages(ctl) -> int:  # noqa: ANN001 - a ctypes function
    epoch, size = ctypes.c_uint64(1), ctypes.c_size_t(8)  # refresh jemalloc's statistics
    ctl(b"epoch", ctypes.byref(epoch), ctypes.byref(size), ctypes.byref(epoch), ctypes.c_size_t(8))
    value, size = ctypes.c_size_t(0), ctypes.c_size_t(ctypes.sizeof(ctypes.c_size_t))
    assert ctl(f"stats.arenas.{MALLCTL_ARENAS_ALL}.pdirty".encode(), ctypes.byref(value), ctypes.byref(size),
               None, ctypes.c_size_t(0)) == 0
    return value.value


@pytest.mark.parametrize(("memory_mb", "flushed"), [
    (128, True),  # the service always sets a limit: set again, it flushes the allocator
    (None, False),  # DuckDB's default limit (the bench's anchor): nothing to set again, pages stay
])
def test_the_allocator_returns_its_free_pages_every_flush_batches(tmp_path: Path, memory_mb: int | None,
                                                                   flushed: bool) -> None:
    ctl = _mallctl()
    store = Store(tmp_path / "podtax.duckdb", memory_mb)
    try:
        for b in range(FLUSH_BATCHES):
            store.write_batch(_batch(b * 100, 100))
        dirty = _dirty_pages(ctl)
    finally:
        store.close()
    assert store.batches == FLUSH_BATCHES
    assert (dirty == 0) is flushed, f"{dirty} dirty pages after {FLUSH_BATCHES} batches"
