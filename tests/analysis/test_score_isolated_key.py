"""One key whose statistics raise leaves only that key's score out of a publication (r6, s50).

stats/modes._separation raised ZeroDivisionError on one key's values ([0, 0, 1e-170, 1, 1, 1], fixed in 6dde9462);
ScoreCache.update raised with it, publish_updates put every run back into pending, and each later publication held
the poisoned key and raised again: no score of any key was published again. Here a real DuckDB store holds real
result events; the per-key score function is made to raise for one key by FAULT INJECTION (monkeypatched: no
statistic of this commit is known to raise), and the other keys' scores must come out equal to the full recompute,
with one error line naming the key.
"""

from __future__ import annotations

import logging

import pytest
from fastapi.testclient import TestClient
from podtax_analyzer import score_cache, scores
from podtax_analyzer.api import create_app
from podtax_analyzer.score_cache import ScoreCache
from podtax_analyzer.score_sweep import score_items, stale_keys
from podtax_analyzer.scores import node_scores
from podtax_analyzer.store import Store

from tests.analysis.test_score_cache import _batch

BAD = ("n2", "kubernetes", "sysbench-cpu", "latency_ms")  # node, env, test, metric of the key made to raise
LOGGER = "podtax.analyzer.scores"


def _key(s) -> tuple[str, str, str, str]:
    return s.node, s.env, s.test, s.metric


def _inject(monkeypatch: pytest.MonkeyPatch, module, exc: type[BaseException] = ZeroDivisionError) -> list[int]:
    """FAULT INJECTION: `module`'s score_from_sorted raises `exc` for the key BAD (ZeroDivisionError as _separation
    did), and is the real one for every other key. Returns the list of BAD's values counts it was called with."""
    real = scores.score_from_sorted
    calls: list[int] = []

    def poisoned(**kw):
        if (kw["node"], kw["env"], kw["test"], kw["metric"]) == BAD:
            calls.append(len(kw["vals"]))
            raise exc("float division by zero") if exc is ZeroDivisionError else exc()
        return real(**kw)

    monkeypatch.setattr(module, "score_from_sorted", poisoned)
    return calls


def _errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR and r.name == LOGGER]


def _names_bad(line: str) -> bool:
    return all(part in line for part in ("node=n2 ", "env=kubernetes ", "test=sysbench-cpu ", "metric=latency_ms:",
                                         "cluster=", "ZeroDivisionError: float division by zero"))


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "scores.duckdb")
    yield s
    s.close()


def test_the_other_keys_are_published_and_the_bad_one_is_said_once(store, monkeypatch, caplog):
    runs = store.write_batch(_batch(0, 24))
    want = node_scores(store.cursor(), since_runs=runs)  # the full recompute, no fault
    assert len(want) == 24 and sum(_key(s) == BAD for s in want) == 1
    calls = _inject(monkeypatch, score_cache)
    cache = ScoreCache()
    caplog.set_level(logging.ERROR, logger=LOGGER)

    got = cache.update(store, runs)
    assert got == [s for s in want if _key(s) != BAD]  # 23 keys, each equal to the full recompute
    assert calls == [2]
    [line] = _errors(caplog)
    assert _names_bad(line), line

    # the same runs published again (as after NATS refused the publication): left out again, not said again
    caplog.clear()
    assert cache.update(store, runs) == got
    assert calls == [2, 2] and _errors(caplog) == []

    # its runs change: tried again (and said again, the key's state being new); the other keys keep publishing
    caplog.clear()
    more = store.write_batch(_batch(24, 24))
    got = cache.update(store, more)
    want = node_scores(store.cursor(), since_runs=more)
    assert got == [s for s in want if _key(s) != BAD] and len(got) == 23
    assert calls == [2, 2, 4]
    [line] = _errors(caplog)
    assert _names_bad(line), line

    # the fault gone: the key is scored at its next change, with every run counted
    monkeypatch.setattr(score_cache, "score_from_sorted", scores.score_from_sorted)
    caplog.clear()
    last = store.write_batch(_batch(48, 24))
    assert cache.update(store, last) == node_scores(store.cursor(), since_runs=last)
    assert [s.n for s in cache.update(store, last) if _key(s) == BAD] == [6]
    assert _errors(caplog) == []


def test_the_full_recompute_leaves_out_only_the_bad_key(store, monkeypatch, caplog):
    """node_scores (the scores put back into the bucket at start, the HTTP API) shares the isolation."""
    store.write_batch(_batch(0, 24))
    want = node_scores(store.cursor())
    _inject(monkeypatch, scores)
    caplog.set_level(logging.ERROR, logger=LOGGER)
    assert node_scores(store.cursor()) == [s for s in want if _key(s) != BAD]
    [line] = _errors(caplog)
    assert _names_bad(line), line


@pytest.mark.parametrize("exc", [MemoryError, RecursionError])
def test_a_memory_or_recursion_error_still_fails_the_whole_computation(store, monkeypatch, caplog, exc):
    """r9 (s50): no bug of one key's statistics, but a passing want of memory or stack: left out, the key stayed
    without a score until its runs changed. It fails the whole publication (retried with its runs) as before."""
    runs = store.write_batch(_batch(0, 24))
    _inject(monkeypatch, score_cache, exc)
    _inject(monkeypatch, scores, exc)
    caplog.set_level(logging.ERROR, logger=LOGGER)
    with pytest.raises(exc):
        ScoreCache().update(store, runs)
    with pytest.raises(exc):
        node_scores(store.cursor())
    assert _errors(caplog) == []


def test_node_scores_names_the_keys_it_left_out_and_the_sweep_spares_them(store, monkeypatch):
    """r9 (s50): the sweep took a key left out by node_scores for one without a stored run and deleted its score
    ('whose runs are no longer stored'), every key's when every key raised. node_scores now names them."""
    store.write_batch(_batch(0, 24))
    held = [key for key, _ in score_items(node_scores(store.cursor()))]
    gone = held[0].replace(".n1.", ".gone.")  # a key of no stored run: still swept
    _inject(monkeypatch, scores)
    unscored: list[tuple[str, ...]] = []
    got = node_scores(store.cursor(), unscored=unscored)
    assert [(k[1], k[2], k[3], k[5]) for k in unscored] == [BAD] and len(got) == 23
    assert stale_keys([*held, gone], got, unscored) == [gone]

    monkeypatch.setattr(scores, "score_from_sorted", lambda **kw: 1 / 0)  # FAULT INJECTION: every key raises
    unscored.clear()
    assert node_scores(store.cursor(), unscored=unscored) == [] and len(unscored) == 24
    assert stale_keys([*held, gone], [], unscored) == [gone]


def test_the_api_says_a_key_left_out_at_debug_level_only(store, monkeypatch, caplog):
    """r9 (s50): GET /api/scores said one error line per failing key on every request; the publications say it."""
    store.write_batch(_batch(0, 24))
    want = node_scores(store.cursor())
    _inject(monkeypatch, scores)
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    client = TestClient(create_app(store), raise_server_exceptions=False)
    for _ in range(3):
        resp = client.get("/api/scores")
        assert resp.status_code == 200, resp.text
        assert len(resp.json()) == len(want) - 1
    assert _errors(caplog) == []
    said = [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.DEBUG]
    assert len(said) == 3 and all(_names_bad(line) for line in said), said
