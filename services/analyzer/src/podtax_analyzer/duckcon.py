"""How the analyzer opens its DuckDB file: every connection it makes goes through `connect`.

DuckDB 2.0.1's compressed_materialization optimizer narrows a column to the range its statistics give it before
an ORDER BY or a join. Those statistics are wrong for an integer sum they call never NULL (a sum of a NOT NULL
value, or coalesce/ifnull/CASE around the sum) grouped over a LEFT JOIN whose right side they prove empty: the
sum is stored in a tiny integer and wraps (review r7: a cell's 240 s of CPU throttling read 0 once live raw logs
were stored and none imported). `coalesce(sum(x)::BIGINT, 0)` avoids it only while x may be NULL (a
`sum(x)::BIGINT` of a NOT NULL x still reads 0); without the optimizer every form reads right. It costs nothing
measurable here (bench/bench_comparisons.py --quick, see the analyzer README), so it is off on every connection.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

DISABLED_OPTIMIZERS = "compressed_materialization"


def guard(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Turn the optimizer off for `con`'s database (every connection and cursor to it in this process)."""
    con.execute(f"SET disabled_optimizers = '{DISABLED_OPTIMIZERS}'")
    return con


def connect(path: str | Path, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """duckdb.connect(path) with the optimizer DuckDB 2.0.1 gets wrong turned off (module docstring)."""
    con = duckdb.connect(str(path), read_only=read_only)
    try:
        return guard(con)
    except BaseException:
        con.close()
        raise
