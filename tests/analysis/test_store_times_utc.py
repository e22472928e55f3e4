"""Times of results, failures and raw logs as Store.write_batch stores them, in a real DuckDB file: every time in
UTC, a time without a zone (events.decode accepts one: another publisher, an import, an older CLI) read as UTC,
whatever DuckDB's session TimeZone (the machine's zone). A batch mixing times with and without a zone raised
'ConversionException: Could not convert datetime to TIMESTAMP WITH TIME ZONE' for the whole batch (the analyzer
then split it down to single events), and a time without one alone was read in the machine's zone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from podtax import events
from podtax_analyzer.store import Store

IST = timezone(timedelta(hours=5, minutes=30))


def _run(run_id: str, node: str) -> events.RunSpec:
    return events.RunSpec(run_id=run_id, campaign="c", node=node, env="host", test="sysbench-cpu",
                          params={"threads": 1})


def _arrived(e: events.Envelope) -> Any:
    """`e` as the analyzer receives it: encoded, then decoded (a time without a zone stays without one)."""
    return events.decode(events.encode(e))


def _result(run_id: str, node: str, start: datetime, end: datetime) -> Any:
    return _arrived(events.result(events.Result(
        run=_run(run_id, node), tool="sysbench", tool_version="1.0.20", parser_version="1",
        metrics=[events.Metric(name="eps", value=1.0, unit="events/s", higher_is_better=True)],
        started_at=start, ended_at=end), "test"))


def _failure(run_id: str, node: str, start: datetime | None, end: datetime | None) -> Any:
    return _arrived(events.run_failed(events.RunFailed(run=_run(run_id, node), stage="agent", reason="r",
                                                       detail="d", started_at=start, ended_at=end), "test"))


def _raw(run_id: str, node: str, start: datetime, end: datetime) -> Any:
    return _arrived(events.raw_log(events.RawLog(run=_run(run_id, node), stdout="out", exit_code=0,
                                                 started_at=start, ended_at=end), "test"))


def _times(store: Store, table: str) -> list[tuple[Any, ...]]:
    with store.cursor() as con:
        rows = con.execute(f"SELECT run_id, started_at, ended_at FROM {table} ORDER BY run_id").fetchall()  # noqa: S608
    return [(r, s and s.astimezone(UTC), e and e.astimezone(UTC)) for r, s, e in rows]


def _utc(hour: int, minute: int, second: int = 0, micro: int = 0) -> datetime:
    return datetime(2026, 3, 4, hour, minute, second, micro, tzinfo=UTC)


def test_a_batch_mixing_times_with_and_without_a_zone_stores_each_as_its_utc_instant(store: Store) -> None:
    naive = datetime(2026, 3, 4, 6, 0, 0, 250000)
    assert _arrived(events.result(events.Result(
        run=_run("x", "n"), tool="t", tool_version=None, parser_version="1", started_at=naive, ended_at=naive,
        metrics=[events.Metric(name="m", value=1, unit="u", higher_is_better=True)]), "t")).data.started_at == naive
    store.write_batch([
        _result("r-aware", "n1", datetime(2026, 3, 4, 11, 0, tzinfo=IST), datetime(2026, 3, 4, 5, 31, tzinfo=UTC)),
        _result("r-naive", "n2", naive, datetime(2026, 3, 4, 6, 1)),
        _result("r-mixed", "n3", datetime(2026, 3, 4, 6, 30), datetime(2026, 3, 4, 12, 1, tzinfo=IST)),
        _failure("f-naive", "n4", datetime(2026, 3, 4, 7, 0), None),
        _failure("f-aware", "n5", datetime(2026, 3, 4, 12, 30, tzinfo=IST), datetime(2026, 3, 4, 7, 1, tzinfo=UTC)),
        _failure("f-none", "n6", None, None),
        _raw("r-aware", "n1", datetime(2026, 3, 4, 11, 0, tzinfo=IST), datetime(2026, 3, 4, 5, 31, tzinfo=UTC)),
        _raw("r-naive", "n2", naive, datetime(2026, 3, 4, 6, 1)),
    ])
    assert _times(store, "runs") == [
        ("f-aware", _utc(7, 0), _utc(7, 1)),
        ("f-naive", _utc(7, 0), None),
        ("f-none", None, None),
        ("r-aware", _utc(5, 30), _utc(5, 31)),
        ("r-mixed", _utc(6, 30), _utc(6, 31)),
        ("r-naive", _utc(6, 0, 0, 250000), _utc(6, 1)),
    ]
    assert _times(store, "raw_logs") == [("r-aware", _utc(5, 30), _utc(5, 31)),
                                         ("r-naive", _utc(6, 0, 0, 250000), _utc(6, 1))]


def test_a_time_without_a_zone_is_utc_whatever_the_machine_s_zone(store: Store) -> None:
    """DuckDB's session TimeZone is the machine's zone (here set as DuckDB would take it on a machine in India): a
    time without a zone was read in it, 5:30 h off, and a run overlapping another on its node was not flagged."""
    with store.cursor() as con:
        con.execute("SET GLOBAL TimeZone = 'Asia/Kolkata'")
    store.write_batch([_result("a", "n1", datetime(2026, 3, 4, 11, 0, tzinfo=IST), _utc(5, 31))])
    store.write_batch([_result("b", "n1", datetime(2026, 3, 4, 5, 30, 20), datetime(2026, 3, 4, 5, 32)),
                       _raw("b", "n1", datetime(2026, 3, 4, 5, 30, 20), datetime(2026, 3, 4, 5, 32)),
                       _failure("f", "n2", datetime(2026, 3, 4, 8, 0), datetime(2026, 3, 4, 8, 1))])
    assert _times(store, "runs") == [("a", _utc(5, 30), _utc(5, 31)), ("b", _utc(5, 30, 20), _utc(5, 32)),
                                     ("f", _utc(8, 0), _utc(8, 1))]
    assert _times(store, "raw_logs") == [("b", _utc(5, 30, 20), _utc(5, 32))]
    with store.cursor() as con:
        flags = dict(con.execute("SELECT run_id, flags FROM runs WHERE status = 'ok'").fetchall())
    assert flags == {"a": ["OVERLAP: ran at the same time as another run on node n1: run b (host, campaign c)"],
                     "b": ["OVERLAP: ran at the same time as another run on node n1: run a (host, campaign c)"]}
