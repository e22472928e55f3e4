"""Imported runs a database holds twice already, and taking them once (`podtax imports-twice`).

Since 65f442e the analyzer drops an imported raw log that is the same capture as a stored one (store_imports.py),
but a database that imported one manifest under two podtax generations before then (6de8b23 to 7daa8f2: the node
`Node-1` and `node-1`, two run ids) holds both runs: the campaign had a cell for each spelling, the capture counted
on two nodes, and the scheduler ranked node-1 by the copy; so does a database that imported the same logs again under
other file names before 287d2dc. Nothing rewrites them unasked: `find` lists them with both files (the rule
store_imports applies on arrival, CAPTURE: same campaign, env, test, params, node in any case, start time and log
text, whatever the file's name: two runs of one manifest that logged the same text at one date-only start, which
287d2dc's parent stored apart, are listed too, so a user checks both files before `drop`), `drop`
removes the others' rows (runs, metrics, phases, and their raw logs, which are the
kept run's byte for byte, or but for CRLF line ends) and records each in imported_duplicates with the run kept, so a
redelivery stays dropped.
The copy kept is the one spelled in lowercase (the Kubernetes node's name, which the scheduler reads, and the one the
current importer stores), else the first stored, else the least run id: one rule for the host and the pod copies of a
manifest, so a cell keeps both sides (the least run id alone kept node-1's host run and Node-1's pod run: two cells
with one side each). A copy dropped gives its outcome (runs row, metrics) to the run kept when that has none, or a
failure where the copy has a result: a group never ends with fewer results than it had."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb
from podtax.capture_text import capture_sql
from podtax.imports_counted import counted

from podtax_analyzer.overlap import overlapping, remark

# What makes two imported raw logs one capture (store_imports drops a newcomer by it too), beside the node in any case
# (lower(node)), the start time and the log (stdout and stderr, byte for byte but CRLF as LF: podtax.capture_text).
# test and params_key are in it: a failed sysbench-cpu and a failed sysbench-memory run can print the same line at one
# (date-only) start.
CAPTURE = ("campaign", "env", "test", "params_key")
_KEY = f"{', '.join(CAPTURE)}, lower(node), started_at"
_IMPORTED = "imported_from IS NOT NULL AND ($1::varchar IS NULL OR campaign = $1)"
# The window on the texts runs only over the rows whose key and text hashes another row shares: a window partitioned
# by the texts themselves copies every imported log, CRLF-normalised, into it (r3's bench, 50,000 logs of 8 KB: 2.95 s
# against 1.65 s partitioned by the raw columns); the hashes are 8 bytes a row, and the exact window makes the pairs
# (0.18 s there, against 0.63 s by the raw columns and 1.22 s by the texts, measured together).
_TWICE = f"""SELECT run_id, kept_run_id, campaign, node, kept_node, env, imported_from, kept_imported_from FROM (
    SELECT run_id, campaign, node, env, imported_from, first(run_id) OVER capture AS kept_run_id,
           first(node) OVER capture AS kept_node, first(imported_from) OVER capture AS kept_imported_from
    FROM raw_logs WHERE {_IMPORTED} AND run_id IN (
        SELECT run_id FROM raw_logs WHERE {_IMPORTED}
        QUALIFY count(*) OVER (PARTITION BY {_KEY}, hash({capture_sql('stdout')}), hash({capture_sql('stderr')})) > 1)
    WINDOW capture AS (PARTITION BY {_KEY}, {capture_sql('stdout')}, {capture_sql('stderr')}
                       ORDER BY node <> lower(node), received_at, run_id
                       ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING))
    WHERE run_id <> kept_run_id ORDER BY campaign, kept_run_id, run_id"""
COLUMNS = ("run_id", "kept_run_id", "campaign", "node", "kept_node", "env", "imported_from", "kept_imported_from")


def find(con: duckdb.DuckDBPyConnection, campaign: str | None = None) -> list[dict[str, Any]]:
    """The stored imported runs that are another stored run's capture (COLUMNS), of `campaign` or of all."""
    return [dict(zip(COLUMNS, row, strict=True)) for row in con.execute(_TWICE, [campaign]).fetchall()]


