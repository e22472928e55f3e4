"""Per-object phase latencies of control-plane runs (volume-churn, pod-startup), for distributions.

When the raw log of a control-plane run is stored, its timeline is read with the parser's own
functions and every (object, phase) latency becomes a row of the ``phases`` table, in the same
transaction. A timeline the parser refuses adds no row here (the parser service records why the
run failed); the raw log itself is always kept. Per-run metrics arrive as results, like any test's.
"""

from __future__ import annotations

import contextlib
from typing import Any

import duckdb
import numpy as np
from podtax import events
from podtax.parsers import ParseFailure
from podtax.parsers import timeline as tl
from podtax.phases import TEMPLATES
from podtax.provenance import split as split_provenance
from podtax.templates import params_key

COLUMNS = ("run_id", "campaign", "cluster", "node", "env", "backend", "test", "params_key", "object", "phase",
           "start_s", "latency_s")
TYPES = ("varchar",) * 10 + ("double", "double")


def phase_rows(log: events.RawLog) -> list[dict[str, Any]]:
    """Rows of the phases table for one raw log; none for other tests or a timeline the parser refuses."""
    run = log.run
    if run.test not in TEMPLATES:
        return []
    try:
        timeline = tl.read(split_provenance(log.stdout)[0])
    except (ParseFailure, ValueError):
        return []
    if timeline.template != run.test:
        return []
    base = {"run_id": run.run_id, "campaign": run.campaign, "cluster": run.cluster, "node": run.node,
            "env": run.env, "backend": timeline.backend, "test": run.test, "params_key": params_key(run.params)}
    rows, seen = [], set()
    for obj in timeline.objects:
        for p in timeline.phases:
            if p.start in obj.t and p.end in obj.t and (obj.name, p.name) not in seen:
                seen.add((obj.name, p.name))
                rows.append({**base, "object": obj.name, "phase": p.name, "start_s": obj.t[p.start],
                             "latency_s": obj.t[p.end] - obj.t[p.start]})
    return rows


def insert_phases(con: duckdb.DuckDBPyConnection, rows: list[dict[str, Any]]) -> None:
    """Insert rows in one statement; a redelivered raw log changes nothing (key run, object, phase)."""
    if not rows:
        return
    columns = {c: np.fromiter((r[c] for r in rows), dtype=object, count=len(rows)) for c in COLUMNS}
    con.register("batch_phases", columns)
    try:
        casts = ", ".join(f"CAST({c} AS {t})" for c, t in zip(COLUMNS, TYPES, strict=True))
        con.execute(f"INSERT INTO phases ({', '.join(COLUMNS)}) SELECT {casts} FROM batch_phases "
                    "ON CONFLICT DO NOTHING")
    finally:
        with contextlib.suppress(duckdb.Error):  # an aborted transaction refuses it; the INSERT's error counts
            con.unregister("batch_phases")
