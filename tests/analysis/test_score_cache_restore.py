"""The service's restore at start (ScoreCache.restore) gives scores.node_scores' figures over the whole database,
reports the same keys whose statistics raise, keeps the cache within its value cap, and leaves the keys loaded for
the first publication. Real result events through Store.write_batch into a real DuckDB file."""

from __future__ import annotations

import pytest
from podtax_analyzer import score_cache, scores
from podtax_analyzer.score_cache import ScoreCache
from podtax_analyzer.scores import node_scores
from podtax_analyzer.store import Store

from tests.analysis.test_score_cache import _batch


def _key(s) -> tuple[str, ...]:
    return s.cluster, s.node, s.env, s.test, s.params_key, s.metric


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "scores.duckdb")
    yield s
    s.close()


@pytest.mark.parametrize("max_values", [None, 40], ids=["whole-history", "over-budget"])
def test_the_restore_equals_node_scores_and_the_first_publication_loads_nothing(store, monkeypatch, max_values):
    monkeypatch.setattr(score_cache, "LOAD_CHUNK", 5)  # 24 keys: several chunks, evicted between them
    runs: set[str] = set()
    for first in range(0, 120, 24):
        runs |= store.write_batch(_batch(first, 24))
    cache = ScoreCache(max_values)
    unscored: list[tuple[str, ...]] = []
    got = cache.restore(store, unscored)
    assert sorted(got, key=_key) == sorted(node_scores(store.cursor()), key=_key) and len(got) == 24
    assert unscored == []
    assert cache.held == sum(s.held for s in cache.keys.values()) <= cache.max_values
    loaded: list = []
    real = cache._load
    monkeypatch.setattr(cache, "_load", lambda con, keys: (loaded.extend(keys), real(con, keys)))
    assert cache.update(store, runs) == node_scores(store.cursor(), since_runs=runs)
    assert (loaded == []) == (max_values is None), loaded  # over the cap, dropped keys are loaded again


def test_the_restore_reports_the_keys_node_scores_leaves_out(store, monkeypatch):
    """FAULT INJECTION: score_from_sorted raises for n2's pod keys, in both paths."""
    real = scores.score_from_sorted

    def poisoned(**kw):
        if (kw["node"], kw["env"]) == ("n2", "kubernetes"):
            raise ZeroDivisionError("float division by zero")
        return real(**kw)

    monkeypatch.setattr(scores, "score_from_sorted", poisoned)
    monkeypatch.setattr(score_cache, "score_from_sorted", poisoned)
    store.write_batch(_batch(0, 48))
    left_out: list[tuple[str, ...]] = []
    want = node_scores(store.cursor(), unscored=left_out)
    unscored: list[tuple[str, ...]] = []
    got = ScoreCache().restore(store, unscored)
    assert sorted(got, key=_key) == sorted(want, key=_key) and len(got) == 20
    assert sorted(unscored) == sorted(left_out) and len(unscored) == 4


def test_a_restore_tried_again_counts_the_runs_stored_since_the_last_publication(store):
    """The restore is tried again (NATS refused the first) after publications: the cache then holds keys as of their
    last update, while runs stored since wait to be published; the restore still gives node_scores' figures."""
    cache = ScoreCache()
    cache.update(store, store.write_batch(_batch(0, 48)))
    store.write_batch(_batch(48, 24))  # stored, not yet published
    got = cache.restore(store, [])
    assert sorted(got, key=_key) == sorted(node_scores(store.cursor()), key=_key) and len(got) == 24


