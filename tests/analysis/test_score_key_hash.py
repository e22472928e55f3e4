"""The score cache tells the keys of one publication apart by a 64-bit hash of the key (score_rows._grouped); two
keys of one hash must never have their values merged. FAULT INJECTION, labelled: no real 64-bit collision is known,
so every row query hashes the node where it hashes the key (every key of a node collides). Faithful to a real
collision: DuckDB folds each argument of hash(...) into the hash of those before, so a query hashing the key and
more (hash(<key>, 'salt')) collides with it; it hashes the node and the same more. Real DuckDB, real result events."""

from __future__ import annotations

import logging

import pytest
from podtax_analyzer import score_rows
from podtax_analyzer.score_cache import ScoreCache
from podtax_analyzer.scores import node_scores
from podtax_analyzer.store import Store

from tests.analysis.test_score_cache import _batch

_KEY_ARGS = "hash(r.cluster, r.node, r.env, r.test, r.params_key, m.name"  # the key's six arguments, opened


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "scores.duckdb")
    yield s
    s.close()


def _node_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every row query of score_rows (_META..., _FLAT...) hashes the node where it hashes the key."""
    changed = []
    for name, sql in vars(score_rows).items():
        if name.startswith(("_META", "_FLAT")) and isinstance(sql, str) and _KEY_ARGS in sql:
            monkeypatch.setattr(score_rows, name, sql.replace(_KEY_ARGS, "hash(r.node"))
            changed.append(name)
    assert {"_META", "_FLAT"} <= set(changed), changed


def test_keys_of_one_hash_are_told_apart(store, monkeypatch, caplog):
    _node_hash(monkeypatch)
    caplog.set_level(logging.WARNING, logger="podtax.analyzer.scores")
    cache = ScoreCache()
    for first in range(0, 72, 24):  # the first publication loads the keys, the next two merge into them
        runs = store.write_batch(_batch(first, 24))
        got = cache.update(store, runs)
        assert got == node_scores(store.cursor(), since_runs=runs) and len(got) == 24  # over their whole history
    said = [r.getMessage() for r in caplog.records if "same 64-bit hash" in r.getMessage()]
    assert len(said) == 3 and "told apart by the keys themselves" in said[0], said


_IDX_ARGS = "hash(cluster, node, env, test, params_key, metric)"  # score_keys' key, hashed as _KEY_ARGS hashes it


def test_keys_loaded_whole_keep_their_own_unit_and_direction(store, monkeypatch):
    """A key new to the cache is loaded whole (_load), its unit, directions and builds from _key_meta, which
    matched its rows by the key's 64-bit hash: two keys of one hash (here a node's events_per_sec, events/s,
    higher is better, and latency_ms, ms, lower) merged theirs, so latency_ms was scored higher-is-better with two
    units. Every query of score_rows that hashes the key hashes the node instead (as _node_hash)."""
    _node_hash(monkeypatch)
    for name, sql in vars(score_rows).items():
        if name.startswith("_KEY") and isinstance(sql, str):
            monkeypatch.setattr(score_rows, name, sql.replace(_KEY_ARGS, "hash(r.node").replace(_IDX_ARGS,
                                                                                                "hash(node)"))
    cache = ScoreCache()
    runs = store.write_batch(_batch(0, 24))
    got = cache.update(store, runs)
    assert got == node_scores(store.cursor(), since_runs=runs) and len(got) == 24
    latency = [s for s in got if s.metric == "latency_ms"]
    assert latency and not any(s.higher_is_better for s in latency) and {s.unit for s in latency} == {"ms"}
