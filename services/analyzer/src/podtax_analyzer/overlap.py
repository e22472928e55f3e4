"""Runs whose time spans overlap on one node measured each other: they carry an OVERLAP flag.

The host agent and the runner never start two runs on a node at once; this is the second line of
defence (a crashed agent's orphan, two runners, a clock jump). Any two runs of one node (same
cluster and node name) whose [started_at, ended_at) spans share more than TOLERANCE, whatever their
side or campaign, both get the run flag ``OVERLAP: ...`` naming the other run. The tolerance absorbs
Kubernetes' container times, which have one-second precision: a pod started 0.3 s after a host run
ended may carry a start time 0.7 s before that end. Cells count such runs and the
OVERLAP cell flag withholds the verdict (flags.overlap); node scores ignore them (scores.py).

Called in the analyzer's write transaction with the rows just stored, so the flags hold whatever
order results arrive in: a later run that overlaps an earlier one flags both. Their spans are read from
those rows, not from the table: selecting them by id read the whole run_id column at every batch, whose
blocks DuckDB kept (+6 MB at 90,000 runs, growing with the history).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import duckdb
import numpy as np

from podtax_analyzer.store_lookup import lookup

PREFIX = "OVERLAP"
TOLERANCE = "INTERVAL 1 SECOND"

SPAN_COLUMNS = ("run_id", "cluster", "node", "started_at", "ended_at")
# Runs overlapping the given ones (and the given ones themselves, when they overlap anything).
_AFFECTED = f"""
WITH n AS (SELECT run_id, cluster, node, CAST(started_at AS timestamptz) AS started_at,
                  CAST(ended_at AS timestamptz) AS ended_at FROM overlap_spans)
SELECT DISTINCT unnest([n.run_id, r.run_id]) AS run_id
FROM n JOIN runs r
  ON r.cluster = n.cluster AND r.node = n.node AND r.run_id <> n.run_id
 AND r.started_at + {TOLERANCE} < n.ended_at AND n.started_at + {TOLERANCE} < r.ended_at
WHERE r.started_at < $hi AND r.ended_at > $lo
"""
# $lo and $hi: the span the given runs cover, a run outside it cannot overlap any of them. As constants,
# these let DuckDB skip whole row groups of older runs (their min/max), instead of joining every run of
# the node each batch (a cost that grew with the history).

# For each affected run: how many runs it overlaps and one of them (the earliest), as a flag text.
_MARK = f"""
UPDATE runs SET flags = list_append(list_filter(runs.flags, lambda f: NOT starts_with(f, 'OVERLAP')), o.msg)
FROM (
    SELECT a.run_id,
           'OVERLAP: ran at the same time as ' ||
           CASE WHEN count(*) > 1 THEN count(*)::varchar || ' other runs on node ' || any_value(a.node) || ', e.g. '
                ELSE 'another run on node ' || any_value(a.node) || ': ' END ||
           'run ' || arg_min(r.run_id, (r.started_at, r.run_id)) ||
           ' (' || arg_min(r.env, (r.started_at, r.run_id)) || ', campaign ' ||
           arg_min(r.campaign, (r.started_at, r.run_id)) || ')' AS msg
    FROM runs a JOIN runs r
      ON r.cluster = a.cluster AND r.node = a.node AND r.run_id <> a.run_id
     AND r.started_at + {TOLERANCE} < a.ended_at AND a.started_at + {TOLERANCE} < r.ended_at
    WHERE a.run_id IN (SELECT unnest($ids::varchar[]))
    GROUP BY a.run_id
) o
WHERE runs.run_id = o.run_id
"""


_UNMARK = """UPDATE runs SET flags = list_filter(flags, lambda f: NOT starts_with(f, 'OVERLAP'))
WHERE run_id IN (SELECT unnest($ids::varchar[]))"""


def _affected(con: duckdb.DuckDBPyConnection, spans: Sequence[Mapping[str, Any]]) -> set[str]:
    """Runs overlapping one of `spans` (rows with SPAN_COLUMNS), and those of `spans` that overlap a run."""
    spans = [r for r in spans if r["started_at"] is not None and r["ended_at"] is not None]
    if not spans:
        return set()
    lo, hi = min(r["started_at"] for r in spans), max(r["ended_at"] for r in spans)
    con.register("overlap_spans", {c: np.array([r[c] for r in spans], dtype=object) for c in SPAN_COLUMNS})
    try:
        return {row[0] for row in con.execute(_AFFECTED, {"lo": lo, "hi": hi}).fetchall()}
    finally:
        con.unregister("overlap_spans")


def _spans(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> list[dict[str, Any]]:
    return [dict(zip(SPAN_COLUMNS, row, strict=True)) for row in lookup(con, ", ".join(SPAN_COLUMNS), "runs", run_ids)]


def mark_overlaps(con: duckdb.DuckDBPyConnection, runs: Sequence[Mapping[str, Any]]) -> set[str]:
    """Flag every run that overlaps one of `runs` (rows just stored, with SPAN_COLUMNS) on its node (both
    sides); returns the flagged ids."""
    affected = _affected(con, runs)
    if affected:
        con.execute(_MARK, {"ids": list(affected)})
    return affected


def overlapping(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> tuple[set[str], set[str]]:
    """Of `run_ids`, those stored in runs; and the other stored runs that overlap them (to `remark` once those are
    deleted: their OVERLAP flag may name one)."""
    spans = _spans(con, run_ids)
    stored = {r["run_id"] for r in spans}
    return stored, _affected(con, spans) - stored


def remark(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str] | set[str]) -> None:
    """Flag `run_ids` afresh after runs they overlapped were deleted: OVERLAP only where they still overlap a run."""
    ids = list(run_ids)
    if ids:
        con.execute(_UNMARK, {"ids": ids})
        mark_overlaps(con, _spans(con, ids))