def test_a_key_with_no_finite_score_is_not_spared_by_the_sweep(store):
    """Review r12 of 1ea39eee: restore listed every key without a score as one whose statistics raised, so the
    sweep kept the last published score of a key whose values have no finite mean (near the float maximum), which
    node_scores (the restore before) let the sweep delete: the scheduler went on ranking by a stale figure."""
    from podtax import subjects
    from podtax_analyzer.score_sweep import stale_keys

    from tests.analysis.test_scores_extreme_values import result_events

    store.write_batch(result_events("good", "good-node", [1000.0, 1010.0, 990.0], [970.0, 980.0, 960.0])
                      + result_events("huge", "huge-node", [1.7e308, 1.6e308], [1.0]))
    left_out: list[tuple[str, ...]] = []
    want = node_scores(store.cursor(), unscored=left_out)
    unscored: list[tuple[str, ...]] = []
    got = ScoreCache().restore(store, unscored)
    assert sorted(got, key=_key) == sorted(want, key=_key)
    assert unscored == left_out == []
    huge = [_key(s) for s in want] + [("local", "huge-node", "host", "sysbench-cpu", "threads=1",
                                                    "events_per_second")]
    held = [subjects.score_key(c, e, n, t, m, p) for c, n, e, t, p, m in huge]
    assert stale_keys(held, got, unscored) == stale_keys(held, want, left_out) != []


def test_the_first_publication_after_a_restore_reads_only_the_rows_stored_since(store, monkeypatch):
    """restore left the cache's marks at 0, so the first publication after a restart read the new runs' rows from
    every stored metric row (every row group) though every key was loaded; now from its snapshot's marks. Runs
    stored before the restore but not yet published are still counted once."""
    store.write_batch(_batch(0, 48))
    waiting = store.write_batch(_batch(48, 24))  # stored before the restart, not yet published
    cache = ScoreCache()
    cache.restore(store, [])
    marks = store.cursor().execute(score_cache._MARKS).fetchone()
    assert cache.marks == marks
    new = store.write_batch(_batch(72, 24))
    past: list[int] = []  # metric rows each query of the update may read: those past its marks
    real = score_cache._new_row_queries

    def watched(con, ids, at):  # the real queries, their marks noted
        for where, params in real(con, ids, at):
            assert where == score_cache._FRESH_ROWS
            past.append(con.execute("SELECT count(*) FROM metrics WHERE rowid >= $1", [params[2]]).fetchone()[0])
            yield where, params

    monkeypatch.setattr(score_cache, "_new_row_queries", watched)
    assert cache.update(store, new) == node_scores(store.cursor(), since_runs=new)
    rows = store.cursor().execute("SELECT count(*) FROM metrics WHERE run_id IN (SELECT unnest($1::varchar[]))",
                                  [sorted(new)]).fetchone()[0]
    assert past == [rows] == [48], past  # 48 new rows, not the 192 stored
    monkeypatch.setattr(score_cache, "_new_row_queries", real)
    later = store.write_batch(_batch(96, 24))
    assert cache.update(store, waiting | later) == node_scores(store.cursor(), since_runs=waiting | later)
    every = {r for (r,) in store.cursor().execute("SELECT run_id FROM runs").fetchall()}
    assert cache.update(store, every) == node_scores(store.cursor()) and len(every) == 120


def test_a_sweep_keeps_the_keys_in_use_under_the_cap(store, monkeypatch):
    """Review r1 of 7641c4c2: the sweep after a deletion (Analyzer._sweep) restores through the cache, which loaded
    every key in key order, so a capped cache was left holding the alphabetically last keys and the next publication
    loaded its keys (in use before the sweep) from DuckDB again. The keys held before are now loaded last, kept."""
    store.write_batch(_batch(0, 240))  # 24 keys, 10 values each

    def n1(first: int) -> list:  # node n1's runs only: its 8 keys
        return [e for i in range(first, first + 24) if i % 3 == 0 for e in _batch(i, 1)]

    cache = ScoreCache(max_values=120)  # room for about a third of the keys
    cache.update(store, store.write_batch(n1(240)))
    held = list(cache.keys)  # n1's keys that fit, the most recently touched last
    assert held and {k[1] for k in held[-3:]} == {"n1"}
    got = cache.restore(store, [])  # the sweep
    assert got == sorted(node_scores(store.cursor()), key=_key) and len(got) == 24
    assert list(cache.keys)[-len(held):] == held
    loaded: list = []
    real = cache._load
    monkeypatch.setattr(cache, "_load", lambda con, keys: (loaded.extend(keys), real(con, keys)))
    runs = store.write_batch(n1(264))
    assert cache.update(store, runs) == node_scores(store.cursor(), since_runs=runs)
    assert {k[1] for k in loaded} == {"n1"} and not set(loaded) & set(held), (loaded, held)
