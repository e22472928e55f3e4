"""The tables that grow with every run have no key (schema.sql): DuckDB holds a key's index (ART) in
memory whole, ~9.5 MB per 100,000 run ids, and refused to store ("could not allocate block") once the
indexes filled the analyzer's memory limit. Rows stay unique because a batch's run ids are looked up
first. A file created with the keys (before) keeps them and still takes redeliveries."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax import events
from podtax_analyzer.store import Store

from tests.analysis.test_store_metrics import _result

GROWING = ("raw_logs", "runs", "metrics", "phases")


def _raw(i: int) -> events.RawLogV1:
    now = events.now()
    run = events.RunSpec(run_id=f"m-{i}", campaign="c", node="n1", env="host", test="sysbench-cpu",
                         params={"threads": 1})
    return events.raw_log(events.RawLog(run=run, stdout="x", stderr="", exit_code=0, started_at=now, ended_at=now,
                                        tool_version="1.0.20"), "test")


def _failed(i: int) -> events.RunFailedV1:
    run = events.RunSpec(run_id=f"m-{i}", campaign="c", node="n1", env="host", test="sysbench-cpu",
                         params={"threads": 1})
    return events.run_failed(events.RunFailed(run=run, stage="agent", reason="timeout", detail="slow"), "test")


def _counts(store: Store) -> dict[str, int]:
    con = store.cursor()
    return {t: con.execute(f"SELECT count(*), count(DISTINCT run_id) FROM {t}").fetchone()[0]  # noqa: S608
            for t in ("raw_logs", "runs")}


def _redeliver(store: Store) -> None:
    batch = [_raw(1), _raw(1), _result(1, ("eps", 1.0)), _failed(1), _failed(2), _raw(2)]
    store.write_batch(batch)
    store.write_batch(batch)  # a redelivery
    store.write_batch([_failed(2), _result(2, ("eps", 2.0)), _raw(2)])  # a result replaces run 2's failure
    store.write_batch([_failed(2)])  # a late failure does not replace it back


@pytest.mark.parametrize("keys", [False, True], ids=["new file", "file created with keys"])
def test_rows_stay_unique_with_or_without_keys(tmp_path: Path, keys: bool) -> None:
    path = tmp_path / "podtax.duckdb"
    if keys:
        s = Store(path)
        for table in ("raw_logs", "runs"):  # re-created as older files have them: run_id PRIMARY KEY
            cols = s.cursor().execute("SELECT column_name, data_type FROM information_schema.columns "
                                      "WHERE table_name = ? ORDER BY ordinal_position", [table]).fetchall()
            s.cursor().execute(f"DROP TABLE {table}")
            defs = ", ".join(f"{c} {t}{' PRIMARY KEY' if c == 'run_id' else ''}" for c, t in cols)
            s.cursor().execute(f"CREATE TABLE {table} ({defs})")
        s.close()
    store = Store(path)
    try:
        _redeliver(store)
        assert _counts(store) == {"raw_logs": 2, "runs": 2}
        con = store.cursor()
        assert con.execute("SELECT run_id, status FROM runs ORDER BY 1").fetchall() == [("m-1", "ok"), ("m-2", "ok")]
        assert con.execute("SELECT run_id, value FROM metrics ORDER BY 1").fetchall() == [("m-1", 1.0), ("m-2", 2.0)]
        keyed = {t for (t,) in con.execute("SELECT table_name FROM duckdb_constraints() WHERE constraint_type IN "
                                           "('PRIMARY KEY', 'UNIQUE')").fetchall()}
        assert keyed & set(GROWING) == ({"raw_logs", "runs"} if keys else set())
    finally:
        store.close()
