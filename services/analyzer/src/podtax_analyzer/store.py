"""The analyzer's DuckDB file: one writer, batched columnar inserts, idempotent on run and event ids.

Inserts (store_insert.py) are one statement per table per batch, reading the batch's columns as numpy object arrays
registered as a view: DuckDB scans those natively, about 10x faster than binding Python lists as
query parameters (which boxes every value). Every insert is `ON CONFLICT DO NOTHING` (or, for a result
that arrives for a run recorded as failed, an update), so a redelivered batch changes nothing.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
from podtax import events

from podtax_analyzer import duckcon, submissions
from podtax_analyzer.imports_twice import drop, find
from podtax_analyzer.overlap import mark_overlaps
from podtax_analyzer.phases_store import PhaseColumns, insert_phases, phase_rows
from podtax_analyzer.reads import Cursor, ReadWriteLock
from podtax_analyzer.store_imports import dropped, onto_kept, record, stored_twice
from podtax_analyzer.store_insert import insert
from podtax_analyzer.store_lookup import lookup, unseen
from podtax_analyzer.store_rows import (
    FACT_COLUMNS,
    FACT_TYPES,
    METRIC_COLUMNS,
    METRIC_TYPES,
    PLACEMENT_COLUMNS,
    PLACEMENT_TYPES,
    RAW_COLUMNS,
    RAW_TYPES,
    RUN_COLUMNS,
    RUN_TYPES,
    fact_row,
    failure_row,
    metric_rows,
    placement_row,
    raw_row,
    result_row,
)

log = logging.getLogger("podtax.analyzer.store")

# DuckDB's checkpoints merge ("vacuum") the row groups each checkpoint appends, and each merge rewrites
# every string of the merged groups in memory: raw logs made the analyzer's memory jump at doubling row
# counts (measured with recorded sysbench logs, checkpoint every 16,000 runs: +28 MB at 32,000 runs,
# +56 at 64,000, +91 at 128,000, growing with the history), and freed it batches later. Ingest never
# deletes, so it gains nothing from merging: checkpoints only write new row groups (analyzer, 100,000
# runs in process: peak 211 MB against 293). Merging is on while a reparse deletes and replaces runs
# (Store.vacuuming), where it reclaims the deleted rows' space.
VACUUM_TASKS = 100  # DuckDB's default max_vacuum_tasks
# DuckDB's allocator (its own jemalloc) keeps the pages that the batches' queries free: its flush after a
# task does not run for work done on the caller's thread, as every write and lookup here is, and its
# resident pages grew with the history (61-67 MB at 100,000 results, 35 of them in use). Setting the
# memory limit again makes DuckDB evict to it and return those pages (5-17 ms); every FLUSH_BATCHES
# batches, the RSS at 100,000 results fell from 274-290 MB (9 runs) to 252-254 (6 runs), the allocator's
# resident pages to 40 MB (bench_analyzer_history.py, bounded). What still grows is in the README.
FLUSH_BATCHES = 10
# DuckDB keeps every block of the file it wrote at a checkpoint or read for a query (tag BASE_TABLE) until its
# memory limit forces it out: the analyzer's RSS grew with the file itself (+20-23 MB per 100,000 results of
# recorded sysbench logs, the file's own growth) up to PODTAX_ANALYZER_MEMORY_MB (1024 by default). And its
# eviction queues keep a node for every buffer a query unpinned, ~0.8 KB each (the node's weak pointer keeps
# the freed buffer's handle allocated), purged only once a queue holds 32,768 of them: +7-12 MB of C++ heap
# per 100,000 results, up to ~25 MB a queue. When either passes its bound (CACHE_MB, DEAD_NODES) at a flush,
# the store checkpoints (the rows still in memory go to the file, so nothing is spilled) and asks for a limit
# of 0 while it holds a result open: DuckDB walks every queue, frees the dead nodes, evicts every unpinned block
# (a file's block is dropped without a write, a later read takes it from the file again) and refuses the 0
# (Store._evict); statements wait meanwhile all the same (reads.py). A statement still running after
# EVICT_WAIT_S (a long report, export or reparse) makes the flush skip the eviction rather than hold every
# other statement and the analyzer's writes back behind it.
CACHE_MB = 32
DEAD_NODES = 8192
EVICT_WAIT_S = 0.05
HELD = "SELECT i FROM range(100000) t(i) ORDER BY i DESC"  # a sorted result, held while the limit 0 is asked (~1 MB)
# reopen_if_invalidated waits this long at most for the statements under way (new ones wait meanwhile: the lock
# prefers its writer): a streamed answer holds its statement until its last row, as long as its client reads, and
# a wait without bound held every read (/healthz included) and the writes back behind one stalled client.
REOPEN_WAIT_S = 2.0


def resubmitted(con: duckdb.DuckDBPyConnection, c: events.CampaignSubmittedV1) -> bool:
    """Whether `c` submits again a campaign stored from an earlier submission (another submission time; a
    redelivery carries the stored one): after a NATS reset the runner's KV no longer holds the name. Run ids
    are made of the name and the cell and the first result of a run id is kept, so the shared cells would keep
    the earlier measurements: said in one error line naming the fix (the CLI refuses such a name when it can
    ask the analyzer)."""
    row = con.execute("SELECT submitted_at FROM campaigns WHERE campaign = ?", [c.data.campaign]).fetchone()
    if row is None:  # `c` is a submission not seen before (submissions.current left redeliveries out)
        return False
    if not con.execute("SELECT 1 FROM runs WHERE campaign = ? LIMIT 1", [c.data.campaign]).fetchone():
        return False  # no run of it was recorded (the runner refused it, or its publish was retried): none to drop
    log.error("campaign %s submitted again (at %s; the analyzer holds its submission of %s, e.g. from before a "
              "NATS reset): results of the runs the two share are dropped, keeping the earlier ones, and the rest "
              "join the earlier campaign: cancel it (podtax campaign cancel %s) and submit it under another name",
              c.data.campaign, c.time.isoformat(), row[0].isoformat(), c.data.campaign)
    return True


class Refused(ValueError):
    """The file is not the analyzer's to use (Store's `check`); it was left as it was."""


class Store:
    """Owns the DuckDB connection. `write_batch` is the only writer; `cursor()` serves readers."""

    def __init__(self, path: Path | str, memory_mb: int | None = None, cache_mb: int = CACHE_MB,
                 check: Callable[[duckdb.DuckDBPyConnection], str | None] | None = None) -> None:
        """`memory_mb` bounds DuckDB's memory (80% of the RAM by default); queries that need more spill to a
        directory beside the file. With it set, the file's blocks DuckDB keeps are brought back to `cache_mb`
        every FLUSH_BATCHES batches (without it, they grow with the history up to the limit). `check`: why the
        file is not to be used (schema.sql applied, in its transaction), which raises Refused with the file as it was
        (review r5: schema.sql's tables and columns were added to a file then refused as 'left as it is')."""
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.memory_mb = memory_mb
        self.cache_mb = cache_mb
        self.batches = 0  # write_batch calls: every FLUSH_BATCHES, DuckDB's allocator returns its free pages
        self.con = duckcon.connect(path)  # without the optimizer DuckDB 2.0.1 gets wrong
        if memory_mb is not None:
            self.con.execute(f"SET memory_limit = '{int(memory_mb)}MB'")
        self.con.execute("BEGIN")
        try:
            self.con.execute(resources.files("podtax_analyzer").joinpath("schema.sql").read_text())
            refused = check(self.con) if check is not None else None
            self.con.execute("ROLLBACK" if refused else "COMMIT")
        except BaseException:
            self.con.close()
            raise
        if refused:
            self.con.close()
            raise Refused(refused)
        self.con.execute("SET GLOBAL max_vacuum_tasks = 0")
        self._lock = threading.Lock()
        # held by each write transaction and by checkpoint(): a checkpoint then has every commit before it in the
        # file; `guard` (held_file.FileWatch) runs under it before each write transaction, and may refuse it
        self._writing = threading.RLock()
        self.guard: Callable[[], None] | None = None
        self._reads = ReadWriteLock()  # statements on the store's cursors, against the flush's eviction
        self.replaced = 0  # moves before and after each replace_results (_replacing): score caches start afresh
        self.replacing = 0  # replacements under way (_replacing, nested in a reparse's vacuuming)

    def reopen_if_invalidated(self) -> bool:
        """Open the file again if DuckDB invalidated it (a checkpoint that could not write it: a full disk, a file
        size limit): DuckDB 2.0 then refuses every statement until the database is opened again, though the disk
        takes writes again (audit hG). The WAL is replayed. A reopen that fails raises (the disk still full) and
        is tried again at the next call. Waits for the statements under way at most REOPEN_WAIT_S (new statements
        wait meanwhile), else returns False and leaves the reopen to the next call; score caches start afresh."""
        if not self.invalidated():
            return False
        with self._reads.writing(timeout=REOPEN_WAIT_S) as free:
            if not free:
                log.warning("%s not opened again yet: a read still held it after %s s (a client reading a streamed "
                            "answer slowly); tried again with the next batch", self.path.name, REOPEN_WAIT_S)
                return False
            with self._replacing(), self._lock:
                with contextlib.suppress(duckdb.Error):
                    self.con.close()
                self.con = duckcon.connect(self.path)
                if self.memory_mb is not None:
                    self.con.execute(f"SET memory_limit = '{int(self.memory_mb)}MB'")
                self.con.execute("SET GLOBAL max_vacuum_tasks = 0")
        return True

    def invalidated(self) -> bool:
        """Whether DuckDB refuses every statement until the file is opened again (other errors raise)."""
        try:
            with self.cursor() as con:
                con.execute("SELECT 1").fetchall()
            return False
        except duckdb.Error as exc:
            if type(exc).__name__ != "FatalException" and "invalidated" not in str(exc):
                raise
        return True

    def cursor(self) -> Cursor:
        """A cursor (a duckdb.DuckDBPyConnection's methods) whose statements never meet the flush's eviction."""
        return Cursor(self._raw_cursor(), self._reads)

    def _raw_cursor(self) -> duckdb.DuckDBPyConnection:
        with self._lock:
            return self.con.cursor()

    @contextlib.contextmanager
    def transaction(self, write: bool = True) -> Iterator[Cursor]:
        """A cursor inside BEGIN ... COMMIT, rolled back if anything raises. `write`: under the write lock, after
        `guard` (False: a read's snapshot)."""
        with self._writing if write else contextlib.nullcontext():
            if write and self.guard is not None:
                self.guard()
            con = self.cursor()
            try:
                con.execute("BEGIN")
                yield con
                con.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(duckdb.Error):  # DuckDB may have aborted it (a write refused in its WAL):
                    con.execute("ROLLBACK")  # its 'cannot rollback - no transaction is active' hid the cause (hG)
                raise
            finally:
                con.close()

    def checkpoint(self) -> None:
        """CHECKPOINT between write transactions (none open: each commit before it is in the file)."""
        with self._writing, self.cursor() as con:
            con.execute("CHECKPOINT")

    def close(self) -> None:
        self.con.close()

    @contextlib.contextmanager
    def vacuuming(self) -> Iterator[None]:
        """Checkpoints merge row groups (DuckDB's default) inside the block, and once at its end: for work
        that deletes rows (a reparse), so the file does not keep their space. Off again afterwards."""
        con = self.cursor()
        # a replacement for the score caches from start to end: a checkpoint that merges row groups renumbers
        # rowids (DuckDB 2.0), and the caches' marks are rowids
        with self._replacing():
            try:
                con.execute(f"SET GLOBAL max_vacuum_tasks = {VACUUM_TASKS}")
                yield
                con.execute("CHECKPOINT")  # DuckDB (2.0) accepts it while another writer is active, without error
            finally:
                con.execute("SET GLOBAL max_vacuum_tasks = 0")
                con.close()

    def write_batch(self, batch: Iterable[events.Envelope]) -> set[str]:
        """Commit a batch of events in one transaction; returns run ids that got a new result or whose rows changed."""
        now = datetime.now(UTC)
        batch = submissions.current(self.cursor, list(batch))  # the only writer: submissions stay as read until written
        failures, raws, facts, placements, campaigns = [], [], [], [], []
        results: dict[str, events.ResultV1] = {}  # the first result of a run wins, as a redelivery would
        phases: dict[str, PhaseColumns | None] = {}  # per-object latencies of control-plane runs
        for e in batch:
            if isinstance(e, events.ResultV1):
                results.setdefault(e.data.run.run_id, e)
            elif isinstance(e, events.RunFailedV1):
                failures.append(failure_row(e, now))
            elif isinstance(e, events.RawLogV1):
                raws.append(raw_row(e, now))
                phases.setdefault(e.data.run.run_id, phase_rows(e.data))
            elif isinstance(e, events.HostFactsV1):
                facts.append(fact_row(e))
            elif isinstance(e, events.PlacementMadeV1):
                placements.append(placement_row(e))
            elif isinstance(e, events.CampaignSubmittedV1):
                campaigns.append(e)
        with contextlib.ExitStack() as replacing, self.transaction() as con:
            raws = unseen(con, "raw_logs", raws)
            twice = stored_twice(con, raws)  # imported runs held under another run id (store_imports.py)
            deleted, kept = record(con, twice, raws, now)
            if deleted:  # results stored before their raw logs, now deleted: score caches start afresh, as a reparse
                replacing.enter_context(self._replacing())
            if gone := dropped(con, twice, [*results, *(f["run_id"] for f in failures)]):
                results = onto_kept(con, gone, results, raws) | {k: e for k, e in results.items() if k not in gone}
                failures = [f for f in failures if f["run_id"] not in gone]
            stored = self._write_results(con, results, now)
            new_runs = {r["run_id"] for r in stored}
            insert(con, "runs", RUN_COLUMNS, RUN_TYPES, failures)
            insert(con, "raw_logs", RAW_COLUMNS, RAW_TYPES, [r for r in raws if r["run_id"] not in twice],
                         conflict=None)
            insert_phases(con, (p for run_id, p in phases.items() if run_id not in twice))
            insert(con, "host_facts", FACT_COLUMNS, FACT_TYPES, facts)  # an event id stored before is kept
            insert(con, "placements", PLACEMENT_COLUMNS, PLACEMENT_TYPES, placements)
            for c in campaigns:  # new submissions only, in stream order: each becomes its name's current one
                resubmitted(con, c)
                name, at = c.data.campaign, submissions.utc(c.time)
                con.execute("INSERT INTO campaign_submissions VALUES (?,?) ON CONFLICT DO NOTHING", [name, at])
                con.execute("INSERT INTO campaigns VALUES (?,?,?) ON CONFLICT DO UPDATE SET submitted_at = "
                            "excluded.submitted_at, spec = excluded.spec", [name, at, json.dumps(c.data.spec)])
            flagged = mark_overlaps(con, stored + failures)
        self.batches += 1
        if self.memory_mb is not None and self.batches % FLUSH_BATCHES == 0:
            self._flush()
        return new_runs | flagged | deleted | kept

    def _flush(self) -> None:
        """Set the memory limit again, which flushes DuckDB's allocator (FLUSH_BATCHES); first, if DuckDB holds
        more than `cache_mb` of the file's blocks or DEAD_NODES dead eviction-queue nodes, evict them (CACHE_MB)."""
        with self.cursor() as con:
            cached = con.execute("SELECT sum(memory_usage_bytes) FROM duckdb_memory() WHERE tag = 'BASE_TABLE'"
                                 ).fetchone()[0]
            dead = con.execute("SELECT sum(dead_nodes) FROM duckdb_eviction_queues()").fetchone()[0]
            if (cached or 0) > self.cache_mb * 2**20 or (dead or 0) > DEAD_NODES:
                con.execute("CHECKPOINT")
                # No statement runs from the 0 to the limit set back (a nonzero limit does not walk the queues).
                with self._reads.writing(timeout=EVICT_WAIT_S) as free:
                    if free:
                        with self._raw_cursor() as raw:
                            self._evict(raw)
                            raw.execute(f"SET memory_limit = '{int(self.memory_mb)}MB'")
                        return
                log.info("eviction skipped: a statement still ran after %s s (a later flush evicts)", EVICT_WAIT_S)
            con.execute(f"SET memory_limit = '{int(self.memory_mb)}MB'")

    def _evict(self, con: duckdb.DuckDBPyConnection) -> None:
        """Ask DuckDB for a limit of 0 while a result it cannot evict (16 KB) is held open: it evicts every
        unpinned block, walks every queue (freeing their dead nodes) and refuses the 0. With nothing held,
        it took the 0 once the last block was evicted (8 of 12 flushes of a small store), without walking the
        rest of its queues (all 1,589 dead nodes kept), and a statement meeting the 0 failed with OutOfMemory
        (the caller holds statements back as well). The held result is a sorted one: `SELECT 1`'s was not always
        memory DuckDB counts, and the 0 was taken (16 of 100 fresh processes at load 2; 0 of 100 so)."""
        with self._raw_cursor() as holder:
            holder.execute(HELD)  # its result, not fetched, keeps memory DuckDB cannot evict
            with contextlib.suppress(duckdb.OutOfMemoryException):
                con.execute("SET memory_limit = '0KiB'")

    def _write_results(self, con: duckdb.DuckDBPyConnection, results: dict[str, events.ResultV1],
                       now: datetime) -> list[dict[str, Any]]:
        """Insert the results of runs without one (returns their rows); a result supersedes a recorded failure."""
        if not results:
            return []
        stored = lookup(con, "run_id, status, event_id", "runs", list(results))
        existing = {run_id: status for run_id, status, _ in stored}
        for run_id, status, event_id in stored:  # a redelivery carries the stored event's id
            if status == "ok" and results[run_id].id != event_id:
                log.warning("result %s ignored: run %s already has result %s (the first result of a run wins; "
                            "another one means two runs share an id, or a forgery)", results[run_id].id[:200],
                            run_id, event_id)
        fresh = [e for run_id, e in results.items() if existing.get(run_id) != "ok"]
        failed_before = [e.data.run.run_id for e in fresh if existing.get(e.data.run.run_id) == "failed"]
        if failed_before:
            con.execute("DELETE FROM runs WHERE run_id IN (SELECT unnest($1::varchar[]))", [failed_before])
        rows = [result_row(e, now) for e in fresh]
        insert(con, "runs", RUN_COLUMNS, RUN_TYPES, rows, conflict=None)
        insert(con, "metrics", METRIC_COLUMNS, METRIC_TYPES, metric_rows(fresh), conflict=None)
        return rows

    def replace_results(self, results: Sequence[events.ResultV1 | events.RunFailedV1],
                        raws: Sequence[events.RawLog] = ()) -> None:
        """Reparse: replace the outcome of each run with a re-derived one, and the per-object phases of the
        control-plane runs among `raws` (their logs) with today's parser's (one transaction)."""
        now = datetime.now(UTC)
        with self._replacing(), self.transaction() as con:
            ids = [e.data.run.run_id for e in results]
            con.execute("DELETE FROM metrics WHERE run_id IN (SELECT unnest($1::varchar[]))", [ids])
            con.execute("DELETE FROM runs WHERE run_id IN (SELECT unnest($1::varchar[]))", [ids])
            if raws:
                con.execute("DELETE FROM phases WHERE run_id IN (SELECT unnest($1::varchar[]))",
                            [[r.run.run_id for r in raws]])
                insert_phases(con, [phase_rows(r) for r in raws])
            ok = [e for e in results if isinstance(e, events.ResultV1)]
            rows = [result_row(e, now) for e in ok] + [failure_row(e, now) for e in results
                                                       if isinstance(e, events.RunFailedV1)]
            insert(con, "runs", RUN_COLUMNS, RUN_TYPES, rows)
            insert(con, "metrics", METRIC_COLUMNS, METRIC_TYPES, metric_rows(ok), conflict=None)
            mark_overlaps(con, rows)

    def drop_imported_twice(self, campaign: str | None) -> tuple[list[dict[str, Any]], set[str]]:
        """Take once the imported runs stored twice (imports_twice.py), in one transaction: the runs dropped, and
        the run ids whose scores change. Score caches start afresh (rows are deleted, as by a reparse)."""
        with self._replacing(), self.transaction() as con:
            twice = find(con, campaign)
            return twice, drop(con, twice, datetime.now(UTC))

    @contextlib.contextmanager
    def rescoring(self) -> Iterator[Cursor]:
        """A write transaction that changes which stored runs scores count (retired.py): score caches start afresh,
        as after a reparse."""
        with self._replacing(), self.transaction() as con:
            yield con

    @contextlib.contextmanager
    def _replacing(self) -> Iterator[None]:
        """`replaced` moves before and after (even if it fails), and `replacing` counts those under way (they
        nest: a reparse's vacuuming holds its replace_results); `replaced` moves before `replacing` drops, so a
        reader that sees none under way and then reads `replaced` sees every move."""
        self.replaced += 1
        self.replacing += 1
        try:
            yield
        finally:
            self.replaced += 1
            self.replacing -= 1
