"""The analyzer service: stores every event in DuckDB (batched, idempotent), publishes node scores
and cell statistics for what changed, and serves the HTTP API in the same process."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from pathlib import Path

import duckdb
import nats.errors
import uvicorn
from nats.js.kv import KeyValue
from podtax import events, metrics, subjects
from podtax.batchtuning import tune_for_batches
from podtax.bus import Bus, BusError, ConsumerSpec, Unavailable
from podtax.config import AnalyzerSettings, ConfigError, host_names
from podtax.natsagain import Stopped
from podtax.service import listening_socket, service_streams

from podtax_analyzer import api_auth
from podtax_analyzer.api import create_app
from podtax_analyzer.db_file import DAMAGED, RESTORE, cut_short, never_written, schema_why, version_why, wal_why
from podtax_analyzer.db_lock import DbLock, Held, lock_path
from podtax_analyzer.held_file import FileWatch
from podtax_analyzer.isolate import storage_fault, write_isolating
from podtax_analyzer.publication import Publisher
from podtax_analyzer.score_cache import ScoreCache
from podtax_analyzer.score_sweep import score_items, sweep
from podtax_analyzer.store import Refused, Store

log = logging.getLogger("podtax.analyzer")
SOURCE = "podtax/analyzer"
# Scores are kept up to date incrementally (score_cache.py: only the new runs' rows are read), but a
# publication still puts every touched key's score in the KV bucket and on the bus, and the campaign's
# cell statistics are recomputed. Publishing after every batch kept the analyzer busy with it; instead,
# publications are at least SCORES_MIN_INTERVAL_S apart, and the pause after one is at least
# SCORES_GAP_FACTOR times as long as it took (at most ~20% of the time).
SCORES_MIN_INTERVAL_S = 1.0
SCORES_GAP_FACTOR = 4.0
RESTORE_RETRY_MAX_S = 60.0  # the longest pause between tries to put the stored scores back
STORED = [f"{subjects.RUN_LOG}.>", f"{subjects.RUN_RESULT}.>", f"{subjects.RUN_FAILED}.>",
          f"{subjects.HOST_FACTS}.>", f"{subjects.PLACEMENT_MADE}.>", f"{subjects.CAMPAIGN_SUBMITTED}.>"]


class Analyzer:
    def __init__(self, settings: AnalyzerSettings, bus: Bus, store: Store) -> None:
        self.settings = settings
        self.bus = bus
        self.store = store
        self.pending: set[str] = set()  # run ids with a new result, waiting for score/cell publication
        self.publisher = Publisher(bus)
        # Store.replaced when the scores bucket last held no key without stored runs: rows deleted since (a reparse,
        # an imported duplicate's result deleted once its raw log came) may leave a key with none (score_sweep.py)
        self.swept = store.replaced
        self.changed = asyncio.Event()
        self.storage_problem: str | None = None  # set while writes fail for the storage's sake (GET /healthz)
        self.watch = FileWatch(store)  # the file removed or replaced stops the writes (held_file)
        # a publication reads only the new runs' rows; filled by the restore at start (_restore_scores)
        self.cache = ScoreCache(settings.analyzer_score_cache_values)

    def file_moved(self) -> str | None:
        """Why nothing is stored: the database file is no longer at its path (held_file.FileWatch.problem)."""
        return self.watch.problem()

    async def handle_batch(self, batch: list[events.Event]) -> dict[str, str]:
        """Commit the batch; if one event cannot be stored, only it is rejected (dead-lettered). If the
        storage itself fails (full disk, DuckDB out of memory), the batch is held and retried (Unavailable)."""
        if moved := await asyncio.to_thread(self.file_moved):  # stored there, it would be acked and lost
            self.storage_problem = moved
            raise Unavailable(moved)
        try:
            if self.storage_problem and await asyncio.to_thread(self.store.reopen_if_invalidated):
                log.warning("%s opened again after DuckDB invalidated it", self.settings.analyzer_db)
            with metrics.ANALYZER_WRITE_SECONDS.time():
                new_runs, poison = await asyncio.to_thread(write_isolating, self.store.write_batch, batch)
        except Exception as exc:
            if storage_fault(exc):
                self.storage_problem = storage_advice(exc, self.settings)
                raise Unavailable(self.storage_problem) from exc
            raise
        self.storage_problem = None
        metrics.ANALYZER_STORED.inc(len(batch) - len(poison))
        if new_runs:
            self.pending |= new_runs
            self.changed.set()
        return poison

    def runs_changed(self, run_ids: set[str]) -> None:
        """Publish these runs' scores (their rows changed outside a batch: POST /api/imports/twice)."""
        self.pending |= run_ids
        self.changed.set()

    async def publish_updates(self, stop: asyncio.Event) -> None:
        """Coalesce new results and publish the scores and cell statistics they changed."""
        kv = await self.bus.kv(subjects.SCORES_BUCKET)  # create the bucket before the first put
        loop = asyncio.get_running_loop()
        cache = self.cache
        restore_at: float | None = loop.time()  # when to put the stored scores into the bucket; None once done
        failures = 0
        while not stop.is_set():
            if restore_at is not None and loop.time() >= restore_at:
                if await self._restore_scores(kv, said=failures > 0):
                    restore_at = None
                else:  # said once; tried again after 2, 4, 8 ... 60 s
                    failures += 1
                    restore_at = loop.time() + min(RESTORE_RETRY_MAX_S, 2.0**failures)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), 1.0)
            if not self.pending:
                continue
            self.changed.clear()
            runs, self.pending = self.pending, set()
            started = loop.time()
            try:
                await self._publish(runs, cache)
            except Stopped:  # SIGTERM while its bucket's lookup waited for NATS: the next start's restore puts them
                log.info("publishing scores stopped while waiting for NATS (the results are stored)")
                return
            except (nats.errors.Error, BusError) as exc:  # NATS refused or lost them (its bucket gone): one line
                log.error("publishing scores failed (%s: %s); will retry", type(exc).__name__, exc)
                self.pending |= runs
            except Exception:  # noqa: BLE001 - retried with the next change; results are already stored
                log.exception("publishing scores failed; will retry")
                self.pending |= runs
            took = loop.time() - started
            await asyncio.sleep(max(SCORES_MIN_INTERVAL_S - took, SCORES_GAP_FACTOR * took))

    async def _publish(self, runs: set[str], cache: ScoreCache) -> None:
        from podtax_analyzer.comparisons import cell_stats_for

        # The same scores as scores.node_scores(since_runs=runs) over the database (score_cache.py).
        under_way = self.store.replacing  # read before `replaced` (see Store._replacing)
        replaced = self.store.replaced
        scores = await asyncio.to_thread(cache.update, self.store, runs)
        await self.bus.kv_put_many(subjects.SCORES_BUCKET, score_items(scores))
        if replaced != self.swept and not under_way:
            await self._sweep(await self.bus.kv(subjects.SCORES_BUCKET))
            self.swept = replaced
        updates: list[events.Envelope] = [
            events.NodeScoreV1(subject=subjects.join(subjects.SCORE_UPDATED, s.env, s.node), source=SOURCE, data=s)
            for s in scores]
        cells: list[events.Envelope] = []
        for campaign, node, test, pkey in await asyncio.to_thread(self._touched_cells, runs):
            stats = await asyncio.to_thread(cell_stats_for, self.store.cursor(), campaign, node, test, pkey)
            cells += [events.CellStatsV1(subject=subjects.join(subjects.CELL_STATS, s.campaign, s.node),
                                         source=SOURCE, data=s) for s in stats]
        await self.publisher.publish(updates, cells)  # score events refused for want of room: dropped (publication.py)

    async def _sweep(self, kv: KeyValue) -> list[str]:
        """The sweep after rows were deleted (a reparse, an imported duplicate's runs): every stored score as
        node_scores gives it, through the cache (ScoreCache.restore, as at start: at 100,000 runs +124-128 MB of RSS
        through node_scores' per-key lists), which is left filled and marked for the next publications."""
        unscored: list[tuple[str, ...]] = []  # keys whose statistics raised: their last score stays
        scores = await asyncio.to_thread(self.cache.restore, self.store, unscored)
        return await sweep(kv, self.store, scores, unscored)

    async def _restore_scores(self, kv: KeyValue, said: bool) -> bool:
        """Put every stored score into the scores bucket, once at start: a bucket that lost them (a new NATS, one that
        lost its store, the bucket deleted, a restore cut short) has them back, and the scheduler ranks nodes by what
        was measured, not by their resources alone until each cell's next result. The same figures the bucket held
        (the analyzer is its only writer). True once done; False to try again (a failure is logged unless `said`)."""
        try:
            held = (await kv.status()).values
            unscored: list[tuple[str, ...]] = []  # keys whose statistics raised: their last score stays
            # node_scores(unscored=unscored)'s figures, through the cache (ScoreCache.restore: less memory, and
            # the first publication finds the keys loaded)
            scores = await asyncio.to_thread(self.cache.restore, self.store, unscored)
            await self.bus.kv_put_many(subjects.SCORES_BUCKET, score_items(scores))
            await sweep(kv, self.store, scores, unscored)  # a key left by runs deleted before a restart
        except Stopped:  # a SIGTERM while the puts' acks waited for NATS (buspipeline): the next start restores them
            return False
        except (nats.errors.Error, BusError) as exc:
            if not said:
                log.error("putting the stored scores into %s failed (%s: %s); trying again", subjects.SCORES_BUCKET,
                          type(exc).__name__, exc)
            return False
        except Exception:  # noqa: BLE001 - DuckDB out of memory, a damaged block: new results are still published
            if not said:
                log.exception("reading the stored scores for %s failed; trying again", subjects.SCORES_BUCKET)
            return False
        if held < len(scores):
            log.warning("the scores bucket %s held %d of the %d stored node scores (a new NATS, or one that lost "
                        "its store): put back from %s", subjects.SCORES_BUCKET, held, len(scores),
                        self.settings.analyzer_db)
        return True

    def _touched_cells(self, runs: set[str]) -> list[tuple[str, str, str, str]]:
        """Cells with new results, of campaigns that follow a target CI width (the only readers)."""
        cur = self.store.cursor()
        return cur.execute("""SELECT DISTINCT r.campaign, r.node, r.test, r.params_key
                              FROM runs r JOIN campaigns c USING (campaign)
                              WHERE r.run_id IN (SELECT unnest($1::varchar[]))
                                AND json_extract(c.spec, '$.repetitions.target_ci_width') IS NOT NULL
                                AND json_extract(c.spec, '$.repetitions.target_ci_width') != 'null'::JSON""",
                           [sorted(runs)]).fetchall()


