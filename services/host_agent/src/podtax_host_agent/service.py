"""The host agent: runs `run requested` events for its own node and env `host`, one at a time.

It executes registered templates only (podtax.templates): an event names a template and its
parameters; anything that does not validate is refused with a `run failed` event saying why.
A run holds the node lock while it lasts, and a starting agent first reaps what a crashed one left
running (see guard.py), so two runs never overlap on the node. It also follows `campaign cancelled`:
a run of a cancelled campaign is stopped (its processes killed) or not started, and reported failed with
reason `cancelled`, its log unpublished.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import shutil
import time
from pathlib import Path

from nats.js import JetStreamContext
from podtax import events, metrics, natsfetch, subjects, templates
from podtax.bus import Bus, BusError, ConsumerSpec, NatsLost, Permanent
from podtax.config import HostAgentSettings
from podtax.natsagain import Stopped, again_if_reconnected

from podtax_host_agent import facts, guard, keptlogs, measured, outbox, owndir
from podtax_host_agent.clock import check_clock
from podtax_host_agent.execute import (
    device_problem,
    leftover_data_files,
    memory_problem,
    run_template,
    space_problem,
    target_problem,
    workdir_problem,
)
from podtax_host_agent.natsid import DONE_KEEP, STREAM_ASK_S, NatsIdentity

log = logging.getLogger("podtax.host_agent")
CANCEL_WAIT_S = 90.0  # how long a cancellation waits for the run it stops to be reported before it is acked
WAITING_CANCELS_S = 30.0  # at start, how long the cancellations waiting may take before run requests are taken


class Agent(NatsIdentity):
    def __init__(self, settings: HostAgentSettings, bus: Bus) -> None:
        self.settings = settings
        self.bus = bus
        self.node = settings.agent_node
        self.source = f"podtax/host-agent/{self.node}"
        self.facts: events.HostFacts | None = None
        self.published_facts: events.HostFacts | None = None  # the last facts NATS took (a failed publish: again)
        self.workdir = Path(settings.agent_workdir)
        self.state_dir = owndir.state_dir(settings)
        # runs whose log is published (or stopped, cancelled), newest last (redelivery guard), by their log's event
        # id: the run id and its submission (measured.key), as measured's, so the same run id of another submission
        # still runs; the run noted last before this start too (the note holds its key; an older agent's note, the
        # run id alone). Bounded: a request comes back only while unacked, one at a time: the recent ones do.
        # The run noted last and its NATS, judged once the events stream is known (learn_stream).
        self.noted = guard.last_reported_note(self.state_dir)
        self.done: dict[str, None] = dict.fromkeys([self.noted[0]] if self.noted else [])
        # every run measured (and its submission), with its NATS: a request given again by a consumer made again
        # (deleted: the stream replayed from its first message) is not measured again (measured.py)
        self.measured = measured.load(self.state_dir)
        self.lock = guard.NodeLock(self.state_dir)
        # campaigns cancelled, newest last (the last ones noted in the state directory survive a restart), each with
        # the NATS it was cancelled in (guard): self.stream, the events stream of the NATS connected to ('' unknown)
        self.cancelled: dict[str, str] = guard.cancelled_campaigns(self.state_dir)
        self.stream = ""
        self.stream_asked = -STREAM_ASK_S  # when it was asked last (time.monotonic())
        self.outbox_waits = False  # logs kept at start wait for the events stream (flush_outbox): flushed once known
        # the run being handled: its campaign, the event that stops it, the event set once it is reported
        self.current: tuple[str, asyncio.Event, asyncio.Event] | None = None

    def consumer(self) -> ConsumerSpec:
        subject = subjects.join(subjects.RUN_REQUESTED, "host", self.node)
        # One message at a time; ack_wait is extended with in-progress pings while a run lasts.
        return ConsumerSpec(subjects.agent_consumer(self.node), [subject],
                            max_deliver=self.settings.max_deliver, batch=1,
                            ack_wait_s=self.settings.agent_ack_wait_s)

    def cancels_consumer(self) -> ConsumerSpec:
        """Every campaign's cancellation (the operator's CLI alone may publish one: natsauth)."""
        return ConsumerSpec(subjects.agent_cancels_consumer(self.node), [f"{subjects.CAMPAIGN_CANCELLED}.*"],
                            max_deliver=self.settings.max_deliver, batch=1,
                            ack_wait_s=self.settings.agent_ack_wait_s)

    async def take_waiting_cancellations(self, sub: JetStreamContext.PullSubscription, stop: asyncio.Event) -> None:
        """Handle the cancellations waiting in NATS before any run request is taken: a request of a campaign
        cancelled while the agent was away is then refused before it starts, not started and killed moments later.
        Those NATS has delivered count too (a fetch may return before its whole batch came: the rest waits in the
        subscription). Bounded by WAITING_CANCELS_S: past it, or when NATS does not answer, run requests are taken
        anyway and the cancellations left come through their consumer (a run they cancel is stopped then); ends at
        once when `stop` is set."""
        spec = dataclasses.replace(self.cancels_consumer(), batch=100)
        deadline = time.monotonic() + WAITING_CANCELS_S
        taken = 0
        try:
            while (left := deadline - time.monotonic()) > 0:
                if stop.is_set():
                    return
                # asked again once NATS is back (a SIGTERM meanwhile: Stopped), as the dead letters are
                info = await asyncio.wait_for(again_if_reconnected(self.bus.nc, sub.consumer_info), left)
                if not info.num_pending and not natsfetch.queued(sub):
                    if taken:
                        log.info("start-up: took the %d cancellation(s) waiting before any run request", taken)
                    return
                for msg in await self.bus._fetch(sub, spec):
                    await self.bus.handle_message(spec, self.on_cancel, msg)
                    taken += 1
            why = f"more than {WAITING_CANCELS_S:.0f} s"
        except Stopped:  # SIGTERM while a dead letter waited for NATS: a stop, not NATS slow (the agent went on)
            raise
        except Exception as exc:  # noqa: BLE001 - NATS slow or refusing: the consumer takes them later
            why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        log.warning("start-up: the cancellations waiting were not all taken before run requests (%d taken; %s): a run "
                    "of a campaign cancelled meanwhile may start, and is stopped when its cancellation comes", taken,
                    why)

    async def on_cancel(self, event: events.Event) -> None:
        """Note the campaign as cancelled (its requests are refused from now on) and stop its run in flight: its
        processes are killed, it is reported failed with reason `cancelled`. Acked once that is published (or
        after CANCEL_WAIT_S), so an agent killed meanwhile gets the cancellation again."""
        if not isinstance(event, events.CampaignCancelledV1):
            raise Permanent(f"host agent expects run requests or cancellations, got {event.type}")
        name = event.data.campaign
        self.note_cancelled(name, self.stream or guard.noted_now())
        if self.current is not None and self.current[0] == name:  # stopped first: noting it may fail (disk full)
            log.warning("campaign %s cancelled: stopping its run in flight", name)
            self.current[1].set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.current[2].wait(), CANCEL_WAIT_S)
        if not self.stream:  # unknown at start: asked again, so that few notes are judged by the host's clock
            await self.learn_stream_again()
            self.note_cancelled(name, self.stream or self.cancelled.get(name) or guard.noted_now())
        unsafe = self.state_dir_problem()
        if not unsafe:
            try:
                await asyncio.to_thread(guard.note_cancelled, self.state_dir, dict(self.cancelled))
            except OSError as exc:
                unsafe = f"writing it failed ({exc})"
        if unsafe:
            log.error("campaign %s cancelled: not noted in the state directory (a restarted agent would run its "
                      "requests): %s", name, unsafe)

    def clean_up_after_crash(self) -> None:
        """Reap a crashed agent's leftover benchmark processes and data files (call before consuming)."""
        if (done := guard.reap(self.state_dir)) is not None:
            log.warning("start-up: %s", done)
        for path in leftover_data_files(self.workdir):
            path.unlink(missing_ok=True)
            log.warning("start-up: deleted %s, left by an interrupted run", path)

    async def refresh_facts(self) -> None:
        current = await asyncio.to_thread(facts.collect, self.node, self.settings.cluster)
        if current != self.published_facts:
            self.facts = current
            await outbox.publish_event(self.bus, events.host_facts(current, self.source), "the host's facts")
            self.published_facts = current
            log.info("host facts published: %s", current.tool_versions)

    async def refuse(self, run: events.RunSpec, reason: str, detail: str, outcome: str = "refused") -> None:
        failure = events.RunFailed(run=run, stage="agent", reason=reason, detail=detail)
        event = events.run_failed(failure, self.source).model_copy(update={"id": run.event_id("agent-failed")})
        await outbox.publish_event(self.bus, event, f"the failure of run {run.run_id} ({reason})")
        # noted once published, as a run measured: given again (a stream replayed) it is not run, its cause gone or not
        # (the runner recorded it failed; a late result would supersede that failure); the state directory unsafe,
        # in memory only
        measured.add(None if self.state_dir_problem() else self.state_dir, self.measured, run,
                     self.stream or guard.noted_now())
        metrics.AGENT_RUNS.labels(run.test, outcome).inc()
        log.warning("refused run %s: %s", run.run_id, detail)

    def state_dir_problem(self) -> str | None:
        """Why the agent must not write in its state directory now (owndir.recheck), or None."""
        if why := owndir.recheck(self.state_dir):
            return (f"the state directory {why}, or set PODTAX_AGENT_STATE_DIR to another: another user could put "
                    f"links there that this agent writes through, or logs it would publish as its own")
        return None

    async def refuse_cancelled(self, run: events.RunSpec) -> None:
        await self.refuse(run, "cancelled", f"campaign {run.campaign} was cancelled; run not started", "cancelled")

    async def handle(self, event: events.Event) -> None:
        if not isinstance(event, events.RunRequestedV1):
            raise Permanent(f"host agent expects run requests, got {event.type}")
        run = event.data.run
        if run.env != "host" or run.node != self.node:
            raise Permanent(f"run {run.run_id} is for {run.env}/{run.node}, not host/{self.node}")
        await self.learn_stream_for(run)  # the stream unknown: its note, its kept log are judged by it
        if not self.stream and self.noted and self.noted_is(run):  # a second log of it: de-duplicated
            log.warning("run %s is noted reported, but the events stream is unknown: in this NATS or an earlier one "
                        "cannot be told; measured again", run.run_id)
            self.done.pop(self.noted[0], None)
            self.noted = None
        done = measured.key(run) in self.done or run.run_id in self.done  # run.run_id: an older agent's note
        if done or measured.counts(self.measured, run, self.stream):
            log.info("run %s was run (or refused) and reported already; not running it again", run.run_id)
            return
        if self.is_cancelled(run.campaign):
            await self.refuse_cancelled(run)
            return
        self.current = (run.campaign, asyncio.Event(), asyncio.Event())
        try:
            await self.execute(run)
        finally:
            self.current[2].set()
            self.current = None

    async def execute(self, run: events.RunSpec) -> None:
        if why := self.state_dir_problem():  # before anything is read or written there (lock, outbox)
            await self.refuse(run, "unsafe-state-dir", why)
            return
        if not self.stream and (where := outbox.set_aside_unverified(self.state_dir, run.run_id)):  # asked: handle
            log.warning("the kept log of run %s not published: the events stream is unknown, it may have been "
                        "measured under another NATS; set aside as %s, the run is measured again", run.run_id, where)
        if (kept := outbox.load(self.state_dir, run.run_id, self.settings.agent_output_cap_bytes)) is not None:
            if keptlogs.set_aside_superseded(self, kept, outbox.kept(self.state_dir), f"run {run.run_id}"):
                return  # an earlier attempt's request given again: its planned run is measured by the later one
            log.info("run %s was measured already; publishing its kept log instead of running it again", run.run_id)
            await self.report(kept)
            return
        try:
            template = templates.get(run.test)
            template.build_argv(run.params, str(self.settings.agent_workdir))
        except templates.TemplateError as exc:
            await self.refuse(run, exc.reason, exc.detail)
            return
        if problem := device_problem(run):
            await self.refuse(run, "bad-device", problem)
            return
        if problem := target_problem(run):
            await self.refuse(run, "bad-target", problem)
            return
        version = (self.facts.tool_versions if self.facts else {}).get(template.tool)
        # uninstalled since the facts: the tool, as the facts looked it up (a loopback network run's argv starts
        # with the agent's own python)
        if version is None or not shutil.which(template.version_argv[0], path=facts.tool_path()):
            await self.refuse(run, "tool-missing", f"{template.tool} is not installed on node {self.node}; "
                                                   f"install it (e.g. apt-get install {template.tool})")
            return
        if problem := guard.launcher_problem():
            await self.refuse(run, "agent-broken", problem)
            return
        lock_fd = await self.lock.acquire()  # waits while processes of an earlier run still hold the node
        unsafe = None
        try:
            if self.is_cancelled(run.campaign):  # cancelled while it waited for the node
                await self.refuse_cancelled(run)
                return
            if unsafe := self.state_dir_problem():  # again: the wait has no bound, time for it to change hands
                await self.refuse(run, "unsafe-state-dir", unsafe)
                return
            if problem := workdir_problem(self.workdir):
                await self.refuse(run, "unsafe-workdir", problem)
                return
            if problem := space_problem(run, self.workdir):
                await self.refuse(run, "insufficient-space", problem)
                return
            if problem := memory_problem(run):
                await self.refuse(run, "insufficient-memory", problem)
                return
            log.info("running %s %s (run %s)", run.test, templates.params_key(run.params), run.run_id)
            out = await run_template(run, self.settings.agent_output_cap_bytes, self.workdir, version,
                                     pass_fds=(lock_fd,),
                                     on_start=lambda pid, marker: guard.record(self.state_dir, pid, run.run_id,
                                                                               marker),
                                     stop=self.current[1] if self.current else None)
        finally:
            if unsafe or (unsafe := self.state_dir_problem()):
                log.error("run %s: nothing removed from the state directory after it: %s", run.run_id, unsafe)
            else:
                guard.clear(self.state_dir)
            os.close(lock_fd)
        if why := guard.exec_failure(out.exit_code, out.stderr):  # nothing ran: no log of a run
            await self.refuse(run, "exec-failed", f"{why} (node {self.node}); reinstall {template.tool}")
            return
        if out.cancelled:  # killed mid-way: its partial output is no measurement; nothing kept in the outbox
            await self.refuse(run, "cancelled", f"campaign {run.campaign} was cancelled; the run was stopped after "
                                                f"{(out.ended_at - out.started_at).total_seconds():.1f} s", "cancelled")
            if not self.state_dir_problem():
                guard.reported(self.state_dir, measured.key(run), self.stream)  # its redelivery is skipped
            self.remember(run)
            return
        raw = events.RawLog(run=run, stdout=out.stdout, stderr=out.stderr, exit_code=out.exit_code,
                            started_at=out.started_at, ended_at=out.ended_at, tool_version=version,
                            truncated=out.truncated, timed_out=out.timed_out,
                            provenance=events.Provenance(kernel=self.facts.kernel if self.facts else None,
                                                         cpu_model=self.facts.cpu_model if self.facts else None,
                                                         hw_threads=self.facts.hw_threads if self.facts else None))
        event = events.raw_log(raw, self.source).model_copy(update={"id": run.event_id("log")})
        nats = self.stream or f"@{out.started_at.timestamp():.6f}"  # unknown: measured before a stream made later
        if remade := await self.stream_remade(out.started_at.timestamp()):  # not this NATS's run: kept, never published
            if not self.state_dir_problem():
                await asyncio.to_thread(outbox.save, self.state_dir, event, nats)
            log.error("run %s: the events stream changed while it ran (%s, now %s): its log is kept under the earlier "
                      "NATS, not published as this one's run; %s", run.run_id, self.stream or "unknown", remade,
                      "stopping" if self.stream else "unless NATS was reset (this host's clock behind the server's "
                      "reads so too), its request comes again and the run is measured again")
            raise NatsLost(f"the events stream changed while run {run.run_id} ran: NATS was reset")
        await self.report(event, keep=True, nats=nats)
        outcome = "timeout" if out.timed_out else ("ok" if out.exit_code == 0 else "failed")
        metrics.AGENT_RUNS.labels(run.test, outcome).inc()
        metrics.AGENT_RUN_SECONDS.labels(run.test).observe((out.ended_at - out.started_at).total_seconds())

    async def report(self, event: events.RawLogV1, keep: bool = False, nats: str = "") -> None:
        """Publish a run's log; with `keep`, it is written to the outbox first, so that when NATS cannot take
        it the redelivered request publishes it rather than measuring again. The state directory is checked again
        first (a run may last an hour, time for it to be removed and made again by another user): when it became
        unsafe, the log is published without a word written there. `nats`: the NATS it was measured under (the events
        stream, '' the one known)."""
        run_id, nats = event.data.run.run_id, nats or self.stream
        if unsafe := self.state_dir_problem():
            log.error("run %s: publishing its log without keeping or noting it: %s", run_id, unsafe)
        elif keep:
            await asyncio.to_thread(outbox.save, self.state_dir, event, nats)
        await outbox.publish(self.bus, event, self.state_dir, kept=not unsafe)
        # noted before the outbox copy goes: an agent killed between the two then publishes the kept log again
        # (the analyzer stores a run once), where the other order left nothing saying the run was done
        if not unsafe:
            measured.add(self.state_dir, self.measured, event.data.run, nats)
            guard.reported(self.state_dir, measured.key(event.data.run), nats)
            outbox.remove(self.state_dir, run_id)
        self.remember(event.data.run)

    def remember(self, run: events.RunSpec) -> None:
        """Note a run (and its submission: measured.key) as done in memory (bounded: DONE_KEEP)."""
        self.done[measured.key(run)] = None
        if len(self.done) > DONE_KEEP:
            del self.done[next(iter(self.done))]

    async def flush_outbox(self, when: str = "start-up") -> None:
        """Publish the logs kept in the outbox (keptlogs.flush)."""
        await keptlogs.flush(self, when)

    async def facts_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), self.settings.agent_facts_interval_s)
            except TimeoutError:
                try:
                    await self.refresh_facts()
                except Exception as exc:  # noqa: BLE001 - NATS away or its stream full: the run in flight goes on
                    log.error("host facts not published (%s: %s); trying again in %.0f s", type(exc).__name__, exc,
                              self.settings.agent_facts_interval_s)


