"""The service's incremental node scores (score_cache.py) equal the full recompute from the database.

Batches of real result events go through Store.write_batch into a real DuckDB file; after each, the
scores the cache publishes for the batch's new runs are compared with scores.node_scores over the
database, field by field. The batches include what can change an already counted run: a late OVERLAP
flag (a new run whose time span covers an older one flags both) and a reparse (replace_results), plus
a result that supersedes a recorded failure, keys loaded while runs were still unpublished, throttled
pod runs, a second tool build and a bimodal node.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from podtax import events
from podtax_analyzer import score_cache, scores
from podtax_analyzer.score_cache import ScoreCache
from podtax_analyzer.scores import node_scores
from podtax_analyzer.store import Store

T0 = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
NODES = ("n1", "n2", "n3")
TESTS = {"sysbench-cpu": {"threads": 1}, "stress-ng-cpu": {"workers": 2}}


def _result(i: int, node: str, env: str, test: str, *, start: datetime | None = None, value: float | None = None,
            build: str | None = None, throttled: int = 0, flags: tuple[str, ...] = ()) -> events.ResultV1:
    rng = np.random.default_rng(i)
    start = start or T0 + timedelta(seconds=20 * i)
    base = {"n1": 100.0, "n2": 120.0, "n3": 80.0}[node] * (0.9 if env == "kubernetes" else 1.0)
    if node == "n3" and (i // 12) % 2:  # n3 has two modes (alternate runs of each of its keys)
        base *= 0.6
    v = value if value is not None else float(base * np.exp(rng.normal(0, 0.01)))
    run = events.RunSpec(run_id=f"r{i}", campaign="c", node=node, env=env, test=test, params=TESTS[test])
    metrics = [events.Metric(name="events_per_sec", value=v, unit="events/s", higher_is_better=True),
               events.Metric(name="latency_ms", value=round(1000 / v, 3), unit="ms", higher_is_better=False)]
    prov = events.Provenance(nr_throttled_before=0, nr_throttled_after=throttled) if env == "kubernetes" \
        else events.Provenance()
    return events.result(events.Result(run=run, tool="sysbench", tool_version="1.0.20", tool_build=build,
                                       parser_version="1", metrics=metrics, started_at=start,
                                       ended_at=start + timedelta(seconds=10), provenance=prov,
                                       flags=list(flags)), "test")


def _batch(first: int, count: int, **kw) -> list[events.ResultV1]:
    out = []
    for i in range(first, first + count):
        node, env = NODES[i % 3], ("host", "kubernetes")[(i // 3) % 2]
        test = list(TESTS)[(i // 6) % 2]
        out.append(_result(i, node, env, test, throttled=5 if i % 17 == 0 else 0, **kw))
    return out


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "scores.duckdb")
    yield s
    s.close()


def _check(store: Store, cache: ScoreCache, runs: set[str]) -> list:
    got = cache.update(store, runs)
    want = node_scores(store.cursor(), since_runs=runs)
    assert got == want  # every field: median, mean, n, interval, updated_at, flags
    assert cache.held == sum(s.held for s in cache.keys.values()) <= cache.max_values
    return got


@pytest.mark.parametrize(("max_values", "named"), [(None, False), (40, False), (None, True)],
                         ids=["whole-history", "over-budget", "named-ids"])
def test_incremental_scores_equal_the_full_recompute(store, monkeypatch, max_values, named):
    """over-budget: the cache holds 40 values at most, so keys are dropped after most publications
    and loaded again when touched, at most 9 rows a loading query (a key of 10+ runs alone in one):
    the scores stay the same. named-ids: the new runs' rows read as over a long history (ids named)."""
    monkeypatch.setattr(score_cache, "NEW_CHUNK", 7)  # several queries per update, as after a long pause
    monkeypatch.setattr(score_cache, "LOOKUP_CHUNK", 7)
    monkeypatch.setattr(score_cache, "NAME_IDS_FROM", 0 if named else 10**12)
    monkeypatch.setattr(score_cache, "LOAD_CHUNK", 5)
    if max_values is not None:
        monkeypatch.setattr(score_cache, "MAX_VALUES", max_values)
        monkeypatch.setattr(score_cache, "LOAD_ROWS", 9)
    cache = ScoreCache()
    for first in range(0, 120, 24):  # 5 batches; keys reach 10+ runs, so the interval and dip test apply
        runs = store.write_batch(_batch(first, 24))
        assert len(runs) == 24
        _check(store, cache, runs)

    # a late run on n1 whose span covers an older one: mark_overlaps flags both, the old one comes back
    old = store.cursor().execute("SELECT started_at FROM runs WHERE run_id = 'r3'").fetchone()[0]
    runs = store.write_batch([_result(500, "n1", "host", "sysbench-cpu", start=old + timedelta(seconds=2))])
    assert runs == {"r500", "r3"}
    got = _check(store, cache, runs)
    assert [(s.env, "OVERLAP" in s.flags) for s in got] == [("host", True)] * 2 + [("kubernetes", True)] * 2

    # a second tool build on n2's pod runs, amid its history (the builds interleave: CONFOUNDED), and a result that
    # supersedes a recorded failure
    failed = events.run_failed(events.RunFailed(run=events.RunSpec(run_id="r600", campaign="c", node="n2",
                                                                   env="host", test="sysbench-cpu",
                                                                   params=TESTS["sysbench-cpu"]),
                                                stage="agent", reason="boom", detail="it failed"), "test")
    assert store.write_batch([failed]) == set()
    runs = store.write_batch([_result(600, "n2", "host", "sysbench-cpu"),
                              _result(601, "n2", "kubernetes", "sysbench-cpu", build="patched",
                                      start=T0 + timedelta(seconds=2000))])
    got = _check(store, cache, runs)
    assert any("CONFOUNDED" in s.flags for s in got)

    # runs whose logs measured another cell or stopped early are not counted (nor is a key only they touch)
    n_before = {(s.node, s.env, s.metric): s.n for s in node_scores(store.cursor()) if s.test == "sysbench-cpu"}
    runs = store.write_batch([_result(700, "n1", "kubernetes", "sysbench-cpu", value=300.0,
                                      flags=("PARAM_MISMATCH: threads echoed as 4, requested 1",)),
                              _result(701, "n1", "kubernetes", "sysbench-cpu", value=300.0,
                                      flags=("THREADS_MISMATCH: 4 threads ran, 1 requested",)),
                              _result(702, "n2", "kubernetes", "sysbench-cpu", value=1.0, flags=("SHORT: 3 of 200",)),
                              _result(703, "n1", "host", "sysbench-cpu")])
    got = _check(store, cache, runs)
    assert [(s.node, s.env) for s in got] == [("n1", "host")] * 2
    after = {(s.node, s.env, s.metric): s.n for s in node_scores(store.cursor()) if s.test == "sysbench-cpu"}
    assert {k: after[k] - n for k, n in n_before.items() if after[k] != n} == {
        ("n1", "host", "events_per_sec"): 1, ("n1", "host", "latency_ms"): 1}

    # a reparse replaces stored values (and turns one result into a failure) behind the cache's back
    store.replace_results([_result(7, "n2", "kubernetes", "sysbench-cpu", value=1.0),
                           events.run_failed(events.RunFailed(run=_result(8, "n3", "host", "sysbench-cpu").data.run,
                                                              stage="parser", reason="x", detail="y"), "test")])
    runs = store.write_batch(_batch(200, 12))
    _check(store, cache, runs)
    _check(store, cache, {"r7", "r8", "r1", "r2"})  # the reparsed runs' keys, as stored now

    # batches published out of order: the later one loads keys that hold the earlier, unpublished runs
    cache = ScoreCache()
    early = store.write_batch(_batch(300, 12))
    late = store.write_batch(_batch(312, 12))
    _check(store, cache, late)
    _check(store, cache, early)
    _check(store, cache, early | late)
    every = {r for (r,) in store.cursor().execute("SELECT run_id FROM runs WHERE status = 'ok'").fetchall()}
    final = _check(store, cache, every)
    assert final == node_scores(store.cursor())
    assert {f for s in final for f in s.flags} == {"BIMODAL", "CONFOUNDED", "OVERLAP", "THROTTLED"}
    assert all(s.ci_low is not None for s in final if s.n >= 6) and any(s.n >= 10 for s in final)