def said_if_crashed(task: asyncio.Task[None]) -> None:
    """Log the scores publisher's crash at once: it runs beside the consumer, which goes on storing results. Stopped
    (a SIGTERM while its first bucket lookup waited for NATS) is no crash: the service is stopping."""
    if not task.cancelled() and (exc := task.exception()) is not None and not isinstance(exc, Stopped):
        log.error("publishing scores stopped: %s: %s; new results are stored but no score is published until the "
                  "analyzer restarts", type(exc).__name__, exc, exc_info=exc)


def storage_advice(exc: BaseException, settings: AnalyzerSettings) -> str:
    """What failed in the storage and what to fix, for the operator (the batch waits meanwhile)."""
    lines = str(exc).splitlines() or [""]
    cause = next((line for line in lines[1:] if line.startswith("Original error:")), "")  # why DuckDB gave up
    said = " ".join(part for part in (lines[0][:300], cause[:300]) if part)
    what = f"storing to {settings.analyzer_db} failed ({type(exc).__name__}: {said})"
    if type(exc).__name__ == "OutOfMemoryException":
        return (f"{what}: DuckDB reached its memory limit of {settings.analyzer_memory_mb} MB; raise "
                "PODTAX_ANALYZER_MEMORY_MB and restart the analyzer")
    if type(exc).__name__ == "FatalException" or "invalidated" in str(exc):
        fix = ("raise its file size limit (ulimit -f; LimitFSIZE= of its systemd unit; prlimit --fsize on the running "
               "analyzer)" if "File too large" in str(exc) else "free space on its disk" if "No space" in str(exc)
               else "fix the cause")
        return f"{what}: DuckDB gave up on the file until it is opened again; {fix}: the analyzer opens it again itself"
    if any(sign in str(exc) for sign in DAMAGED):  # was told to free space and wait, which never helps (audit)
        return (f"{what}: the file is damaged (cut short or overwritten); stop the analyzer and restore the file from "
                "a backup, or move it away for a new one")
    if "Read-only file system" in str(exc):  # EROFS: was told to free space, and that storing resumes by itself
        return (f"{what}: its file system is read-only: remount it read-write; if the kernel made it read-only after a "
                "disk error, stop the analyzer, check the disk (dmesg, fsck) and mount it again: held results wait in "
                "NATS and are stored once it takes writes")
    if "File too large" in str(exc):  # EFBIG: freeing space does not help (audit hG)
        return (f"{what}: a file size limit stops the file growing: raise it (ulimit -f; LimitFSIZE= of its systemd "
                "unit; prlimit --fsize on the running analyzer); storing resumes by itself")
    return f"{what}: free space on its disk (or fix its permissions); storing resumes by itself"


