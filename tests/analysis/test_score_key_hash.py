"""The score cache tells the keys of one publication apart by a 64-bit hash of the key (score_rows._grouped); two
keys of one hash must never have their values merged. FAULT INJECTION, labelled: no real 64-bit collision is known,
so the row queries read a hash of the node alone (every key of a node collides). Real DuckDB, real result events."""

from __future__ import annotations

import logging

import pytest
from podtax_analyzer import score_rows
from podtax_analyzer.score_cache import ScoreCache
from podtax_analyzer.scores import node_scores
from podtax_analyzer.store import Store

from tests.analysis.test_score_cache import _batch


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "scores.duckdb")
    yield s
    s.close()


def _node_hash(monkeypatch: pytest.MonkeyPatch, key_hash: str, *names: str) -> None:
    """The queries `names` read the hash of the node where they read `key_hash` (score_rows' name of it)."""
    for name in names:
        sql = getattr(score_rows, name)
        weak = sql.replace(getattr(score_rows, key_hash), "hash(r.node)")
        assert weak != sql
        monkeypatch.setattr(score_rows, name, weak)


def test_keys_of_one_hash_are_told_apart_by_another(store, monkeypatch, caplog):
    _node_hash(monkeypatch, "_KEY_HASH", "_META", "_FLAT")
    caplog.set_level(logging.WARNING, logger="podtax.analyzer.scores")
    cache = ScoreCache()
    for first in range(0, 72, 24):
        runs = store.write_batch(_batch(first, 24))
        got = cache.update(store, runs)
        assert got == node_scores(store.cursor(), since_runs=runs) and len(got) == 24
    said = [r.getMessage() for r in caplog.records if "same 64-bit hash" in r.getMessage()]
    assert len(said) == 3 and "told apart by another" in said[0], said


def test_keys_whose_two_hashes_are_alike_fail_the_publication_clearly(store, monkeypatch):
    _node_hash(monkeypatch, "_KEY_HASH", "_META", "_FLAT")
    _node_hash(monkeypatch, "_SALTED_HASH", "_META_SALTED", "_FLAT_SALTED")
    cache = ScoreCache()
    with pytest.raises(RuntimeError, match=r"node-score keys \(.*\) and \(.*\) have the same two 64-bit hashes"):
        cache.update(store, store.write_batch(_batch(0, 24)))
    assert cache.keys == {}  # nothing half-applied
