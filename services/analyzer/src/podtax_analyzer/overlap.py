"""Runs whose time spans overlap on one node measured each other: they carry an OVERLAP flag.

The host agent and the runner never start two runs on a node at once; this is the second line of
defence (a crashed agent's orphan, two runners, a clock jump). Any two runs of one node (same
cluster and node name) whose [started_at, ended_at) spans share more than TOLERANCE, whatever their
side or campaign, both get the run flag ``OVERLAP: ...`` naming the other run. The tolerance absorbs
Kubernetes' container times, which have one-second precision: a pod started 0.3 s after a host run
ended may carry a start time 0.7 s before that end. Cells count such runs and the
OVERLAP cell flag withholds the verdict (flags.overlap); node scores ignore them (scores.py).

Called in the analyzer's write transaction with the run ids just stored, so the flags hold whatever
order results arrive in: a later run that overlaps an earlier one flags both.
"""

from __future__ import annotations

from collections.abc import Iterable

import duckdb

PREFIX = "OVERLAP"
TOLERANCE = "INTERVAL 1 SECOND"

# Runs overlapping the given ones (and the given ones themselves, when they overlap anything).
_AFFECTED = f"""
WITH n AS (SELECT run_id, cluster, node, started_at, ended_at FROM runs
           WHERE run_id IN (SELECT unnest($ids::varchar[])) AND started_at IS NOT NULL AND ended_at IS NOT NULL)
SELECT DISTINCT unnest([n.run_id, r.run_id]) AS run_id
FROM n JOIN runs r
  ON r.cluster = n.cluster AND r.node = n.node AND r.run_id <> n.run_id
 AND r.started_at + {TOLERANCE} < n.ended_at AND n.started_at + {TOLERANCE} < r.ended_at
WHERE r.started_at < $hi AND r.ended_at > $lo
"""
# The span the given runs cover: a run outside it cannot overlap any of them. As constants, these
# let DuckDB skip whole row groups of older runs (their min/max), instead of joining every run of
# the node each batch (a cost that grew with the history).
_SPAN = """SELECT min(started_at), max(ended_at) FROM runs
           WHERE run_id IN (SELECT unnest($ids::varchar[])) AND started_at IS NOT NULL AND ended_at IS NOT NULL"""

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


def mark_overlaps(con: duckdb.DuckDBPyConnection, run_ids: Iterable[str]) -> set[str]:
    """Flag every run that overlaps one of `run_ids` on its node (both sides); returns the flagged ids."""
    ids = sorted(set(run_ids))
    if not ids:
        return set()
    lo, hi = con.execute(_SPAN, {"ids": ids}).fetchone() or (None, None)
    if lo is None or hi is None:
        return set()
    affected = [row[0] for row in con.execute(_AFFECTED, {"ids": ids, "lo": lo, "hi": hi}).fetchall()]
    if affected:
        con.execute(_MARK, {"ids": affected})
    return set(affected)