def open_problem(exc: BaseException, path: Path) -> str:
    """Why the DuckDB file cannot be opened at start and what to fix, in one line (exit 2): a file another
    process holds, a full disk or a refused permission gave a DuckDB traceback (audit)."""
    return cannot_open(path, open_why(exc))


def open_why(exc: BaseException) -> str:
    """open_problem's reason and fix."""
    text = (str(exc).splitlines() or [type(exc).__name__])[0]
    if version := version_why(str(exc)):
        why = version
    elif wal := wal_why(text):
        why = wal
    elif held := re.search(r"Conflicting lock is held in (.*) \(PID (\d+)\)", text):
        why = f"another process holds it (PID {held[2]}, {held[1]}): only one analyzer may use a file; stop it"
    elif "No space left on device" in text:
        why = "its disk is full: free space on it"
    elif any(sign in text for sign in DAMAGED):
        why = f"the file is damaged (cut short or overwritten): {RESTORE}"
    elif "Permission denied" in text:
        why = "permission denied: let the analyzer's user read and write it and its folder"
    elif "Read-only file system" in text:  # these three said 'fix it' (audit hG)
        why = ("its file system is read-only: remount it read-write (if the kernel turned it read-only after a disk "
               "error, check the disk first: dmesg)")
    elif "Operation not permitted" in text:
        why = ("the system refuses to write it (an immutable file, lsattr shows 'i': chattr -i; or a security "
               "policy such as SELinux or AppArmor)")
    elif "File too large" in text:
        why = ("a file size limit stops its writes (File too large): raise it (ulimit -f; LimitFSIZE= of its "
               "systemd unit)")
    else:
        why = f"{text[:300]}: fix it"
    return why


