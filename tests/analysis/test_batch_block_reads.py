"""What the analyzer runs per batch reads the blocks of the new rows, not of the whole history: a publication
read every metric row's run id and a batch's overlap check every run's, so DuckDB's block cache refilled with
whole columns between the store's flushes (which evict it) and the analyzer's memory between flushes grew with
the history (bench_analyzer_history.py). Real DuckDB file, real results through Store.write_batch, a history
of 320,000 runs (past store_lookup.SCAN_BELOW, where a batch's lookups use the key's index) and 2.5 million metric
rows, DuckDB's own accounting of the blocks it read."""

from __future__ import annotations

import contextlib
from datetime import timedelta
from pathlib import Path

import duckdb
from podtax_analyzer.score_cache import ScoreCache
from podtax_analyzer.scores import node_scores
from podtax_analyzer.store import Store

from tests.analysis.test_score_cache import _batch, _result

HISTORY = 320_000  # runs of 8 metrics
BATCH = 1000  # results a batch (the service's): DuckDB looks up fewer ids than 0.1% of the rows in the key's index


def _history(store: Store) -> None:
    """Runs of other nodes than _batch's, straight into the tables (write_batch would take minutes). Their ids
    are spread over the new runs' ('r<md5>' around 'r24'), as a campaign's are: a row group of ids all below
    or above the new ones is skipped by its min/max, which would hide a scan of the whole table."""
    con = store.cursor()
    con.execute(f"""INSERT INTO runs (run_id, event_id, campaign, cluster, node, env, test, params, params_key,
                                     attempt, sequence, status, flags, started_at, ended_at, stored_at)
                    SELECT 'r' || md5(i::varchar), 'e' || i, 'old', 'local', 'old-' || (i % 40),
                           'host', 'sysbench-cpu', '{{}}', '', 1, 0, 'ok', [],
                           TIMESTAMPTZ '2025-06-01' + i * INTERVAL 10 SECOND,
                           TIMESTAMPTZ '2025-06-01' + i * INTERVAL 10 SECOND + INTERVAL 5 SECOND, now()
                    FROM range({HISTORY}) t(i)""")
    con.execute(f"""INSERT INTO metrics SELECT 'r' || md5((i // 8)::varchar), 'm' || (i % 8),
                           random(), 'ms', false FROM range({HISTORY * 8}) t(i)""")


def _blocks_read(store: Store, work) -> int:  # noqa: ANN001 - a callable
    """Bytes of the file's blocks DuckDB holds after `work`, having held none before."""
    with store.cursor() as con:
        con.execute("CHECKPOINT")
        with contextlib.suppress(duckdb.OutOfMemoryException):  # evicts every unpinned block, as store._flush
            con.execute("SET memory_limit = '0KiB'")
        con.execute("SET memory_limit = '512MB'")
        work()
        return con.execute("SELECT memory_usage_bytes FROM duckdb_memory() WHERE tag = 'BASE_TABLE'").fetchone()[0]


def test_a_publication_reads_the_new_row_groups_only(tmp_path: Path) -> None:
    store = Store(tmp_path / "podtax.duckdb", 512)
    try:
        _history(store)
        cache = ScoreCache()
        cache.update(store, store.write_batch(_batch(0, 24)))  # the keys of _batch are loaded once
        runs = store.write_batch(_batch(24, 24))
        scores: list = []
        published = _blocks_read(store, lambda: scores.extend(cache.update(store, runs)))
        whole = _blocks_read(store, lambda: store.cursor().execute("SELECT count(DISTINCT run_id) FROM metrics"))
        assert whole > 2**20, f"the metrics table's run ids are only {whole} bytes: nothing to test"
        assert scores == node_scores(store.cursor(), since_runs=runs) and len(scores) == 24
    finally:
        store.close()
    assert published < whole / 4, f"a publication read {published} bytes of blocks, the metric run ids are {whole}"


def test_a_batch_reads_the_new_rows_only(tmp_path: Path) -> None:
    """Its overlap check took the new runs' spans from the table by id (the whole run_id column); now from
    the rows it stores. A late run still flags the older one it overlaps."""
    store = Store(tmp_path / "podtax.duckdb", 512)
    try:
        _history(store)
        store.write_batch(_batch(0, 24))
        old = store.cursor().execute("SELECT started_at FROM runs WHERE run_id = 'r3'").fetchone()[0]
        late = _result(5000, "n1", "host", "sysbench-cpu", start=old + timedelta(seconds=2))
        stored: list[set[str]] = []
        written = _blocks_read(store, lambda: stored.append(store.write_batch([*_batch(24, BATCH), late])))
        whole = _blocks_read(store, lambda: store.cursor().execute("SELECT count(DISTINCT run_id) FROM runs"))
        flags = dict(store.cursor().execute("SELECT run_id, flags FROM runs WHERE run_id IN ('r3', 'r5000')"
                                            ).fetchall())
    finally:
        store.close()
    assert stored[0] == {f"r{i}" for i in range(24, 24 + BATCH)} | {"r5000", "r3"}  # the older run comes back, flagged
    assert all(len(f) == 1 and f[0].startswith("OVERLAP: ") for f in flags.values()), flags
    assert whole > 2**20, f"the runs table's run ids are only {whole} bytes: nothing to test"
    assert written < whole / 4, f"a batch read {written} bytes of blocks, the runs' ids are {whole}"
