"""The analyzer's metrics table has one row per run and metric name, in a real DuckDB file, without an
index to enforce it: a duplicate in a batch, a redelivery, a result after a recorded failure, a
repeated name inside one result and a reparse all leave exactly one row each."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax import events
from podtax_analyzer.store import Store


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "podtax.duckdb")
    yield s
    s.close()


def _run(i: int) -> events.RunSpec:
    return events.RunSpec(run_id=f"m-{i}", campaign="c", node="n1", env="host", test="sysbench-cpu",
                          params={"threads": 1})


def _result(i: int, *values: tuple[str, float]) -> events.ResultV1:
    now = events.now()
    metrics = [events.Metric(name=n, value=v, unit="events/s", higher_is_better=True) for n, v in values]
    return events.result(events.Result(run=_run(i), tool="sysbench", tool_version="1.0.20", parser_version="1",
                                       metrics=metrics, started_at=now, ended_at=now), "test")


def _rows(store: Store) -> list[tuple[str, str, float]]:
    return store.cursor().execute("SELECT run_id, name, value FROM metrics ORDER BY ALL").fetchall()


def test_duplicates_and_redeliveries_keep_one_row_per_metric(store: Store) -> None:
    first, again = _result(1, ("eps", 10.0), ("lat", 2.0)), _result(1, ("eps", 99.0), ("lat", 99.0))
    assert store.write_batch([first, again]) == {"m-1"}  # the first result of a run wins, as before
    assert store.write_batch([first]) == set()  # a redelivery is a no-op
    assert _rows(store) == [("m-1", "eps", 10.0), ("m-1", "lat", 2.0)]


def test_a_repeated_name_in_one_result_keeps_its_first_value(store: Store) -> None:
    store.write_batch([_result(2, ("eps", 5.0), ("eps", 7.0))])
    assert _rows(store) == [("m-2", "eps", 5.0)]


def test_a_result_after_a_failure_and_a_reparse_replace_rows(store: Store) -> None:
    now = events.now()
    failed = events.run_failed(events.RunFailed(run=_run(3), stage="parser", reason="truncated", detail="cut",
                                                started_at=now, ended_at=now), "test")
    store.write_batch([failed])
    assert store.write_batch([_result(3, ("eps", 1.0))]) == {"m-3"}
    store.replace_results([_result(3, ("eps", 2.0), ("lat", 3.0))])
    store.replace_results([_result(3, ("eps", 4.0))])
    assert _rows(store) == [("m-3", "eps", 4.0)]
    assert store.cursor().execute("SELECT status FROM runs WHERE run_id = 'm-3'").fetchall() == [("ok",)]


def test_a_batch_larger_than_one_lookup_is_still_idempotent(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run ids of a long history are looked up in chunks (store_lookup.LOOKUP_CHUNK, DuckDB's index limit): every
    chunk counts; a short one scans, and both ways find the same rows."""
    from podtax_analyzer import store_lookup as store_module

    monkeypatch.setattr(store_module, "LOOKUP_CHUNK", 7)
    monkeypatch.setattr(store_module, "SCAN_BELOW", 0)  # the index lookup, as for a long history
    batch = [_result(i, ("eps", float(i))) for i in range(30)]
    assert store.write_batch(batch[:12]) == {f"m-{i}" for i in range(12)}
    assert store.write_batch(batch) == {f"m-{i}" for i in range(12, 30)}  # the first 12 are known
    assert store.write_batch(batch) == set()
    assert len(_rows(store)) == 30
    ids = [f"m-{i}" for i in range(40)]
    assert len(store_module.lookup(store.cursor(), "run_id", "runs", ids)) == 30
    monkeypatch.setattr(store_module, "SCAN_BELOW", 10**9)
    assert sorted(store_module.lookup(store.cursor(), "run_id", "runs", ids)) == [(f"m-{i}",) for i in sorted(
        range(30), key=lambda i: f"m-{i}")]
