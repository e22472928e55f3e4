"""Checkpoints of the analyzer's DuckDB file do not merge row groups while results come in (merging
rewrote every raw log in memory: the analyzer's memory jumped at doubling row counts), and do merge
them during a reparse, which deletes rows. A real DuckDB file, real checkpoints, real raw logs."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax import events
from podtax.derive import derive
from podtax_analyzer.reparse import reparse
from podtax_analyzer.score_cache import ScoreCache
from podtax_analyzer.store import VACUUM_TASKS, Store

LOG = Path(__file__).resolve().parents[1] / "corpus" / "debian12-x86_64" / "sysbench-cpu-prime100000-1t.log"


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "podtax.duckdb")
    yield s
    s.close()


def _batch(first: int, count: int, campaign: str = "c") -> list[events.Envelope]:
    """Raw logs and their results, as the analyzer receives them."""
    text, batch = LOG.read_text(), []
    for i in range(first, first + count):
        now = events.now()
        run = events.RunSpec(run_id=f"v-{i:05d}", campaign=campaign, node="n1", env="host", test="sysbench-cpu",
                             params={"threads": 1, "max_prime": 100000})
        raw = events.raw_log(events.RawLog(run=run, stdout=text, exit_code=0, started_at=now, ended_at=now), "test")
        batch += [raw, derive(raw.data)]
    return batch


def _setting(store: Store) -> int:
    return int(store.cursor().execute("SELECT current_setting('max_vacuum_tasks')").fetchone()[0])


def _row_groups(store: Store, table: str) -> int:
    return store.cursor().execute(f"SELECT count(DISTINCT row_group_id) FROM pragma_storage_info('{table}')"
                                  ).fetchone()[0]


def _ingest_in_checkpoints(store: Store, batches: int) -> None:
    for b in range(batches):
        store.write_batch(_batch(b * 50, 50))
        store.cursor().execute("CHECKPOINT")


def test_ingest_checkpoints_append_row_groups_without_merging(store: Store) -> None:
    assert _setting(store) == 0
    _ingest_in_checkpoints(store, 3)
    assert _row_groups(store, "raw_logs") == 3  # one per checkpoint: nothing was rewritten
    assert _row_groups(store, "runs") == 3
    with store.vacuuming():  # the same file, merging allowed: the next checkpoint merges them
        assert _setting(store) == VACUUM_TASKS
        store.write_batch(_batch(1000, 50))
    assert _row_groups(store, "raw_logs") == 1
    assert _setting(store) == 0


def test_vacuuming_turns_merging_off_again_when_the_work_fails(store: Store) -> None:
    with pytest.raises(RuntimeError), store.vacuuming():
        raise RuntimeError("the reparse failed")
    assert _setting(store) == 0


def test_a_reparse_merges_what_it_replaced_and_keeps_every_run(store: Store) -> None:
    _ingest_in_checkpoints(store, 3)
    before = store.cursor().execute("SELECT run_id, status FROM runs ORDER BY run_id").fetchall()
    counts = reparse(store, batch=40)
    assert counts["logs"] == 150 and counts["results"] == 150
    assert store.cursor().execute("SELECT run_id, status FROM runs ORDER BY run_id").fetchall() == before
    assert _row_groups(store, "runs") == 1  # the deleted rows' space was reclaimed
    assert _setting(store) == 0


def _memory_limit_mib(store: Store) -> float:
    value, unit = store.cursor().execute("SELECT current_setting('memory_limit')").fetchone()[0].split()
    return float(value) * {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024, "TiB": 1024 ** 2}[unit]


def test_memory_limit_bounds_duckdb_and_the_store_still_works(tmp_path: Path) -> None:
    """PODTAX_ANALYZER_MEMORY_MB: DuckDB's limit is the one given (MB = 10^6 bytes); unset keeps DuckDB's own
    default (80% of the RAM, far above it). Results are stored and read back under the limit."""
    default = Store(tmp_path / "default.duckdb")
    try:
        assert _memory_limit_mib(default) > 1024
    finally:
        default.close()
    limited = Store(tmp_path / "limited.duckdb", memory_mb=128)
    try:
        assert _memory_limit_mib(limited) == pytest.approx(128e6 / 2**20, abs=0.1)
        limited.write_batch(_batch(0, 200))
        assert limited.cursor().execute("SELECT count(*) FROM runs WHERE status = 'ok'").fetchone()[0] == 200
    finally:
        limited.close()


def test_a_score_cache_updated_during_a_reparse_counts_the_runs_stored_after_it(store: Store) -> None:
    """A reparse's last checkpoint merges row groups, which renumbers rowids; a score cache updated after the
    last replacement but before that checkpoint kept rowid marks past the tables' new ends, and the runs stored
    next were read from past those marks: none found, their node scores never published (reviewer's case:
    0 scores where a fresh cache gives 7). The whole reparse now counts as a replacement for the caches."""
    n, kept = 20_000, 10_000
    store.write_batch(_batch(0, kept, "keep") + _batch(kept, n - kept))
    store.cursor().execute("CHECKPOINT")
    cache, ids = ScoreCache(), [f"v-{i:05d}" for i in range(n)]
    cache.update(store, ids)
    reparse(store, "c", lambda counts: cache.update(store, ids[:1]), batch=10 * n)  # updated in the gap
    store.write_batch(_batch(n, 3))
    new = [f"v-{i:05d}" for i in range(n, n + 3)]
    got, fresh = cache.update(store, new), ScoreCache().update(store, new)
    assert [s.n for s in fresh] == [n + 3] * 7
    assert got == fresh
