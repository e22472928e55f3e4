"""A node's score subject at its limit of messages (PODTAX_NATS_STREAM_MAX_MSGS_PER_SUBJECT; review r3: one score
event per (test, metric, params) and new result, so a busy node's can reach the 1,000,000 default within the
stream's 30 days). Before, the refusal failed the whole publication: its runs went back to the analyzer's pending
set, published again every cycle for ever (the set growing with each new result), and the events NATS had taken
(the other nodes' scores) stored again each time under new ids. Now the refused score events are said and dropped
(the scores are in the scores bucket, what the scheduler reads) and every event has an id made of its content, so
one sent again is stored once. Real nats-server, the analyzer's publication in-process on a real DuckDB file."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from podtax import subjects
from podtax.bus import Bus
from podtax.config import AnalyzerSettings
from podtax_analyzer.score_cache import ScoreCache
from podtax_analyzer.service import Analyzer
from podtax_analyzer.store import Store

from tests.integration.test_score_publication import _result


async def test_a_score_subject_at_its_limit_drops_its_events_and_stores_no_other_twice(
        nats_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    bus = await Bus.connect(nats_url, "test/analyzer")
    settings = AnalyzerSettings(analyzer_db=tmp_path / "a.duckdb")
    store = Store(settings.analyzer_db)
    try:
        await bus.ensure_streams(max_bytes=10_000_000, max_msgs_per_subject=2)
        await bus.kv(subjects.SCORES_BUCKET)
        full = subjects.join(subjects.SCORE_UPDATED, "host", "n1")
        for _ in range(2):
            await bus.js.publish(full, b"{}")
        analyzer = Analyzer(settings, bus, store)
        await analyzer.handle_batch([_result(i, 20 * i) for i in range(4)])  # n1, n2 x host, kubernetes
        runs, cache = set(analyzer.pending), ScoreCache(settings.analyzer_score_cache_values)
        with caplog.at_level(logging.ERROR):
            await analyzer._publish(runs, cache)  # before: raised (Unacked), and its runs were published again
            await analyzer._publish(runs, cache)  # as the loop did each cycle: nothing stored twice
        info = await bus.js.stream_info(subjects.STREAM, subjects_filter=f"{subjects.SCORE_UPDATED}.>")
        assert info.state.subjects == {full: 2, **{subjects.join(subjects.SCORE_UPDATED, env, node): 1
                                                    for env, node in (("host", "n2"), ("kubernetes", "n1"),
                                                                      ("kubernetes", "n2"))}}
        said = [r.getMessage() for r in caplog.records if "NATS refuses score events" in r.getMessage()]
        assert len(said) == 1, said  # said once, not each cycle
        kv = await bus.kv(subjects.SCORES_BUCKET)
        assert len(await Bus.kv_keys(kv)) == 4  # every score is in the bucket, n1's host one too
    finally:
        store.close()
        await bus.close()