def empty_left(path: Path) -> str | None:
    """An empty file at `path` (0 bytes) holds no database: DuckDB leaves one when it fails as it creates the file
    (a full disk, a file size limit, a kill), and then refused every later start ('not a valid DuckDB database
    file'; audit hG), though PODTAX_ANALYZER_DB takes an empty file as a new one. So does a file of DuckDB's headers
    only, naming no checkpoint (db_file.never_written: creation stopped after 8 KiB; refused as damaged, audit hH).
    With no WAL beside it (or an empty one) it is removed here, for DuckDB to create the file again; beside a WAL it
    is left, and this says why."""
    wal = Path(f"{path}.wal")
    try:
        if str(path) == ":memory:" or not path.is_file():
            return None
        size = path.stat().st_size
        if size > 0 and not never_written(path):
            return None
        what = ("is empty (0 bytes)" if size == 0 else
                f"holds no database ({size:,} bytes: DuckDB's headers only, naming no checkpoint)")
        if wal.exists() and wal.stat().st_size > 0:
            return (f"the file {what} but {wal} beside it is not: restore the file from a backup, or move both away "
                    "for a new one")
        wal.unlink(missing_ok=True)
        path.unlink()
    except OSError as exc:
        return open_why(exc)
    if size == 0:
        log.warning("%s is empty (0 bytes, no WAL beside it): no database was ever written to it (an earlier start "
                    "failed as it created it); a new one is created", path)
    else:
        log.warning("%s %s, no WAL beside it: no database was ever written to it (an earlier start stopped as it "
                    "created it: a full disk, a file size limit); a new one is created", path, what)
    return None


