"""`podtax reparse`: re-derive results from the stored raw logs with the current parsers."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from podtax import events, phases
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


# What a run's row says of the tool and the machine it ran on (the tool's build and architecture, the pod's limits),
# apart from its outcome: a parser that now reads the build or the architecture changes these alone. parser_version
# is left out: every reparse by a newer parser changes it.
PROVENANCE = ("tool", "tool_version", "tool_build", "tool_arch", "qos_class", "cpu_limit", "nr_throttled",
              "throttled_usec", "image")


def _fingerprint(cur: Any, ids: list[str]) -> dict[str, tuple[Any, Any]]:
    """Each run's (outcome: status, failure reason, flags, metrics; its PROVENANCE columns)."""
    cur.execute(f"""SELECT r.run_id, r.status, r.failure_reason, r.flags,
                          list((m.name, m.value) ORDER BY m.name) FILTER (WHERE m.name IS NOT NULL),
                          {', '.join(f'r.{c}' for c in PROVENANCE)}
                   FROM runs r LEFT JOIN metrics m USING (run_id)
                   WHERE r.run_id IN (SELECT unnest($1::varchar[])) GROUP BY ALL""", [ids])
    return {row[0]: (row[1:5], row[5:]) for row in cur.fetchall()}


def _next_ids(store: Store, campaign: str | None, after: str, batch: int) -> list[str]:
    """The next batch of run ids (reads the run_id column only)."""
    cur = store.cursor()
    cur.execute("""SELECT run_id FROM raw_logs WHERE ($1::varchar IS NULL OR campaign = $1) AND run_id > $2
                   ORDER BY run_id LIMIT $3""", [campaign, after, batch])
    return [row[0] for row in cur.fetchall()]


def reparse(store: Store, campaign: str | None = None, progress: Callable[[dict[str, int]], None] | None = None,
            batch: int = BATCH) -> dict[str, int]:
    """Replace each stored run's outcome by what today's parsers derive; never duplicates a run. Counts the logs,
    results and failures derived, the runs `changed` (outcome or PROVENANCE) and of those the ones whose outcome
    is the same (`provenance`: only the tool's build, version or architecture, or the pod's limits, changed).

    Bounded memory: the logs are read batch by batch, keyed by run id (never the whole table at once)."""
    with store.vacuuming():  # replacing deletes rows: let checkpoints reclaim their space
        return _reparse(store, campaign, progress, batch)


def _reparse(store: Store, campaign: str | None, progress: Callable[[dict[str, int]], None] | None,
             batch: int) -> dict[str, int]:
    counts = {"logs": 0, "results": 0, "failures": 0, "changed": 0, "provenance": 0}
    after = ""
    while ids := _next_ids(store, campaign, after, batch):
        cur = store.cursor()
        cur.execute("""SELECT l.*, coalesce(r.sequence, 0) AS sequence FROM raw_logs l LEFT JOIN runs r USING (run_id)
                       WHERE l.run_id >= $1 AND l.run_id <= $2 AND ($3::varchar IS NULL OR l.campaign = $3)
                       ORDER BY l.run_id""", [ids[0], ids[-1], campaign])
        cols = [d[0] for d in cur.description]
        raws = [_raw(dict(zip(cols, row))) for row in cur.fetchall()]
        outcomes = [derive(raw, "podtax/reparse") for raw in raws]
        cur.close()
        after = ids[-1]
        ids = [o.data.run.run_id for o in outcomes]
        before = _fingerprint(store.cursor(), ids)
        # the per-object phases too: a run stored without them (an older analyzer, a timeline its parser then
        # refused) got metrics and no objects in the phase table (an audit)
        timelines = [raw for raw in raws if raw.run.test in phases.TEMPLATES]  # as phases_store.phase_rows picks
        store.replace_results(outcomes, timelines)
        after_fp = _fingerprint(store.cursor(), ids)
        counts["logs"] += len(outcomes)
        counts["results"] += sum(isinstance(o, events.ResultV1) for o in outcomes)
        counts["failures"] += sum(isinstance(o, events.RunFailedV1) for o in outcomes)
        counts["changed"] += sum(before.get(i) != after_fp.get(i) for i in ids)
        counts["provenance"] += sum(i in before and i in after_fp and before[i][0] == after_fp[i][0]
                                    and before[i][1] != after_fp[i][1] for i in ids)
        if progress is not None:
            progress(dict(counts))
    return counts