async def serve(settings: HostAgentSettings, bus: Bus, stop: asyncio.Event) -> None:
    agent = Agent(settings, bus)
    cancels = await cancels_subscription(agent)  # before any run request: a run must be stoppable
    await agent.learn_stream()
    await check_clock(bus, settings.agent_node)  # a clock over a day ahead: everything it sends is refused
    await asyncio.to_thread(agent.clean_up_after_crash)
    await agent.refresh_facts()
    await agent.flush_outbox()
    await agent.take_waiting_cancellations(cancels, stop)  # before any run request: none of them starts to be killed
    tasks = [asyncio.create_task(agent.facts_loop(stop)), asyncio.create_task(keptlogs.retry_loop(agent, stop)),
             asyncio.create_task(bus.consume(agent.cancels_consumer(), agent.on_cancel, stop, sub=cancels)),
             asyncio.create_task(bus.consume(agent.consumer(), agent.handle, stop))]
    try:
        await asyncio.gather(*tasks)  # either consumer failing stops the agent
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def cancels_subscription(agent: Agent) -> JetStreamContext.PullSubscription:
    """The consumer of campaign cancellations; NATS permissions older than this agent refuse it (no answer):
    BusError saying so (one line, exit 3), before any run starts."""
    spec = agent.cancels_consumer()
    reconnects = agent.bus.nc.stats["reconnects"]
    try:
        return await agent.bus._subscribe(spec)
    except TimeoutError:
        if not agent.bus.nc.is_connected:
            raise
        if agent.bus.nc.stats["reconnects"] != reconnects:  # asked a server that died (NATS restarted): ask again
            return await cancels_subscription(agent)
        raise BusError(f"NATS refuses this agent's consumer of campaign cancellations ({spec.durable}): its "
                       "permissions are older than this agent; regenerate and apply deploy/k8s/nats-auth.conf (`podtax "
                       "nats-auth conf NODE...`, `kubectl apply -k`), or restart `podtax up`") from None
