"""The store's batched columnar inserts (store.py): one INSERT per table per batch, reading the batch's columns as
numpy object arrays registered as a view (DuckDB scans those natively, about 10x faster than bound Python lists)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import duckdb
import numpy as np


def _column(values: list[Any]) -> np.ndarray:
    """A 1-D object array of `values` as they are (np.array would turn a list of lists into 2-D)."""
    return np.fromiter(values, dtype=object, count=len(values))


def insert(con: duckdb.DuckDBPyConnection, table: str, columns: Sequence[str], types: Sequence[str],
           rows: Sequence[dict[str, Any]], conflict: str | None = "DO NOTHING") -> None:
    """One columnar INSERT of `rows`. `conflict=None` when the caller has checked that every key is
    new: DuckDB's ON CONFLICT costs ~20 µs a row, a lookup of the batch's keys far less."""
    if not rows:
        return
    # Within one batch the first row of a key wins, as a later redelivery would.
    key = columns[0] if table != "metrics" else None
    if key:
        seen: dict[Any, dict[str, Any]] = {}
        for row in rows:
            seen.setdefault(row[key], row)
        rows = list(seen.values())
    view = f"batch_{table}"  # the batch's columns, visible to this connection only
    con.register(view, {c: _column([row[c] for row in rows]) for c in columns})
    try:
        casts = ", ".join(f"CAST({c} AS {t})" for c, t in zip(columns, types))
        on_conflict = f" ON CONFLICT {conflict}" if conflict else ""
        con.execute(f"INSERT INTO {table} ({', '.join(columns)}) SELECT {casts} FROM {view}{on_conflict}")
    finally:
        # After a failed INSERT the transaction is aborted and unregister raises "Current transaction
        # is aborted", which would hide the real error (the reason a poison message is dead-lettered).
        with contextlib.suppress(duckdb.Error):
            con.unregister(view)