def test_nothing_to_publish_and_a_failed_read_leaves_no_half_state(store):
    cache = ScoreCache()
    assert cache.update(store, []) == []
    runs = store.write_batch(_batch(0, 12))
    _check(store, cache, runs)
    store.con.execute("ALTER TABLE metrics RENAME TO metrics_gone")  # the next read fails
    with pytest.raises(Exception, match="metrics"):
        cache.update(store, {"r1"})
    assert cache.keys == {}
    store.con.execute("ALTER TABLE metrics_gone RENAME TO metrics")
    _check(store, cache, runs)


def test_scores_read_while_a_reparse_is_under_way_are_not_kept(store):
    cache = ScoreCache()
    _check(store, cache, store.write_batch(_batch(0, 12)))
    assert cache.replaced == store.replaced == 0 and cache.keys
    with store._replacing():  # as replace_results does around its transaction
        _check(store, cache, {"r1"})
        assert cache.replaced is None  # what this snapshot saw may not hold once the reparse commits
    with pytest.raises(RuntimeError), store._replacing():
        raise RuntimeError("a reparse that fails still closes its count")
    assert store.replaced == 4
    _check(store, cache, store.write_batch(_batch(12, 12)))
    assert cache.replaced == 4


def test_interval_ranks_are_scipys_binomial_quantiles():
    from scipy.stats import binom

    for confidence in (0.95, 0.9, 0.99):
        for n in [*range(6, 400), 1000, 4999]:
            want = max(1, int(binom.ppf((1.0 - confidence) / 2.0, n, 0.5)))
            assert scores._rank(n, confidence) == want, (n, confidence)


@pytest.mark.parametrize("n", [scores.RANK_EXACT_BELOW, 2001, 2999, 4000, 12345, 54321])
def test_ranks_in_floats_equal_the_exact_integers(n):
    """From RANK_EXACT_BELOW runs the rank is summed in floats (the exact sum is O(n^2) bits: ~1 s at
    100,000 runs); it gives the exact integers' rank (checked for every n from 2,000 to 4,000 too)."""
    for confidence in (0.95, 0.9, 0.99):
        exact = scores._rank_exact(n, confidence)
        assert scores._rank(n, confidence) == scores._rank_float(n, confidence) == exact, (n, confidence)


def test_a_cache_too_small_for_one_publication_says_which_setting_to_raise(store, caplog):
    """Keys a publication touched, dropped at its end, are loaded from DuckDB again by the next one (at a
    million runs, 11.6 s a publication instead of 0.9 s): logged once, naming the setting."""
    small, roomy = ScoreCache(max_values=40), ScoreCache()
    with caplog.at_level("WARNING", logger="podtax.analyzer.scores"):
        for first in range(0, 96, 24):
            runs = store.write_batch(_batch(first, 24))
            assert small.update(store, runs) == roomy.update(store, runs)  # the same scores either way
    warnings = [r.getMessage() for r in caplog.records if "PODTAX_ANALYZER_SCORE_CACHE_VALUES" in r.getMessage()]
    assert len(warnings) == 1 and "raise it" in warnings[0], warnings
    assert roomy.warned == -np.inf  # the whole history fits: nothing said