def hold(path: Path) -> DbLock | None:
    """The lock that keeps a second analyzer off `path` (db_lock.py); None for an in-memory database."""
    if str(path) == ":memory:":
        return None
    try:
        return DbLock(path)
    except Held as exc:
        raise ConfigError(cannot_open(path, str(exc))) from None
    except OSError as exc:  # named: a lock file refused read as the database's
        lock = str(lock_path(path))
        why = open_why(exc) if exc.filename != lock else f"its lock file {lock}: {open_why(exc)}"
        raise ConfigError(cannot_open(path, why)) from None


def cannot_open(path: Path, why: str) -> str:
    return f"PODTAX_ANALYZER_DB: cannot open {path}: {why}, or name another file (podtax up: another --data-dir)"


def open_store(path: Path, memory_mb: int | None) -> tuple[DbLock | None, Store]:
    """The analyzer's lock of `path` and its Store, or ConfigError saying why not and what to do. The lock comes
    first: another analyzer starting on the same empty file may be creating it (empty_left would remove it)."""
    held = hold(path)
    store: Store | None = None
    try:
        if left := empty_left(path):
            raise ConfigError(cannot_open(path, left))
        try:  # checked inside the transaction of schema.sql, rolled back when refused: the file is left as it was
            store = Store(path, memory_mb, check=lambda con: cut_short(con, path) or schema_why(con))
        except Refused as exc:
            raise ConfigError(cannot_open(path, str(exc))) from None
        except (duckdb.Error, OSError) as exc:
            raise ConfigError(open_problem(exc, path)) from None
    except BaseException:
        if store is not None:
            store.close()
        if held is not None:
            held.release()
        raise
    return held, store


async def serve(settings: AnalyzerSettings, bus: Bus, stop: asyncio.Event) -> None:
    tune_for_batches(settings.analyzer_batch)
    sock = listening_socket(settings.analyzer_host, settings.analyzer_port, "PODTAX_ANALYZER_PORT",
                            "PODTAX_ANALYZER_HOST")  # said at start, before the API is said to listen
    store: Store | None = None
    held: DbLock | None = None
    try:  # until uvicorn has the socket, a failure closes it: the port is free again at once (a caller serving
        # again in-process needs it), and the store with it
        held, store = open_store(settings.analyzer_db, settings.analyzer_memory_mb)
        analyzer = Analyzer(settings, bus, store)
        token = settings.api_token.get_secret_value() if settings.api_token else None
        app = create_app(store, token, settings.api_reads_need_token, api_auth.loopback(settings.analyzer_host),
                         host_names(settings.analyzer_allowed_hosts))
        app.state.nats_connected = lambda: bus.nc.is_connected  # /healthz says 503 while NATS is unreachable
        # ... and while writes fail (disk full...), or the file was removed (said before a batch comes)
        app.state.storage_problem = lambda: analyzer.storage_problem or analyzer.file_moved()
        app.state.runs_changed = analyzer.runs_changed  # scores to publish after POST /api/imports/twice, /api/retired
        server = uvicorn.Server(uvicorn.Config(app, host=settings.analyzer_host, port=settings.analyzer_port,
                                               log_level="warning", lifespan="off"))
        server.install_signal_handlers = lambda: None  # type: ignore[method-assign] - we own the signals
        http = asyncio.create_task(server.serve(sockets=[sock]))
    except BaseException:
        if store is not None:
            store.close()
        if held is not None:
            held.release()
        sock.close()
        raise
    log.info("analyzer API on http://%s:%d (DuckDB %s)", settings.analyzer_host, sock.getsockname()[1],
             settings.analyzer_db)
    updates: asyncio.Task[None] | None = None
    try:  # the API serves what is stored while the runner's streams are awaited
        if not await service_streams("analyzer", settings, bus, stop):
            return
        updates = asyncio.create_task(analyzer.publish_updates(stop))
        updates.add_done_callback(said_if_crashed)
        spec = ConsumerSpec("analyzer", STORED, max_deliver=settings.max_deliver, batch=settings.analyzer_batch)
        await bus.consume_batches(spec, analyzer.handle_batch, stop)
    finally:
        server.should_exit = True
        if updates is not None:
            updates.cancel()
        await asyncio.gather(http, *([updates] if updates else []), return_exceptions=True)
        await asyncio.to_thread(analyzer.watch.keep)  # a removed file put back, not dropped as it closes
        store.close()
        if held is not None:
            held.release()
