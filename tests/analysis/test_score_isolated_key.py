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
from podtax_analyzer import score_cache, scores
from podtax_analyzer.score_cache import ScoreCache
from podtax_analyzer.scores import node_scores
from podtax_analyzer.store import Store

from tests.analysis.test_score_cache import _batch

BAD = ("n2", "kubernetes", "sysbench-cpu", "latency_ms")  # node, env, test, metric of the key made to raise
LOGGER = "podtax.analyzer.scores"


def _key(s) -> tuple[str, str, str, str]:
    return s.node, s.env, s.test, s.metric


def _inject(monkeypatch: pytest.MonkeyPatch, module) -> list[int]:
    """FAULT INJECTION: `module`'s score_from_sorted raises ZeroDivisionError for the key BAD (as _separation did),
    and is the real one for every other key. Returns the list of BAD's values counts it was called with."""
    real = scores.score_from_sorted
    calls: list[int] = []

    def poisoned(**kw):
        if (kw["node"], kw["env"], kw["test"], kw["metric"]) == BAD:
            calls.append(len(kw["vals"]))
            raise ZeroDivisionError("float division by zero")
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
