"""The runner's control-plane executor: a run of a control-plane template runs here (in a thread,
as an API client) instead of a Job or the host agent; its timeline is published as the raw log."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import threading
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path

from podtax import events
from podtax.bus import Bus
from podtax.config import RunnerSettings

from podtax_runner.controlplane import cleanup, kubeapi, pending
from podtax_runner.controlplane.cleanup import executor_error
from podtax_runner.controlplane.common import Aborted, allowance
from podtax_runner.controlplane.execute import execute, measured_of
from podtax_runner.controlplane.retention import MEASURED_DIR, measured_name, prune
from podtax_runner.controlplane.timeline import Timeline
from podtax_runner.outbox import PUBLISH_TIMEOUT_S, Outbox
from podtax_runner.spool import MAX_BYTES, write_atomic

log = logging.getLogger("podtax.runner.controlplane")
Failed = events.RunFailedV1
SOURCE = "podtax/runner"
# What a run's timeline takes in its raw-log event (JSON inside JSON: its quotes escaped), at most, so that a run is
# refused before anything is made rather than lost once done (log-too-large). The estimate was 400 bytes an object:
# a run of the 2,621 objects it allowed at NATS's default 1 MiB wrote ~1.18 MB without one retry, ~1.46 MB with a
# retry of each (measured, count 100: 450-481 bytes an object on Kubernetes, 310 on Nomad; ~125 more for a retry)
# A pod-startup pod's line also holds its node's name (server `node`), which Kubernetes allows up to 253 characters (a
# DNS subdomain; the pods are pinned by the node's hostname label, at most 63): 500 took a name of ~15, and a pod's
# line on a node named 253 characters was 738 bytes (tests/controlplane/test_cp_log_size_node.py). A volume-churn
# object's line holds none, so the allowance is charged to pod-startup only (charged to every template, it lowered
# volume-churn's largest count at 1 MiB from 1,174 to 913 for nothing)
NODE_NAME_BYTES = 253
NODE_IN_LINE = frozenset({"pod-startup"})  # the templates whose object's line holds its node's name
# a pod's end point ready_to_start_containers (PodReadyToStartContainers seen: its key and time, escaped) took a pod's
# line on a node named 253 characters from 739 to 777 bytes (tests/controlplane/test_cp_log_size_node.py)
POD_CONDITION_BYTES = 40
# an object's line without a node's name: its times and server times (Kubernetes claims with consumers the largest)
OBJECT_BYTES = 500
# what sent-again calls add to an object, bounded by Timeline.resend and Timeline.retried: first_request_sent,
# first_delete_requested and its `retried` entry in the summary (its name and, for one call sent again, at most 160
# characters of why and HELD, or 200 re-timed; for 2 or 3 calls, a list of at most 150 // calls characters each, a
# held one's with HELD_SHORT: up to 344 bytes in review r4's fuzz); every object of a throttled run may have one
RETRY_BYTES = 350
ERROR_BYTES = 360  # an object's error (Timeline.fail: at most 300 characters), for the allowance a run may fail
FIXED_BYTES = 8192  # the header and the summary's counts (the API server's request counters the largest)


def object_bytes(test: str) -> int:
    """The most an object's line of template `test` takes in the raw-log event."""
    return OBJECT_BYTES + (NODE_NAME_BYTES + POD_CONDITION_BYTES if test in NODE_IN_LINE else 0)


def log_bytes(count: int, test: str) -> int:
    """The most a run of `count` objects of template `test` writes in its raw-log event: every object sent again, the
    most that may fail without ending the run failed."""
    return FIXED_BYTES + count * (object_bytes(test) + RETRY_BYTES) + min(count, allowance(count)) * ERROR_BYTES


