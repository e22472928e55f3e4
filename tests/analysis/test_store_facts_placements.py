"""Host facts and placements as Store.write_batch stores them, in a real DuckDB file: one columnar INSERT per
table per batch (store_insert.insert), with the semantics of the row-by-row `INSERT ... ON CONFLICT DO NOTHING` it
replaced: an event id already stored keeps its row, the first of an id repeated within a batch wins, the JSON
columns hold json.dumps of the tool versions and of the candidates, times are stored with their zone (a time
without one read as UTC), and unicode, NUL and None fields come back as sent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from podtax import events
from podtax_analyzer.store import Store

T1 = datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)
T2 = datetime(2026, 3, 4, 11, 6, 7, 5, tzinfo=timezone(timedelta(hours=5, minutes=30)))  # 05:36:07.000005 UTC
T3 = datetime(2026, 3, 4, 5, 6, 9)  # without a zone: read as UTC
TOOLS = {"sysbench": "sysbench 1.0.20 \u201cLuaJIT\u201d", "fio": "fio-3.33"}


def _facts(event_id: str, node: str, at: datetime, **data: Any) -> events.HostFactsV1:
    d = {"node": node, "kernel": "6.1.0-ünï", "os": "Debian GNU/Linux 12", "cpu_model": "Intel® Xeon® 😀",
         "hw_threads": 4, "arch": "x86_64", "tool_versions": TOOLS, **data}
    e = events.host_facts(events.HostFacts(**d), "test")
    return e.model_copy(update={"id": event_id, "time": at})


def _placement(event_id: str, pod: str, at: datetime, **data: Any) -> events.PlacementMadeV1:
    d = {"namespace": "default", "pod": pod, "pod_uid": f"uid-{pod}", "node": "n1", "test": "sysbench-cpu",
         "candidates": [events.Candidate(node="n1", score=99.5), events.Candidate(node="ñ2", score=0)],
         "message": "placed on n1 ✓", **data}
    e = events.PlacementMadeV1(subject="podtax.placement.made", data=events.PlacementMade(**d))
    return e.model_copy(update={"id": event_id, "time": at})


def _rows(store: Store, table: str) -> list[tuple]:
    with store.cursor() as con:
        return con.execute(f"SELECT * FROM {table} ORDER BY event_id").fetchall()  # noqa: S608


def _utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_host_facts_keep_the_first_row_of_an_id_within_and_across_batches(store: Store) -> None:
    store.write_batch([_facts("f1", "n1", T1), _facts("f2", "n2", T2, tool_versions={}, cluster="lab-2"),
                       _facts("f1", "changed", T3, kernel="again"), _facts("f3", "n3", T3, hw_threads=128)])
    store.write_batch([_facts("f2", "changed", T1, os="again"), _facts("f4", "n4", T1),
                       _facts("f4", "changed", T2), _facts("f3", "changed", T1)])
    assert store.write_batch([_facts("f1", "n9", T1)]) == set()  # a redelivery changes nothing
    tools = '{"sysbench": "sysbench 1.0.20 \\u201cLuaJIT\\u201d", "fio": "fio-3.33"}'
    base = ("6.1.0-ünï", "Debian GNU/Linux 12", "Intel® Xeon® 😀")
    rows = _rows(store, "host_facts")
    assert [(r[0], r[1], r[2], r[3].astimezone(UTC), *r[4:]) for r in rows] == [
        ("f1", "local", "n1", _utc(2026, 3, 4, 5, 6, 7, 123456), *base, 4, "x86_64", tools),
        ("f2", "lab-2", "n2", _utc(2026, 3, 4, 5, 36, 7, 5), *base, 4, "x86_64", "{}"),
        ("f3", "local", "n3", _utc(2026, 3, 4, 5, 6, 9), *base, 128, "x86_64", tools),
        ("f4", "local", "n4", _utc(2026, 3, 4, 5, 6, 7, 123456), *base, 4, "x86_64", tools),
    ]


def test_placements_keep_the_first_row_of_an_id_within_and_across_batches(store: Store) -> None:
    store.write_batch([_placement("p1", "a", T1),
                       _placement("p2", "b", T2, node=None, test=None, candidates=[],
                                  message="no node fits: \x00 nul\ttab ñ"),
                       _placement("p1", "changed", T3, message="again"), _placement("p3", "c", T3)])
    store.write_batch([_placement("p2", "changed", T1, node="n9"), _placement("p4", "d", T1, node=None),
                       _placement("p4", "changed", T2)])
    store.write_batch([_placement("p3", "changed", T2)])
    cands = '[{"node": "n1", "score": 99.5}, {"node": "\\u00f12", "score": 0.0}]'
    rows = _rows(store, "placements")
    assert [(r[0], r[1].astimezone(UTC), *r[2:]) for r in rows] == [
        ("p1", _utc(2026, 3, 4, 5, 6, 7, 123456), "default", "a", "uid-a", "n1", "sysbench-cpu", cands,
         "placed on n1 ✓"),
        ("p2", _utc(2026, 3, 4, 5, 36, 7, 5), "default", "b", "uid-b", None, None, "[]",
         "no node fits: \x00 nul\ttab ñ"),
        ("p3", _utc(2026, 3, 4, 5, 6, 9), "default", "c", "uid-c", "n1", "sysbench-cpu", cands, "placed on n1 ✓"),
        ("p4", _utc(2026, 3, 4, 5, 6, 7, 123456), "default", "d", "uid-d", None, "sysbench-cpu", cands,
         "placed on n1 ✓"),
    ]


def test_facts_and_placements_beside_other_events_in_one_batch(store: Store) -> None:
    """A batch of both kinds, interleaved, and a column that is None in every row (node of every placement)."""
    store.write_batch([_placement("p1", "a", T1, node=None), _facts("f1", "n1", T3),
                       _placement("p2", "b", T2, node=None), _facts("f1", "changed", T1)])
    assert [(r[0], r[2], r[3].astimezone(UTC)) for r in _rows(store, "host_facts")] == [
        ("f1", "n1", _utc(2026, 3, 4, 5, 6, 9))]
    assert [(r[0], r[3], r[5]) for r in _rows(store, "placements")] == [("p1", "a", None), ("p2", "b", None)]
