"""Imported runs stored already under another run id (store.py's write_batch).

`podtax import` derives a run's id from campaign, file, node, env, start and log, so the same run gets another id
when the file is another: the same log imported again under another file name (a second manifest over a copy of the
folder), or the same manifest imported by another podtax generation, which spelled the node differently (before
6de8b23 as the manifest wrote it, `Node-1`, kept so; 6de8b23 to 16ce8b7 in lowercase; since 7daa8f2 as written
again, the node stored lowercase) or derived the id without start and log (before 287d2dc). Each run would be
stored a second time: its cell counted it twice (and flagged the two OVERLAP). So the analyzer recognises the run
itself: an imported raw log is the one it holds when a stored imported raw log is the same capture
(imports_twice.CAPTURE): same campaign, env, test, params, node (whatever its case) and start time, and the same log
(stdout and stderr, byte for byte but CRLF taken as LF: podtax.capture_text), whatever its file's name and run id.
Two runs of one node, env and test starting
at the same time are one run or measured each other; with the same text logged they are one (two rows of one
manifest included: the importer warns of such rows). The same log text at another start time is another run (equal
figures happen), and so is another log under the same file name (day1/host.log, day2/host.log), or the same failure
line of another test. The stored one is kept; the newcomer's run id goes to
`imported_duplicates`, so its result (the parser's, arriving before or after its raw log) is dropped too; a result
stored before its raw log is deleted and the runs it overlapped are flagged afresh (overlap.py). When the kept run
has no result (an older parser failed on the log, or its runs row is gone) the newcomer's outcome is its result, as
imports_twice.move_outcome does: the logs are the same text, and a re-import after an upgrade is the usual way to
recover the measurement. Live runs (no imported file) are never compared."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import duckdb
import numpy as np
from podtax import events
from podtax.capture_text import capture_sql, capture_text

from podtax_analyzer.imports_twice import CAPTURE, move_outcome
from podtax_analyzer.overlap import overlapping, remark
from podtax_analyzer.store_lookup import lookup

log = logging.getLogger("podtax.analyzer.store")

_KEY = CAPTURE
# Stored raw logs that are the same capture, the logs compared in the join: only matching pairs come back (reading
# every stored log at the batch's start into Python cost 16 s and 854 MB for 200 new vs 20,000 stored at one start).
_STORED = f"""SELECT b.run_id, r.run_id FROM batch_imports b JOIN raw_logs r
    ON {' AND '.join(f'r.{c} = b.{c}' for c in _KEY)} AND r.imported_from IS NOT NULL AND lower(r.node) = b.lnode
    AND r.started_at = CAST(b.started_at AS timestamptz) AND {capture_sql('r.stdout')} = b.stdout
    AND {capture_sql('r.stderr')} = b.stderr AND r.run_id <> b.run_id"""


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    """What makes two imported raw logs one capture."""
    return (*(row[c] for c in _KEY), row["node"].lower(), row["started_at"], capture_text(row["stdout"]),
            capture_text(row["stderr"]))


def stored_twice(con: duckdb.DuckDBPyConnection, raws: list[dict[str, Any]]) -> dict[str, str]:
    """Of `raws` (raw-log rows not stored yet, store_rows.raw_row), the imported ones whose run is held already:
    their run id -> the run id kept (a stored raw log's, else the first of the batch with that run)."""
    imported = [r for r in raws if r["imported_from"] is not None]
    if not imported:
        return {}
    twice: dict[str, str] = {}
    first: dict[tuple[Any, ...], str] = {}
    for row in imported:  # within the batch, the first wins
        kept = first.setdefault(_key(row), row["run_id"])
        if kept != row["run_id"]:
            twice[row["run_id"]] = kept
    columns = {c: [r[c] for r in imported] for c in ("run_id", *_KEY)}
    columns |= {c: [capture_text(r[c]) for r in imported] for c in ("stdout", "stderr")}
    columns |= {"lnode": [r["node"].lower() for r in imported], "started_at": [r["started_at"] for r in imported]}
    con.register("batch_imports", {c: np.array(v, dtype=object) for c, v in columns.items()})
    try:
        pairs = con.execute(_STORED).fetchall()
    finally:
        with contextlib.suppress(duckdb.Error):
            con.unregister("batch_imports")
    for run_id, kept in sorted(pairs, reverse=True):  # the least stored run id of the same log is kept
        twice[run_id] = kept
    for run_id, kept in list(twice.items()):  # a batch's first that is itself held: its followers keep the stored
        twice[run_id] = twice.get(kept, kept)
    return twice


def record(con: duckdb.DuckDBPyConnection, twice: dict[str, str], raws: list[dict[str, Any]],
           now: datetime) -> tuple[set[str], set[str]]:
    """Note the dropped run ids (their results are dropped by `dropped`), remove a result stored before its raw log
    came, flag afresh the runs it overlapped (their OVERLAP flag may name it), and log once (a redelivery is not
    logged again) what was dropped and why. Returns the run ids whose rows were deleted, and the runs kept or
    flagged afresh (their scores change: the caller's score caches must forget the deleted ones)."""
    if not twice:
        return set(), set()
    known = {r for (r,) in lookup(con, "run_id", "imported_duplicates", list(twice))}
    con.executemany("INSERT INTO imported_duplicates VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                    [[run_id, kept, now] for run_id, kept in twice.items()])
    ids = list(twice)
    deleted, near = overlapping(con, ids)
    if deleted:
        nodes = _kept_nodes(con, {twice[r] for r in deleted}, raws)
        near |= {twice[r] for r in sorted(deleted) if twice[r] in nodes and move_outcome(
            con, {"run_id": r, "kept_run_id": twice[r], "kept_node": nodes[twice[r]]})}
        con.execute("DELETE FROM metrics WHERE run_id IN (SELECT unnest($1::varchar[]))", [ids])
        con.execute("DELETE FROM runs WHERE run_id IN (SELECT unnest($1::varchar[]))", [ids])
        remark(con, near)
    new = [r for r in raws if r["run_id"] in twice and r["run_id"] not in known]
    if new:
        one = new[0]
        log.warning("%d imported raw log(s) dropped as duplicates of runs stored already under other run ids, e.g. "
                    "%s (campaign %s, file %s, node %s, env %s, started %s, the same log) is run %s: the same log "
                    "imported again under another file name, or by an older podtax that derived the run id from the "
                    "node spelled otherwise, or by a podtax before this version, whose run ids held neither the start "
                    "nor the log; or two rows of one manifest with the same text at one start (two runs: `podtax "
                    "import` warned of them); the stored run is kept", len(new),
                    one["run_id"], one["campaign"], one["imported_from"], one["node"], one["env"], one["started_at"],
                    twice[one["run_id"]])
    return deleted, near | {twice[r] for r in deleted}


def dropped(con: duckdb.DuckDBPyConnection, twice: dict[str, str], run_ids: Iterable[str]) -> dict[str, str]:
    """Of `run_ids` (a batch's results and failures), those of imported runs dropped as duplicates (this batch's
    `twice`, or recorded by an earlier one), each with the run kept. Only import run ids are looked up: live runs
    cost nothing."""
    given = set(run_ids)
    ids = [r for r in given if r.startswith("import-") and r not in twice]
    found = dict(lookup(con, "run_id, kept_run_id", "imported_duplicates", ids)) if ids else {}
    return found | {r: twice[r] for r in given & set(twice)}


def onto_kept(con: duckdb.DuckDBPyConnection, gone: dict[str, str], results: dict[str, events.ResultV1],
              raws: list[dict[str, Any]]) -> dict[str, events.ResultV1]:
    """The results of dropped runs (`gone`: run id -> the run kept) to store as the kept run's, under its run id and
    node: those whose kept run has no result stored (a failure or no runs row). The least dropped run id's wins."""
    offered: dict[str, events.ResultV1] = {}
    for run_id in sorted(set(gone) & set(results)):
        offered.setdefault(gone[run_id], results[run_id])
    if not offered:
        return {}
    done = {r for r, status in lookup(con, "run_id, status", "runs", sorted(offered)) if status == "ok"}
    nodes = _kept_nodes(con, set(offered) - done, raws)
    return {kept: e.model_copy(update={"data": e.data.model_copy(update={"run": e.data.run.model_copy(
        update={"run_id": kept, "node": nodes[kept]})})}) for kept, e in offered.items() if kept in nodes}


def _kept_nodes(con: duckdb.DuckDBPyConnection, kept: set[str], raws: list[dict[str, Any]]) -> dict[str, str]:
    """The node each of the `kept` runs' raw log is stored under, or arrives under (a batch's first)."""
    nodes = {r["run_id"]: r["node"] for r in raws if r["run_id"] in kept}
    rest = sorted(kept - set(nodes))
    return nodes | (dict(lookup(con, "run_id, node", "raw_logs", rest)) if rest else {})