# imported raw logs of one campaign sharing a capture's key but the texts: a cheap look before `find` reads the logs
_MAYBE = f"""SELECT count(*) FROM (SELECT 1 FROM raw_logs WHERE campaign = $1 AND imported_from IS NOT NULL
    GROUP BY {_KEY} HAVING count(*) > 1)"""


def warning(con: duckdb.DuckDBPyConnection, campaign: str) -> str | None:
    """The campaign report's warning when it holds imported runs twice, else None."""
    maybe = con.execute(_MAYBE, [campaign]).fetchone()
    twice = find(con, campaign) if maybe and maybe[0] else []
    if not twice:
        return None
    one, how = twice[0], counted(twice)
    if all(t["node"] != t["kept_node"] for t in twice):
        why = f"under node {one['node']} and {one['kept_node']}"
    elif all(t["node"] == t["kept_node"] for t in twice):
        why = "twice under that node" if how.startswith("counted twice on node ") else "twice under each of them"
    else:
        why = "under two spellings of a node, or twice under one"
    where = f"{how}: an older podtax stored the same capture {why}"
    return (f"{len(twice)} imported run(s) of this campaign are stored twice, {where} (run {one['run_id']}, file "
            f"{one['imported_from']}, is {one['kept_run_id']}, file {one['kept_imported_from']}), or two runs of one "
            f"manifest logged the same text at one start: check both files before --apply; `podtax imports-twice "
            f"--campaign {campaign}` lists them, and with --apply takes each once")


def drop(con: duckdb.DuckDBPyConnection, twice: list[dict[str, Any]], now: datetime) -> set[str]:
    """Delete the rows of the runs `twice` lists (find's), record them in imported_duplicates, and flag afresh the
    runs they overlapped; each row of `twice` gets `moved`: whether its outcome went to the run kept. Returns the run
    ids whose scores change (the kept and the re-flagged ones)."""
    ids = [t["run_id"] for t in twice]
    if not ids:
        return set()
    con.executemany("INSERT INTO imported_duplicates VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                    [[t["run_id"], t["kept_run_id"], now] for t in twice])
    _, near = overlapping(con, ids)
    for t in twice:
        t["moved"] = move_outcome(con, t)
    moved = {t["kept_run_id"] for t in twice if t["moved"]}
    for table in ("metrics", "phases", "runs", "raw_logs"):
        con.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT unnest($1::varchar[]))", [ids])
    remark(con, near | moved)
    return near | {t["kept_run_id"] for t in twice}


_OUTCOME = "SELECT status FROM runs WHERE run_id = ?"


def move_outcome(con: duckdb.DuckDBPyConnection, t: dict[str, Any]) -> bool:
    """Give the kept run the dropped copy's outcome (runs row, metrics) when it has none, or a failure where the copy
    has a result: the copy kept is chosen by the node's spelling, and the only result of a capture may be the other
    copy's (its parse failed or its result was lost); the logs are the same text, so it is the kept log's result.
    True when moved."""
    kept, copy = (con.execute(_OUTCOME, [r]).fetchone() for r in (t["kept_run_id"], t["run_id"]))
    if copy is None or (kept is not None and (kept[0] == "ok" or copy[0] != "ok")):
        return False
    for table in ("metrics", "runs"):
        con.execute(f"DELETE FROM {table} WHERE run_id = ?", [t["kept_run_id"]])
    con.execute("INSERT INTO runs SELECT * REPLACE ($1 AS run_id, $2 AS node) FROM runs WHERE run_id = $3",
                [t["kept_run_id"], t["kept_node"], t["run_id"]])
    con.execute("UPDATE metrics SET run_id = $1 WHERE run_id = $2", [t["kept_run_id"], t["run_id"]])
    return True
