"""Run ids looked up in the analyzer's DuckDB file (store.py): a scan of the run_id column for a small table, the
key's index for a large one (lookup), and a batch's rows not stored yet (unseen, which makes inserts idempotent)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb

LOOKUP_CHUNK = 2000  # run ids a lookup names: DuckDB uses a key's index for at most 2,048 (index_scan_max_count)
SCAN_BELOW = 300_000  # rows: below this, scanning the run_id column is cheaper than naming the ids (see lookup)


def lookup(con: duckdb.DuckDBPyConnection, columns: str, table: str, run_ids: Sequence[str]) -> list[tuple[Any, ...]]:
    """`columns` of the rows of `table` whose run id is one of `run_ids`. DuckDB answers `IN (SELECT
    unnest(...))` by scanning the run_id column, a cost that grows with the history (~170 ms for 1,000 ids
    at 3,000,000 runs: bench_store_history.py); ids named in the query (`IN (?, ?, ...)`) are looked up in
    the key's index instead, at a fixed ~15 ms for 1,000 (binding them), which a scan beats below ~300,000
    rows (2-5 ms at 20,000-200,000). So: a scan for a small table, the index for a large one."""
    if con.execute(f"SELECT count(*) FROM {table}").fetchone()[0] < SCAN_BELOW:  # noqa: S608 - a table name
        return con.execute(f"SELECT {columns} FROM {table} WHERE run_id IN (SELECT unnest($1::varchar[]))",  # noqa: S608
                           [list(run_ids)]).fetchall()
    out: list[tuple[Any, ...]] = []
    for first in range(0, len(run_ids), LOOKUP_CHUNK):
        ids = run_ids[first:first + LOOKUP_CHUNK]
        out += con.execute(f"SELECT {columns} FROM {table} WHERE run_id IN ({', '.join('?' * len(ids))})",  # noqa: S608
                           list(ids)).fetchall()
    return out


def unseen(con: duckdb.DuckDBPyConnection, table: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows` whose run id is not in `table` yet, the first of each run id (an indexed lookup)."""
    if not rows:
        return rows
    first: dict[str, dict[str, Any]] = {}
    for row in rows:
        first.setdefault(row["run_id"], row)
    for (run_id,) in lookup(con, "run_id", table, list(first)):
        del first[run_id]
    return list(first.values())