def max_count(max_payload: int, test: str) -> int:
    """The largest count of template `test` whose raw log always fits `max_payload` (log_bytes is increasing)."""
    n = max(0, (max_payload - FIXED_BYTES) // (object_bytes(test) + RETRY_BYTES + ERROR_BYTES))
    while log_bytes(n + 1, test) <= max_payload:
        n += 1
    return n


def too_large(count: int, max_payload: int, test: str) -> str | None:
    """Why a run of `count` objects of template `test` is refused before anything is made (its log might not fit),
    else None."""
    if log_bytes(count, test) <= max_payload:
        return None
    each = object_bytes(test) + RETRY_BYTES
    return (f"a {test} run of {count} objects writes a timeline of up to {log_bytes(count, test):,} bytes ({each} an "
            f"object sent again, the errors of the {allowance(count)} that may fail), above NATS max_payload "
            f"({max_payload:,}): lower count to {max_count(max_payload, test):,} or raise max_payload in nats-server")

# how long past timeout + grace a run still executing here is waited for before it is expired as no-report: its
# cleanup's wait, a call in flight past the run's deadline and one past the cleanup's (a timed-out one is not retried).
# Taken at import from the values in use (170 s; Nomad's cleanup wait and timeouts are the same): a test that
# shortens cleanup.CLEANUP_WAIT_S or kubeapi.TIMEOUT keeps this margin, so its run is not expired for being slower
EXECUTING_S = cleanup.CLEANUP_WAIT_S + 2 * sum(kubeapi.TIMEOUT)
# A run's timeline (or failure) that NATS does not take (stopped, restarting) is held in its outbox (outbox.py) and
# sent again, under the same event id, until NATS takes it or the runner stops; the run does not expire meanwhile.
# Before, the first publish's timeout was taken for the run's failure; then, given up at the run's expiry, the run ran
# again while nats-py still held buffered copies: two results (tests/controlplane/test_cp_publish_nats_down.py)


def keep_measured(exc: BaseException, run: events.RunSpec, spool_dir: Path | None) -> str:
    """keep_file's sentence."""
    return keep_file(exc, run, spool_dir)[0]


def keep_file(exc: BaseException, run: events.RunSpec, spool_dir: Path | None,
              make_room: Callable[[int], object] = lambda size: None) -> tuple[str, Path | None]:
    """Keep the timeline a failed run measured before it ended (execute.keep: its header marked `aborted`, so the
    parser never takes it for a result) and say where, for the run's failure ("" when it measured nothing), with the
    file written (None: none). In `<spool_dir>/measured/` (measured_name; written as the spool writes, MAX_BYTES in all
    there at most, `make_room(its size)` called first: the runner prunes as retention.py says), else in the runner's
    log, one line (`measured timeline of run <id>`: the timeline as a JSON string). Before, a run whose
    deletes the API refused (RBAC's 403 on delete) failed with every create and bind time it had taken lost."""
    tl = measured_of(exc)
    if tl is None:
        return "", None
    text, bound = tl.jsonl(), sum(1 for r in tl.objects.values() if len(r.t) > 1)
    what = f"its timeline of the {bound} object(s) it timed before it ended (" + (
        "its deletes were refused after every create and bind: a result flagged DELETE_REFUSED, its delete phases "
        "left out" if pending.delete_refused(tl, run.test) else "not a result: marked aborted") + ")"
    if spool_dir is not None:
        folder = spool_dir / MEASURED_DIR
        try:
            folder.mkdir(parents=True, exist_ok=True)
            data = text.encode()
            make_room(len(data))
            used = sum(p.stat().st_size for p in folder.iterdir() if p.is_file() and p.name != measured_name(run))
            if used + len(data) <= MAX_BYTES:
                path = write_atomic(folder, measured_name(run), data)
                return f"{what} is kept in {path}", path
            log.warning("%s holds %d bytes already, and pruning every file there that may be (of reported runs, no "
                        "result pending) would not make room for the %d bytes of run %s's measured timeline (%d MiB "
                        "in all at most): it goes to the log", folder, used, len(data), run.run_id, MAX_BYTES // 2**20)
        except OSError as err:
            log.warning("run %s's measured timeline could not be written in %s (%s): it goes to the log", run.run_id,
                        folder, err)
    log.warning("measured timeline of run %s (failed: %s): %s", run.run_id, tl.aborted and tl.aborted["reason"],
                json.dumps(text))
    return f"{what} is in the runner's log (`measured timeline of run {run.run_id}`)", None


class ControlPlaneExecutor:
    def __init__(self, settings: RunnerSettings, bus: Bus) -> None:
        self.settings, self.bus = settings, bus
        self.stop = threading.Event()  # the runner shuts down: every run stops, to be resumed by the next runner
        self.stops: dict[str, tuple[str, threading.Event]] = {}  # each run's campaign and stop: close(), cancel()
        self.cancelled: set[str] = set()  # runs stopped because their campaign was cancelled
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=16, thread_name_prefix="podtax-cp-run")
        self.running: dict[str, concurrent.futures.Future] = {}
        self.outbox = Outbox(bus, log, "control-plane run", "the next runner resumes the run and runs it again")
        self.tasks: set[asyncio.Task[None]] = set()
        self.on_reported: Callable[[events.RunSpec], Awaitable[bool | None]] | None = None  # timeline/failure sent
        self.in_flight: Callable[[], set[str]] = set  # the run ids the runner's state has in flight (Runner sets it)
        self.after_resend: dict[str, Path] = {}  # run id -> its pending mark, sent once its failure is (_resend)

    def launch(self, run: events.RunSpec, resume: bool = False) -> None:
        """Run it; `resume` (a run in flight when the runner stopped): remove what it left, then run it again."""
        if run.run_id in self.running and not self.running[run.run_id].done():
            return
        # its stop, from now: a cancellation that comes before the task starts stops it too
        self.stops.setdefault(run.run_id, (run.campaign, threading.Event()))
        task = asyncio.create_task(self._run(run, resume), name=f"control-plane {run.run_id}")
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def resend(self, run: events.RunSpec, event: events.Envelope) -> None:
        """Send the report of a run an earlier runner kept (outbox.KEPT: NATS refused it), not run it again."""
        task = asyncio.create_task(self._resend(run, event), name=f"control-plane {run.run_id}")
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def executing(self) -> set[str]:
        """The run ids launched here that have not reported yet (their report is coming: every call and wait of
        the executor is bounded, its end-of-run cleanup too, together by EXECUTING_S past timeout + grace)."""
        return set(self.running)

    async def _run(self, run: events.RunSpec, resume: bool = False) -> None:
        started = events.now()
        count = int(run.params.get("count", 0) or 0)
        if why := too_large(count, self.bus.nc.max_payload, run.test):  # refused before anything is created
            self.stops.pop(run.run_id, None)
            await self._fail(run, "log-too-large", why, started)
            return
        stop = self.stops.setdefault(run.run_id, (run.campaign, threading.Event()))[1]
        if self.stop.is_set():
            stop.set()
        future = self.pool.submit(execute, run, self.settings, stop, resume=resume)
        self.running[run.run_id] = future
        try:
            timeline = await asyncio.wrap_future(future)
            event = self._log_event(run, timeline.jsonl(), started)
            if self.bus.wire_bytes(event) > self.bus.nc.max_payload:  # headers too
                await self._fail(run, "log-too-large", f"the timeline of {run.test} ({len(event.data.stdout)} bytes) "
                                 f"is above NATS max_payload ({self.bus.nc.max_payload}): lower count or raise "
                                 f"max_payload in nats-server", started)
                return
            if await self._publish(run, event, "timeline"):
                await self._reported(run)
                log.info("control-plane run %s done: %s", run.run_id, timeline.summary())
        except Aborted as exc:
            if run.run_id in self.cancelled and exc.reason == "stopped":  # recorded as cancelled, not as a result
                await self._fail(run, "cancelled", f"campaign {run.campaign} was cancelled while this run was in "
                                 f"flight: {exc.detail}", started)  # (at a shutdown too: nothing to resume)
                return
            if self.stop.is_set():  # the runner is shutting down: the run stays in flight, the next runner resumes it
                log.info("control-plane run %s stopped by shutdown; cleaned up, to be resumed", run.run_id)
                return
            kept, path = await asyncio.to_thread(self._keep, exc, run, self.unreported())
            tl = measured_of(exc)  # parsed off the event loop, as keep_measured writes: CPU work (review r6)
            refused = tl is not None and await asyncio.to_thread(pending.delete_refused, tl, run.test)
            failure = self._failure(run, exc.reason, f"{exc.detail}; {kept}" if kept else exc.detail, started, refused)
            result = await self._mark(run, tl, started, path, failure) if refused and tl else None  # before reported
            reported = await self._fail(run, exc.reason, failure.data.detail, started, failure)
            if reported and result:  # not reported (the runner stopping): the next one sends the mark's failure again
                await self._send_result(run, *result, "")
        except Exception as exc:  # noqa: BLE001 - recorded as a failure, never lost
            log.exception("control-plane run %s failed", run.run_id)
            await self._fail(run, "executor-error", executor_error(exc), started)
        finally:
            self.running.pop(run.run_id, None)
            self.stops.pop(run.run_id, None)
            self.cancelled.discard(run.run_id)

    def unreported(self) -> set[str]:
        """The run ids whose kept timeline is never pruned (retention.py): in flight in the runner's state, executing
        here, or whose report is held until NATS takes it."""
        return self.in_flight() | set(self.stops) | set(self.running) | set(self.outbox.holding())

    def prune_measured(self, unreported: set[str], adding: int = 0, temporary: bool = False,
                       room: int = 0, replacing: str = "") -> list[str]:
        """Prune the kept timelines past PODTAX_RUNNER_MEASURED_MAX_AGE_DAYS or _MAX_FILES, then the oldest while a
        new one of `room` bytes (in place of the file `replacing`) would not fit MAX_BYTES (retention.prune), none of
        `unreported`; in a thread."""
        if self.settings.runner_spool_dir is None:
            return []
        return prune(self.settings.runner_spool_dir / MEASURED_DIR, self.settings.runner_measured_max_files,
                     self.settings.runner_measured_max_age_days, unreported, adding, temporary, room, replacing)

    def _keep(self, exc: BaseException, run: events.RunSpec, unreported: set[str]) -> tuple[str, Path | None]:
        """keep_file, after pruning what the retention allows with room for the run's file (its own earlier one,
        of an attempt before a restart, stays and is written over); in a thread."""
        spool = self.settings.runner_spool_dir

        def make_room(size: int) -> None:
            try:  # a folder the runner cannot search: the timeline goes to the log, the failure is still reported
                own = measured_name(run)
                new = not (spool / MEASURED_DIR / own).exists()  # type: ignore[operator]
                self.prune_measured(unreported | {run.run_id}, int(new), room=size, replacing=own)
            except OSError as err:
                log.warning("could not prune the measured timelines in %s (%s): none pruned", spool, err)

        return keep_file(exc, run, spool, make_room)

    def _log_event(self, run: events.RunSpec, text: str, started: datetime) -> events.RawLogV1:
        raw = events.RawLog(run=run, stdout=text, exit_code=0, started_at=started, ended_at=events.now())
        return events.raw_log(raw, SOURCE).model_copy(update={"id": run.event_id("log")})

    async def _mark(self, run: events.RunSpec, tl: Timeline, started: datetime, kept: Path | None,
                    failure: events.RunFailedV1) -> tuple[events.RawLogV1, Path | None] | None:
        """The run's timeline as its raw log (the parser makes the result flagged DELETE_REFUSED of it: a result
        supersedes the failure in the analyzer, the campaign keeps the run failed) and its pending mark beside `kept`
        (pending.py), written BEFORE the failure is reported: marked after, a runner stopped in between lost the result.
        None when it does not fit NATS max_payload (it stays in the kept file only)."""
        event = self._log_event(run, tl.jsonl(), started)
        if self.bus.wire_bytes(event) > self.bus.nc.max_payload:  # headers too
            log.warning("control-plane run %s: its timeline (%d bytes) is above NATS max_payload: its create and "
                        "bind figures are not stored as a result (they are in its kept timeline)", run.run_id,
                        len(event.data.stdout))
            return None
        mark = None
        if kept is not None:
            try:
                mark = await asyncio.to_thread(pending.write, kept, run, started, failure)
            except OSError as err:
                log.warning("control-plane run %s: its result could not be marked pending beside %s (%s): a runner "
                            "stopping before NATS takes it loses it (the kept file has it)", run.run_id, kept, err)
        return event, mark

    async def _send_result(self, run: events.RunSpec, event: events.RawLogV1, mark: Path | None, kept: str) -> None:
        """Publish a DELETE_REFUSED result (`kept`: the file an earlier runner kept it in), then remove its pending
        `mark`; one not taken before the runner stops stays pending, for the next runner."""
        if not await self._publish(run, event, "timeline"):
            if mark is not None:
                log.warning("control-plane run %s: its DELETE_REFUSED result stays pending (%s): the next runner sends "
                            "it", run.run_id, mark)
            return
        await self._reported(run)  # recorded already (its failure): a copy kept meanwhile goes (outbox.release)
        if mark is not None:
            with contextlib.suppress(FileNotFoundError):
                await asyncio.to_thread(mark.unlink)
        earlier = f", kept in {kept} by an earlier runner," if kept else ""
        log.log(logging.WARNING if kept else logging.INFO, "control-plane run %s: its create and bind figures%s go as "
                "a result flagged DELETE_REFUSED", run.run_id, earlier)

    async def send_pending(self, unreported: list[events.RunSpec], kept: dict[str, events.Envelope]) -> None:
        """Send the DELETE_REFUSED results an earlier runner left pending (pending.py), each from its kept file; of a
        run in `unreported` (its failure not recorded as reported), once its failure is sent again (_resend): the copy
        kept by an earlier runner (`kept`), else the mark's (its fixed id: stored once), put in `kept`. Before, such a
        mark was removed and the run ran again: 409 Conflict on its claims left, the result lost (review rC). A mark
        without a failure (an earlier version's) is removed, said: the run runs again."""
        if self.settings.runner_spool_dir is None:
            return
        again = {measured_name(run): run.run_id for run in unreported}
        for mark in await asyncio.to_thread(pending.marks, self.settings.runner_spool_dir / MEASURED_DIR):
            rid = again.get(mark.name.removesuffix(pending.SUFFIX))
            if rid is not None and rid not in kept and (failure := await asyncio.to_thread(pending.failure_of, mark)):
                kept[rid] = failure  # sent again, not the run run again
            if rid is not None and rid in kept:
                self.after_resend[rid] = mark
            elif rid is not None:
                log.info("the pending DELETE_REFUSED result %s is of a run whose failure was not recorded as "
                         "reported: removed, not sent (the run runs again)", mark)
                with contextlib.suppress(OSError):
                    await asyncio.to_thread(mark.unlink)
            elif result := await self._pending(mark):
                task = asyncio.create_task(self._send_result(*result), name=f"control-plane {result[0].run_id}")
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)

    async def _pending(self, mark: Path) -> tuple[events.RunSpec, events.RawLogV1, Path, str] | None:
        """A pending mark's run, raw log, mark and kept file. None, said: a mark that does not read or whose raw log
        cannot be made (a start before 2000 or more than a day ahead: it crashed the runner at every start), removed
        (its kept file stays); one above the max_payload of the server met now, kept pending (an error names the size
        to raise it to: it was taken for NATS away every 10 s)."""
        try:
            run, started, text = await asyncio.to_thread(pending.read, mark)
            event = self._log_event(run, text, started)
        except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
            log.warning("the pending DELETE_REFUSED result %s could not be read (%s): removed, not sent (its "
                        "kept file stays)", mark, " ".join(str(exc).split()))
            with contextlib.suppress(OSError):
                await asyncio.to_thread(mark.unlink)
            return None
        if (size := self.bus.wire_bytes(event)) > self.bus.nc.max_payload:  # a server that came back lower
            log.error("the pending DELETE_REFUSED result %s (run %s) is %s bytes as a raw log, above NATS "
                      "max_payload (%s): kept pending, not sent; raise max_payload in nats-server to at least %s "
                      "and restart the runner to send it", mark, run.run_id, f"{size:,}",
                      f"{self.bus.nc.max_payload:,}", f"{size:,}")
            return None
        return run, event, mark, str(mark.with_name(mark.name.removesuffix(pending.SUFFIX)))

    def _failure(self, run: events.RunSpec, reason: str, detail: str, started: object, fixed: bool = False) -> Failed:
        """The run's failure; `fixed`: under one event id (a pending mark holds it: sent again, stored once)."""
        failure = events.RunFailed(run=run, stage="runner", reason=reason, detail=detail, started_at=started,
                                   ended_at=events.now())
        return events.run_failed(failure, SOURCE, event_id=run.event_id("failure") if fixed else None)

    async def _fail(self, run: events.RunSpec, reason: str, detail: str, started: object,
                    event: Failed | None = None) -> bool:
        """Publish the run's failure (`event`, else one made of the rest); True once NATS took it."""
        if await self._publish(run, event or self._failure(run, reason, detail, started), "failure"):
            await self._reported(run)
            log.warning("control-plane run %s failed: %s", run.run_id, detail)
            return True
        return False

    async def _publish(self, run: events.RunSpec, event: events.Envelope, what: str) -> bool:
        """Publish the run's timeline or failure through its outbox: True once NATS took it (see outbox.Outbox)."""
        return await self.outbox.send(run, event, what)

    def holding(self) -> dict[str, str]:
        """The run ids whose timeline or failure is held here until NATS takes it (none expires meanwhile), with why."""
        return self.outbox.holding()

    async def _resend(self, run: events.RunSpec, event: events.Envelope) -> None:
        mark = self.after_resend.pop(run.run_id, None)  # its DELETE_REFUSED result: after the failure (send_pending)
        if await self.outbox.resend(run, event):
            await self._reported(run)
            if mark is not None and (result := await self._pending(mark)):
                await self._send_result(*result)

    async def _reported(self, run: events.RunSpec) -> None:
        """Recorded as reported; then its kept report, if any, goes (outbox.release)."""
        recorded = await self.on_reported(run) if self.on_reported else True
        await self.outbox.release(run, recorded is not False)

    def cancel(self, campaign: str) -> list[str]:
        """Stop the runs of `campaign` executing here before their next object: each deletes what it created and is
        reported failed with reason `cancelled` (a run whose work is done by then reports its result). Before, a
        cancelled campaign's run went on to its end (minutes at count 100), and its result was stored. The run ids."""
        ids = [rid for rid, (of, _) in self.stops.items() if of == campaign]
        for rid in ids:
            self.cancelled.add(rid)
            self.stops[rid][1].set()
        return ids

    async def close(self, wait_s: float = 60) -> None:
        """Stop every run; each deletes what it created before its thread ends. A report held until NATS takes it
        is given up, said in an error (before, the runner ended without a word of it); a run's task left is
        cancelled."""
        self.stop.set()
        self.outbox.stopping = True  # a report NATS does not take from now is given up
        for _, stop in list(self.stops.values()):
            stop.set()
        futures = list(self.running.values())
        if futures:
            await asyncio.to_thread(concurrent.futures.wait, futures, wait_s)
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.outbox.stop()
        if tasks := list(self.tasks):  # a report being published now goes, or is said not published
            _, left = await asyncio.wait(tasks, timeout=PUBLISH_TIMEOUT_S)
            for task in left:
                task.cancel()
            await asyncio.gather(*left, return_exceptions=True)
