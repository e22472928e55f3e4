"""The runner: plans campaigns, dispatches one run at a time per node, follows outcomes and cell
statistics, retries runs that never report back, and keeps its state in JetStream KV (one small
document per run, see state.py), so campaigns of any size within MAX_RUNS save and resume."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from datetime import datetime

from nats.js.errors import KeyValueError
from nats.js.kv import KeyValue
from opentelemetry import trace
from podtax import events, metrics, subjects, telemetry, templates
from podtax.bus import Bus, BusError, ConsumerSpec
from podtax.busmessages import NATS_AWAY
from podtax.config import RunnerSettings
from podtax.natsagain import Stopped

from podtax_runner import catchup, clockjump, documents, fullness, kept, outbox, saved, simulate, spool
from podtax_runner.controlplane.dispatch import EXECUTING_S, ControlPlaneExecutor
from podtax_runner.handlers import Handlers
from podtax_runner.kube import KubeExecutor
from podtax_runner.outbox import refused
from podtax_runner.spool import Spool
from podtax_runner.state import CampaignState

log = logging.getLogger("podtax.runner")


def nats_side(exc: BaseException) -> bool:
    """Whether `exc` says NATS is away, did not answer in time (or before the runner was told to stop: Stopped, a
    pipelined save or publish's acks cut short by a SIGTERM), or lost what podtax keeps there (a NATS server
    restarted with an empty store): not a runner bug."""
    return isinstance(exc, (*NATS_AWAY, BusError, TimeoutError, Stopped)) and not isinstance(exc, KeyValueError)


def logged(exc: Exception, what: str, *args: object) -> None:
    """Log a failure of the dispatch path: a NATS-side one in one line (its type and message: the service's own
    'NATS lost' line, or NATS coming back, says the rest), any other with its traceback."""
    if nats_side(exc):
        log.error(f"{what}: %s: %s", *args, type(exc).__name__, exc)
    else:
        log.exception(what, *args)
SOURCE = "podtax/runner"
TICK_S = 0.25
# An outcome delivered to a runner that died before acking it comes back after this long; it must be
# well below a run's timeout + PODTAX_RUNNER_REPORT_GRACE_S, or the run would expire (no-report) first.
OUTCOME_ACK_WAIT_S = 10.0
OUTCOMES = "runner-outcomes"  # the durable consumer of run results and failures
# Pipelined publishes wait for their acks without a deadline in nats-py: while NATS is down a save would
# hang holding the lock, and every node would stall. A save that takes longer has failed.
SAVE_TIMEOUT_S = 10.0


def clock() -> float:
    return time.monotonic()


class Runner(Handlers):  # the event handlers: handlers.py
    def __init__(self, settings: RunnerSettings, bus: Bus, kv: KeyValue, executor: KubeExecutor | None) -> None:
        self.settings = settings
        self.bus = bus
        self.kv = kv
        self.executor = executor  # None when pod runs are disabled
        self.controlplane = ControlPlaneExecutor(settings, bus)  # volume-churn, pod-startup
        # where a refused report is kept when the runner's bucket refuses it too (the server's storage used up)
        self.spool = Spool(settings.runner_spool_dir) if settings.runner_spool_dir else None
        for ex in (executor, self.controlplane):
            if ex:
                ex.on_reported, ex.outbox.submitted_of = self.on_reported, self.submitted_at
                ex.outbox.spool = self.spool
        self.controlplane.in_flight = self.in_flight
        if executor:
            executor.on_image_versions = self.record_image
        self.campaigns: dict[str, CampaignState] = {}  # the campaigns not finished, with every run
        # finished campaigns, by name only: their state (about 2 KB a run) stays in KV, not in memory
        self.finished: set[str] = set()
        self.submissions: dict[str, trace.SpanContext] = {}  # campaign -> its submission's span
        self.lock = asyncio.Lock()
        self.wake = asyncio.Event()  # set when an outcome may free a node: dispatch without waiting a tick
        self.unreported: list[events.RunFailedV1] = []  # expired runs whose failure is not on the bus yet
        # False from a restart until the outcome consumer has handled its backlog (catchup.py): no run
        # expires meanwhile, and the runs then in flight get their grace from the moment it is done
        self.caught_up = True
        # NATS's room for reports: no run expires while it wants some; and its refusals of the runner's own events
        # (requests, simulated results, no-report failures), written in the state of the campaigns they were for
        # (Header.stalled) until NATS takes them again (fullness.py)
        self.room = fullness.Room(bus, kv, lambda: clock())
        self.steps = clockjump.Steps()  # the wall clock stepping (NTP, a VM resumed) while runs are in flight

    def failed(self, exc: Exception, where: list[fullness.Where], what: str, *args: object) -> None:
        """logged(), but NATS refusing the runner's events for want of room (outbox.refused) is said once a minute
        per reason (each tick, 4 a second, said it again) and noted for the state of the campaigns in `where`
        ((campaign, node) pairs)."""
        if not refused(exc):
            logged(exc, what, *args)
            return
        self.room.refused(exc, where, what % args)

    async def _values(self, pattern: str) -> list[tuple[str, bytes]]:
        return await saved.values(self.bus, self.kv, pattern)  # NATS restarting meanwhile waited for

    async def load(self) -> None:
        for _, value in await self._values("campaign.*"):
            header = json.loads(value)
            name = header["name"]
            legacy = documents.is_legacy(header)
            if header.get("finished_at") and not legacy:  # nothing left to do: its runs are not read
                self.finished.add(name)
                continue
            runs = [] if legacy else [v for _, v in await self._values(f"run.{name}.*")]
            cells = [] if legacy else [v for _, v in await self._values(f"cell.{name}.*")]
            state = CampaignState.from_documents(header, runs, cells)
            state.resumed(await self.now())
            self.campaigns[state.name] = state
            await self.save(state)  # a legacy state is rewritten as documents; otherwise only the header
        active = [c for c in self.campaigns.values() if c.finished_at is None]
        log.info("resumed %d campaigns (%d active)", len(self.campaigns) + len(self.finished), len(active))
        kept_copies = await kept.copies(self.kv, self.spool, await self._values(f"{outbox.KEPT}.>"), active)
        # before any run is resumed: no timeline is being written (a temporary file left is a crash's)
        await asyncio.to_thread(self.controlplane.prune_measured, self.in_flight(), 0, True)
        await self.controlplane.send_pending([state.stamped(s.run) for state in active for s in state.runs.values()
                                              if s.status == "dispatched" and s.reported_at is None], kept_copies)
        for state in active:
            for s in state.runs.values():
                if s.status != "dispatched":
                    continue
                s = s.model_copy(update={"run": state.stamped(s.run)})  # sent again as first sent
                if s.reported_at is not None:  # its log or failure is on the bus: wait for it, never run it again
                    log.info("run %s reported before the restart; waiting for its outcome", s.run.run_id)
                    continue
                if (event := kept_copies.get(s.run.run_id)) is not None:  # its report, refused by NATS, kept by the
                    # runner before: sent, not run again (before, the measurement made was lost: outbox.py)
                    pod = s.run.env == "kubernetes" and self.executor and not templates.get(s.run.test).control_plane
                    (self.executor if pod else self.controlplane).resend(s.run, event)
                elif templates.get(s.run.test).control_plane:
                    self.controlplane.launch(s.run, resume=True)  # removes what it left, runs it again
                elif s.run.env == "kubernetes" and self.executor:
                    self.executor.launch(s.run, state.campaign.pod, state.created_at)  # re-attaches to its Job
                elif s.run.env == "host" and not self.settings.runner_simulate:
                    await self.request_again(s.run)
            if state.cancelled_at:  # cancelled before the restart: a resumed control-plane run only removes what
                self.controlplane.cancel(state.name)  # the earlier attempt left, and is recorded as cancelled
                if self.executor:  # a resumed pod run deletes its Job (or makes none): recorded as cancelled
                    self.executor.cancel(state.name)

    def in_flight(self) -> set[str]:
        """The run ids in flight in the campaigns not finished (their outcome not stored yet)."""
        return {f.run.run_id for c in self.campaigns.values() if not c.finished_at for node in c.queues
                if (f := c.in_flight(node))}

    async def request_again(self, run: events.RunSpec) -> None:
        """Send a host run's request again: a runner killed between saving the run in flight and sending it
        left it unsent, and it failed no-report after timeout + grace (a CI). Under the same event id, one sent
        already is dropped by JetStream's de-duplication, and an agent that ran it does not run it again."""
        try:
            await asyncio.wait_for(self.bus.publish(request(run)), SAVE_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - it then expires (no-report) and is retried, as before
            log.warning("could not send run %s's request again: %s", run.run_id, exc)

    async def catch_up(self, stop: asyncio.Event) -> None:
        """Let runs expire once the outcome consumer has handled its backlog; runs in flight then get
        their grace from now (CampaignState.resumed_at)."""
        await catchup.caught_up(self.bus.js, subjects.STREAM, OUTCOMES, stop)
        async with self.lock:
            now = await self.now()
            for state in self.campaigns.values():
                if state.resumed_at is not None:
                    state.resumed_at = now
            self.caught_up = True

    async def record_image(self, image: str, versions: dict[str, str]) -> None:
        """Tool versions seen inside a benchmark image (the CLI warns when hosts differ)."""
        key = f"image.{subjects.kv_token(image)}"
        old = await Bus.kv_json(self.kv, key) or {"image": image, "tool_versions": {}}
        if any(old["tool_versions"].get(k) != v for k, v in versions.items()):
            old["tool_versions"].update(versions)
            await self.kv.put(key, json.dumps(old).encode())

    async def save(self, state: CampaignState) -> None:
        """Write what changed since the last save (small documents, pipelined); raises when NATS refuses."""
        docs = state.dirty_documents()
        for i in range(0, len(docs), 10_000):
            chunk = docs[i:i + 10_000]
            await asyncio.wait_for(self.bus.kv_put_many(subjects.RUNNER_BUCKET, chunk),
                                   SAVE_TIMEOUT_S + len(chunk) / 1000)
        state.clear_dirty()
        if state.finished_at is not None and self.campaigns.get(state.name) is state:
            # saved as finished: late outcomes and statistics of it change nothing, so its runs leave memory
            del self.campaigns[state.name]
            self.submissions.pop(state.name, None)
            self.finished.add(state.name)

    async def known_nodes(self) -> dict[str, dict]:
        return {doc["node"]: doc for doc in await Bus.kv_json_all(self.kv, "node.")}

    # ------------------------------------------------------------ dispatch

    async def tick(self, now: datetime | None = None) -> None:
        """Expire runs that never reported, then send each idle node its next run. The time is read once
        the lock is held: read before, a tick that waited behind a long save (15 s for a 100,000-run
        campaign on a slow VM) dated its runs that much in the past, and the next tick expired them all."""
        async with self.lock:
            now = now or await self.now()  # a step of the wall clock moves deadlines (Handlers.now)
            active = sorted((c for c in self.campaigns.values() if not c.finished_at), key=lambda c: c.created_at)
            busy = {node for c in active for node in c.queues if c.in_flight(node)}
            # a control-plane run times the cluster's API, not its node: one at a time, runner-wide (an audit: a
            # campaign on two nodes ran two at once, each timing the other's load). Told by the campaigns' in-flight
            # runs, not the executor's executing(): a run in flight from before a restart, not resumed yet, holds the
            # API too; so does a reported run until its outcome is stored (the next one waits that long)
            api_busy = any(templates.get(flight.run.test).control_plane
                           for c in active for node in c.queues if (flight := c.in_flight(node)))
            await self.report()  # no-report failures a tick could not publish (NATS away or refusing them)
            # the runs whose report an executor holds until NATS takes it, each with why (outbox.Outbox)
            held = {**self.controlplane.holding(), **(self.executor.holding() if self.executor else {})}
            if await self.room.look_at_the_stream():  # room again: the runs in flight get their grace from now
                for state in active:
                    state.resumed_at = now
            for state in active:
                # a control-plane run still executing here is not lost: its cleanup may outlast timeout + grace (a
                # hung DELETE sent again, then 30 s of waiting); expired, it ran twice, both stored (an audit). It is
                # given EXECUTING_S more, not for ever: a stuck executor would hold every control-plane run
                # nor one whose report an executor holds until NATS takes it (NATS may store it yet: expired, it ran
                # twice), a pod run's too; nor one while NATS has no room for its report (fullness.py)
                expiry = (now, self.settings.runner_report_grace_s, self.controlplane.executing(), EXECUTING_S)
                expired = []
                if self.caught_up and not self.room.full:
                    wanting, released = await self.room.holding(s.run for s in state.due(*expiry, held))
                    if released:  # room again for a run held: its campaign's runs in flight get their grace again
                        state.resumed_at = now
                    expired = state.expired(*expiry, held.keys() | wanting.keys())
                await self.note_held(state, held)
                for run, again in expired:
                    detail = (f"no result within {run.timeout_s:g} s + grace; "
                              + ("retrying once" if again else "not retried again"))
                    self.unreported.append(events.run_failed(events.RunFailed(
                        run=run, stage="runner", reason="no-report", detail=detail), SOURCE,
                        event_id=f"{run.run_id}.no-report"))
                    busy.discard(run.node)
                if expired:  # published before saved: a runner restarted in between expires the run again,
                    if not await self.report():  # and the same event id is dropped by JetStream's de-duplication
                        continue  # kept: published (then saved) by a later tick
                    await self.save(state)
                batch = []
                for node in state.queues:
                    if node in busy:
                        continue
                    run = state.next_for(node, now)
                    if run is None or (api_busy and templates.get(run.test).control_plane):
                        continue
                    api_busy = api_busy or templates.get(run.test).control_plane
                    state.dispatched(run.run_id, now)
                    batch.append(run)
                    busy.add(node)
                if batch:
                    await self.dispatch_all(batch, state)

    async def note_held(self, state: CampaignState, held: dict[str, str]) -> None:
        """Write in the campaign's state why its runs' reports are held (NATS refusing them: the stream full), so
        `podtax campaign status` says why the campaign does not move; cleared once NATS took them. Before, only the
        runner's log said it, and the campaign looked merely slow for ever. Saved only when it changed."""
        mine = {rid: why for rid, why in sorted(held.items()) if why and rid in state.runs}
        flying = [f.run.run_id for node in state.queues if (f := state.in_flight(node))]
        stalled = self.room.stalled(state.name, flying)
        if (mine, stalled) == (state.header.held, state.header.stalled):
            return
        state.header.held, state.header.stalled = mine, stalled
        try:
            await self.save(state)
        except Exception as exc:  # noqa: BLE001 - the header goes with the next save
            logged(exc, "could not record the held reports of %s", state.name)

    async def report(self) -> bool:
        """Publish the no-report failures recorded in memory; kept for the next tick when NATS refuses (False)."""
        if not self.unreported:
            return True
        where = [(e.data.run.campaign, e.data.run.node) for e in self.unreported]
        try:
            await asyncio.wait_for(self.bus.publish_many(self.unreported), SAVE_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - kept for the next tick; this one dispatches all the same
            self.failed(exc, where, "could not publish %d no-report failures (kept)", len(self.unreported))
            return False
        self.unreported.clear()
        self.room.taken(where)
        return True

    async def dispatch_all(self, runs: list[events.RunSpec], state: CampaignState) -> None:
        """Persist the runs as in flight, then send them. A failed save or send releases the node:
        the run goes back to planned (tried again next tick) instead of blocking the node until it times out."""
        try:
            await self.save(state)  # persisted before it is sent: a restart never sends twice
        except Exception as exc:  # noqa: BLE001 - the runs go back to planned; the error is logged
            for run in runs:
                state.undispatched(run.run_id)
            logged(exc, "could not record %d runs of %s as in flight; released their nodes", len(runs), state.name)
            return
        if self.settings.runner_simulate:
            try:
                await asyncio.wait_for(self.bus.publish_many([simulate.result(run) for run in runs]),
                                       SAVE_TIMEOUT_S)
                self.room.taken((state.name, run.node) for run in runs)
            except Exception as exc:  # noqa: BLE001 - the runs go back to planned; the error is logged
                for run in runs:
                    state.undispatched(run.run_id)
                self.failed(exc, [(state.name, run.node) for run in runs],
                            "could not publish simulated results of %s; released their nodes", state.name)
            return
        for run in runs:
            try:
                await self.dispatch(run, state)
                self.room.taken([(state.name, run.node)])
            except Exception as exc:  # noqa: BLE001 - the run goes back to planned; the error is logged
                state.undispatched(run.run_id)
                self.failed(exc, [(state.name, run.node)], "could not send run %s; released node %s", run.run_id,
                            run.node)

    async def dispatch(self, run: events.RunSpec, state: CampaignState) -> None:
        """Send one run, inside the root span of the run's trace (linked to the campaign's submission)."""
        submitted = self.submissions.get(run.campaign)
        links = [trace.Link(submitted)] if submitted is not None and submitted.is_valid else []
        with telemetry.run_root_span(f"run {run.test} {run.env}", run.run_id, links, **{
                "podtax.campaign": run.campaign, "podtax.node": run.node, "podtax.env": run.env}):
            await self._dispatch(run, state)
        metrics.RUNS_DISPATCHED.labels(run.env).inc()

    async def _dispatch(self, run: events.RunSpec, state: CampaignState) -> None:
        if templates.get(run.test).control_plane:
            self.controlplane.launch(run)
            return
        if run.env == "host":
            await self.bus.publish(request(run))
        elif self.executor:
            self.executor.launch(run, state.campaign.pod, state.created_at)
        else:
            await self.bus.publish(events.run_failed(events.RunFailed(
                run=run, stage="runner", reason="no-kubernetes",
                detail="pod runs need the Kubernetes executor: set PODTAX_RUNNER_KUBECONFIG or run in-cluster"),
                SOURCE))

    async def loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.tick()
            except Exception as exc:  # noqa: BLE001 - keep dispatching; the error is logged
                self.failed(exc, [], "dispatch tick failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._woken(stop), TICK_S)
            self.wake.clear()

    async def _woken(self, stop: asyncio.Event) -> None:
        waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self.wake.wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()


def request(run: events.RunSpec) -> events.RunRequestedV1:
    """A host run's request, under one event id however often it is sent."""
    return events.run_requested(run, SOURCE).model_copy(update={"id": run.event_id("request")})


async def serve(settings: RunnerSettings, bus: Bus, stop: asyncio.Event) -> None:
    executor = KubeExecutor.create(settings, bus) if settings.runner_kubernetes else None
    if not settings.runner_spool_dir:  # one line at start: what a restart loses without it
        log.warning(spool.UNSET)
    try:
        runner = Runner(settings, bus, await bus.kv(subjects.RUNNER_BUCKET), executor)
        await runner.load()
    except Exception as exc:  # NATS not answering: one line (saved.py)
        if not nats_side(exc) or isinstance(exc, (BusError, Stopped)):
            raise
        raise saved.unanswered(exc, settings.nats_url, stop.is_set()) from None
    runner.caught_up = False
    if executor:
        for doc in await asyncio.to_thread(executor.nodes):
            await runner.merge_node(doc["node"], doc)
    md = settings.max_deliver
    tasks = [
        bus.consume(ConsumerSpec("runner-facts", [f"{subjects.HOST_FACTS}.>"], md), runner.on_facts, stop),
        bus.consume(ConsumerSpec("runner-campaigns", [f"{subjects.CAMPAIGN_SUBMITTED}.>"], md),
                    runner.on_campaign, stop),
        bus.consume(ConsumerSpec("runner-cancels", [f"{subjects.CAMPAIGN_CANCELLED}.>"], md), runner.on_cancel, stop),
        bus.consume_batches(ConsumerSpec(OUTCOMES, [f"{subjects.RUN_RESULT}.>", f"{subjects.RUN_FAILED}.>"],
                                         md, ack_wait_s=OUTCOME_ACK_WAIT_S, batch=500), runner.on_outcomes, stop),
        bus.consume(ConsumerSpec("runner-cells", [f"{subjects.CELL_STATS}.>"], md), runner.on_cell_stats, stop),
        runner.loop(stop),
        runner.catch_up(stop),
    ]
    try:
        await asyncio.gather(*tasks)
    finally:
        await runner.controlplane.close()
        if executor:
            await executor.close()
