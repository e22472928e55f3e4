"""`podtax reparse`: re-derive results from the stored raw logs with the current parsers."""

from __future__ import annotations

import json
from typing import Any

from podtax import events
from podtax.derive import derive

from podtax_analyzer.store import Store

BATCH = 1000


def _raw(row: dict[str, Any]) -> events.RawLog:
    run = events.RunSpec(run_id=row["run_id"], campaign=row["campaign"], cluster=row["cluster"], node=row["node"],
                         env=row["env"], test=row["test"], params=json.loads(row["params"]), attempt=row["attempt"],
                         sequence=row["sequence"] or 0)
    return events.RawLog(run=run, stdout=row["stdout"], stderr=row["stderr"], exit_code=row["exit_code"],
                         started_at=row["started_at"], ended_at=row["ended_at"], tool_version=row["tool_version"],
                         truncated=row["truncated"], timed_out=row["timed_out"],
                         provenance=events.Provenance.model_validate_json(row["provenance"]),
                         imported_from=row["imported_from"])


def _fingerprint(cur: Any, ids: list[str]) -> dict[str, Any]:
    cur.execute("""SELECT r.run_id, r.status, r.failure_reason, r.flags,
                          list((m.name, m.value) ORDER BY m.name) FILTER (WHERE m.name IS NOT NULL)
                   FROM runs r LEFT JOIN metrics m USING (run_id)
                   WHERE r.run_id IN (SELECT unnest($1::varchar[])) GROUP BY ALL""", [ids])
    return {row[0]: row[1:] for row in cur.fetchall()}


def reparse(store: Store, campaign: str | None = None) -> dict[str, int]:
    """Replace each stored run's outcome by what today's parsers derive; never duplicates a run."""
    cur = store.cursor()
    cur.execute("""SELECT l.*, coalesce(r.sequence, 0) AS sequence FROM raw_logs l LEFT JOIN runs r USING (run_id)
                   WHERE $1::varchar IS NULL OR l.campaign = $1 ORDER BY l.started_at""", [campaign])
    cols = [d[0] for d in cur.description]
    counts = {"logs": 0, "results": 0, "failures": 0, "changed": 0}
    while rows := cur.fetchmany(BATCH):
        outcomes = [derive(_raw(dict(zip(cols, row))), "podtax/reparse") for row in rows]
        ids = [o.data.run.run_id for o in outcomes]
        before = _fingerprint(store.cursor(), ids)
        store.replace_results(outcomes)
        after = _fingerprint(store.cursor(), ids)
        counts["logs"] += len(outcomes)
        counts["results"] += sum(isinstance(o, events.ResultV1) for o in outcomes)
        counts["failures"] += sum(isinstance(o, events.RunFailedV1) for o in outcomes)
        counts["changed"] += sum(before.get(i) != after.get(i) for i in ids)
    return counts
