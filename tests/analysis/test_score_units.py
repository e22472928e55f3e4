"""Node scores over runs that gave a metric in two units (review hR #8): a parser that changed a metric's unit
(the tool build unchanged) gave one score whose median mixed us and ms, unflagged, so the scheduler ranked nodes by
it. Such a score is now CONFOUNDED (scoring.IGNORE_FLAGS drops it), from the full recompute (scores.node_scores)
and from the service's incremental cache, whether it meets the second unit when loading a key or merging new runs.
Real result events in a real DuckDB file."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from analysis_synth import result_event
from podtax_analyzer.score_cache import ScoreCache
from podtax_analyzer.scores import node_scores

T0 = datetime(2026, 1, 5, 8, tzinfo=UTC)


def _runs(first: int, unit: str, scale: float, count: int = 8) -> list:
    return [result_event(f"r{i}", "c", "n1", "host", (104.0 + i % 3) * scale, T0 + timedelta(minutes=i),
                         test="fio", params={"rw": "randread"}, metric="read_lat_mean", unit=unit,
                         higher_is_better=False, tool="fio", tool_version="fio-3.33")
            for i in range(first, first + count)]


def test_a_score_over_two_units_is_confounded(store):
    cache = ScoreCache()
    store.write_batch(_runs(0, "us", 1.0))
    (first,) = cache.update(store, {f"r{i}" for i in range(8)})
    assert first.flags == []  # one unit: a score the scheduler uses
    store.write_batch(_runs(8, "ms", 0.001, count=2))
    new = {"r8", "r9"}
    (merged,) = cache.update(store, new)  # the second unit met while merging new runs
    (loaded,) = ScoreCache().update(store, new)  # ... and while loading the key
    (full,) = node_scores(store.cursor())
    assert merged == loaded == full
    # only CONFOUNDED: BIMODAL was also said of 0.1 (ms) among 104s (us), two "modes" of one unit change
    assert full.flags == ["CONFOUNDED"] and full.n == 10, full.flags


def _said(first: int, hib: bool, count: int = 8) -> list:
    return [result_event(f"d{i}", "c", "n2", "host", 900.0 + i % 3, T0 + timedelta(minutes=i), test="fio",
                         params={"rw": "randread"}, metric="read_iops", unit="IOPS", higher_is_better=hib,
                         tool="fio", tool_version="fio-3.33")
            for i in range(first, first + count)]


def test_a_score_whose_runs_disagree_on_the_direction_is_confounded(store):
    """Runs that said higher is better and runs that said lower (a producer that changed it): the score's
    higher_is_better was their bool_or, so the scheduler ranked nodes by a direction half the runs deny."""
    cache = ScoreCache()
    store.write_batch(_said(0, True))
    (first,) = cache.update(store, {f"d{i}" for i in range(8)})
    assert first.flags == []
    store.write_batch(_said(8, False, count=2))
    new = {"d8", "d9"}
    (merged,) = cache.update(store, new)  # met while merging new runs
    (loaded,) = ScoreCache().update(store, new)  # ... and while loading the key
    (full,) = [s for s in node_scores(store.cursor()) if s.node == "n2"]
    assert merged == loaded == full
    assert full.flags == ["CONFOUNDED"] and full.n == 10, full.flags
