"""The running analyzer publishes node scores to the KV bucket the scheduler reads, and they equal
scores.node_scores over its DuckDB file, after every wave of results (incremental, score_cache.py),
including a run that a later one flags as OVERLAP."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest
from podtax import events, natsserver, subjects
from podtax.bus import Bus
from podtax_analyzer.scores import node_scores

from tests.integration.harness import services, wait_for

NODES = ("n1", "n2")


def _result(i: int, start_s: float) -> events.ResultV1:
    node, env = NODES[i % 2], ("host", "kubernetes")[(i // 2) % 2]
    start = events.now() - timedelta(hours=1) + timedelta(seconds=start_s)
    run = events.RunSpec(run_id=f"r{i}", campaign="c", node=node, env=env, test="sysbench-cpu",
                         params={"threads": 1})
    value = 100.0 + (i * 7919 % 13)
    return events.result(events.Result(run=run, tool="sysbench", tool_version="1.0.20", parser_version="1",
                                       metrics=[events.Metric(name="events_per_sec", value=value, unit="events/s",
                                                              higher_is_better=True)],
                                       started_at=start, ended_at=start + timedelta(seconds=10)), "test")


async def _published(bus: Bus) -> dict[str, dict]:
    kv = await bus.kv(subjects.SCORES_BUCKET)
    return {key: await Bus.kv_json(kv, key) for key in await Bus.kv_keys(kv)}


def _expected(db: Path, but: str | None = None) -> dict[str, dict]:
    """The scores bucket as node_scores over `db` gives it (without the keys holding `but`)."""
    con = duckdb.connect(str(db))
    try:
        scores = {subjects.score_key(s.cluster, s.env, s.node, s.test, s.metric, s.params_key):
                  s.model_dump(mode="json") for s in node_scores(con)}
        return {k: v for k, v in scores.items() if but is None or but not in k}
    finally:
        con.close()


async def _until_equal(bus: Bus, db: Path, what: str) -> dict[str, dict]:
    deadline = time.monotonic() + 30
    while True:
        got, want = await _published(bus), _expected(db)
        if got == want:
            return got
        assert time.monotonic() < deadline, f"{what}: published {got} != recomputed {want}"
        await asyncio.sleep(0.2)


async def test_published_scores_equal_the_full_recompute(nats_url: str, tmp_path: Path) -> None:
    async with services(nats_url, tmp_path) as s:
        await s.analyzer()
        bus = await Bus.connect(nats_url, "test")
        await bus.publish_many([_result(i, 20 * i) for i in range(16)])
        await wait_for(lambda: s.query("SELECT count(*) FROM runs")[0][0] == 16, 30, "16 results")
        first = await _until_equal(bus, s.db, "first wave")
        assert len(first) == 4 and all(doc["n"] == 4 for doc in first.values())

        # r23 (n2, pod) runs while r1 (n2, host) ran: both carry OVERLAP; r1's score, published before
        # without it, gets the flag only from r1 itself coming back
        await bus.publish_many([_result(i, 20 * i) for i in range(16, 20)] + [_result(23, 20 * 1 + 2)])
        await wait_for(lambda: s.query("SELECT count(*) FROM runs")[0][0] == 21, 30, "21 results")
        second = await _until_equal(bus, s.db, "second wave")
        flagged = sorted((doc["node"], doc["env"], doc["n"]) for doc in second.values() if "OVERLAP" in doc["flags"])
        assert flagged == [("n2", "host", 5), ("n2", "kubernetes", 6)]
        await bus.close()


async def _scores_through_a_first_nats(tmp: Path) -> dict[str, dict]:
    """16 results stored through a nats-server of their own, stopped afterwards; the scores it held."""
    first = natsserver.start(tmp / "js-first")
    try:
        async with services(first.url, tmp) as s:
            await s.analyzer()
            bus = await Bus.connect(first.url, "test")
            try:
                await bus.publish_many([_result(i, 20 * i) for i in range(16)])
                await wait_for(lambda: s.query("SELECT count(*) FROM runs")[0][0] == 16, 30, "16 results")
                return await _until_equal(bus, s.db, "the first NATS")
            finally:
                await bus.close()
    finally:
        first.stop()


async def test_scores_are_put_back_into_a_nats_that_lost_them(tmp_path: Path) -> None:
    """A NATS that lost its store (or a new one beside the same DuckDB file) holds no scores: the scheduler placed
    pods by resources alone until a new result came in. The analyzer now puts the stored scores back at start."""
    await _scores_through_a_first_nats(tmp_path)
    second = natsserver.start(tmp_path / "js-second")  # nothing of the first one's store
    try:
        async with services(second.url, tmp_path) as s:
            await s.analyzer()
            bus = await Bus.connect(second.url, "test")
            try:
                got = await _until_equal(bus, s.db, "no new result, a NATS without the scores")
                assert len(got) == 4 and all(doc["n"] == 4 for doc in got.values())
            finally:
                await bus.close()
    finally:
        second.stop()


async def test_a_bucket_holding_part_of_the_scores_gets_them_all(tmp_path: Path) -> None:
    """A restore cut short (the analyzer killed mid-way, NATS gone) left part of the scores: the next start puts
    every stored score, not only into an empty bucket."""
    whole = await _scores_through_a_first_nats(tmp_path)
    second = natsserver.start(tmp_path / "js-second")
    try:
        bus = await Bus.connect(second.url, "test")
        try:
            await bus.kv(subjects.SCORES_BUCKET)
            key = sorted(whole)[0]
            await bus.kv_put_many(subjects.SCORES_BUCKET, [(key, json.dumps(whole[key]).encode())])
            async with services(second.url, tmp_path) as s:
                await s.analyzer()
                got = await _until_equal(bus, s.db, "a bucket holding one of four scores")
                assert got == whole
        finally:
            await bus.close()
    finally:
        second.stop()


async def test_a_store_that_cannot_be_read_is_said_once_and_tried_again(nats_url: str, tmp_path: Path,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    from podtax import config
    from podtax_analyzer.service import Analyzer
    from podtax_analyzer.store import Store

    store = Store(tmp_path / "a.duckdb", 256)
    store.close()  # a DuckDB error when the scores are read (as out of memory, a damaged block)
    bus = await Bus.connect(nats_url, "test")
    try:
        analyzer = Analyzer(config.load(config.AnalyzerSettings, nats_url=nats_url, analyzer_db=tmp_path / "a.duckdb"),
                            bus, store)
        kv = await bus.kv(subjects.SCORES_BUCKET)
        with caplog.at_level(logging.WARNING, logger="podtax.analyzer"):
            assert await analyzer._restore_scores(kv, said=False) is False
            assert await analyzer._restore_scores(kv, said=True) is False
        said = [r.getMessage() for r in caplog.records if r.name == "podtax.analyzer"]
        assert len(said) == 1 and "reading the stored scores" in said[0], said
    finally:
        await bus.close()



async def test_a_key_whose_statistics_raise_does_not_stop_the_publications(nats_url: str, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch,
                                                                           caplog: pytest.LogCaptureFixture) -> None:
    """r6 (s50): one key's statistics raised (stats/modes._separation, ZeroDivisionError, fixed in 6dde9462), the
    whole publication with them, its runs went back to pending, and no score of any key was published again. Here
    by FAULT INJECTION (score_from_sorted raising for the key n2 pod in the analyzer's worker threads, where it
    scores; the test's own full recompute, in the main thread, is the real one): every other key is published,
    wave after wave, and the key is said once each time it is scored anew."""
    import threading

    from podtax import config
    from podtax_analyzer import score_cache, scores
    from podtax_analyzer.service import Analyzer
    from podtax_analyzer.store import Store

    real = scores.score_from_sorted

    def poisoned(**kw):  # FAULT INJECTION, see the docstring
        analyzer_thread = threading.current_thread() is not threading.main_thread()
        if analyzer_thread and (kw["node"], kw["env"]) == ("n2", "kubernetes"):
            raise ZeroDivisionError("float division by zero")
        return real(**kw)

    monkeypatch.setattr(score_cache, "score_from_sorted", poisoned)  # the publications
    monkeypatch.setattr(scores, "score_from_sorted", poisoned)  # the test's full recompute (main thread: real)
    store = Store(tmp_path / "a.duckdb")
    bus = await Bus.connect(nats_url, "test")
    await bus.ensure_streams()
    stop = asyncio.Event()
    analyzer = Analyzer(config.load(config.AnalyzerSettings, nats_url=nats_url, analyzer_db=tmp_path / "a.duckdb"),
                        bus, store)
    caplog.set_level(logging.ERROR, logger="podtax.analyzer")
    await analyzer.handle_batch([_result(i, 20 * i) for i in range(8)])  # stored before start: put back, published
    task = asyncio.create_task(analyzer.publish_updates(stop))
    try:
        # said: the stored scores put back at start (through the cache: the first publication finds the key in the
        # state it was said in, and says nothing), then each publication that scored the key anew
        for wave, n, lines in ((range(0), 2, 1), (range(8, 16), 4, 2)):
            if wave:
                await analyzer.handle_batch([_result(i, 20 * i) for i in wave])
            deadline = time.monotonic() + 30
            while True:
                got, want = await _published(bus), _expected(tmp_path / "a.duckdb", ".kubernetes.n2.")
                said = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
                if got == want and len(said) == lines:
                    break
                assert time.monotonic() < deadline, f"published {got} != recomputed {want}; said {said}"
                await asyncio.sleep(0.2)
            assert sorted((doc["node"], doc["env"], doc["n"]) for doc in got.values()) == [
                ("n1", "host", n), ("n1", "kubernetes", n), ("n2", "host", n)]
            assert all("node=n2 env=kubernetes" in line and "ZeroDivisionError" in line for line in said), said
    finally:
        stop.set()
        await task
        await bus.close()
        store.close()


async def test_a_key_whose_statistics_raise_keeps_its_last_published_score(nats_url: str, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch,
                                                                           caplog: pytest.LogCaptureFixture) -> None:
    """r9 (s50): the sweep (at start, and after a deletion) took a key node_scores left out for one without a stored
    run: it deleted its score, saying 'whose runs are no longer stored', and when every key raised (a statistic's bug
    after an upgrade) it emptied the bucket. Here by FAULT INJECTION (score_from_sorted raising): the bucket keeps the
    key's last published score on both paths, as the publications do; a key of no stored run is still deleted."""
    from podtax import config
    from podtax_analyzer import score_cache, scores
    from podtax_analyzer.score_sweep import sweep
    from podtax_analyzer.service import Analyzer
    from podtax_analyzer.store import Store

    store = Store(tmp_path / "a.duckdb")
    bus = await Bus.connect(nats_url, "test")
    await bus.ensure_streams()
    analyzer = Analyzer(config.load(config.AnalyzerSettings, nats_url=nats_url, analyzer_db=tmp_path / "a.duckdb"),
                        bus, store)
    try:
        await analyzer.handle_batch([_result(i, 20 * i) for i in range(8)])
        kv = await bus.kv(subjects.SCORES_BUCKET)
        assert await analyzer._restore_scores(kv, said=False)  # no fault: every stored score published
        good = await _published(bus)
        assert good == _expected(tmp_path / "a.duckdb") and len(good) == 4
        doc = next(iter(good.values()))
        gone = subjects.score_key(doc["cluster"], doc["env"], "gone", doc["test"], doc["metric"], doc["params_key"])
        real = scores.score_from_sorted

        def one_raises(**kw):  # FAULT INJECTION, see the docstring
            if (kw["node"], kw["env"]) == ("n2", "kubernetes"):
                raise ZeroDivisionError("float division by zero")
            return real(**kw)

        def all_raise(**kw):  # FAULT INJECTION: every key's statistics raise
            raise ZeroDivisionError("float division by zero")

        caplog.set_level(logging.INFO, logger="podtax.analyzer")
        for fault in (one_raises, all_raise):
            monkeypatch.setattr(scores, "score_from_sorted", fault)  # sweep's own read (node_scores)
            monkeypatch.setattr(score_cache, "score_from_sorted", fault)  # ScoreCache.restore (start, deletion)
            await bus.kv_put_many(subjects.SCORES_BUCKET, [(gone, json.dumps(doc).encode())])
            caplog.clear()
            assert await analyzer._restore_scores(kv, said=False)  # at start
            assert await _published(bus) == good, fault.__name__
            deleted = [r.getMessage() for r in caplog.records if "no longer stored" in r.getMessage()]
            assert len(deleted) == 1 and "deleted 1 score(s)" in deleted[0] and gone in deleted[0], deleted
            assert await sweep(kv, store) == []  # sweep's own read (node_scores)
            assert await analyzer._sweep(kv) == []  # after a deletion (a reparse, a duplicate's runs replaced)
            assert await _published(bus) == good, fault.__name__
    finally:
        await bus.close()
        store.close()
