"""The runner's event handlers: host facts, campaign submissions (planned, or refused with the reason where
`podtax campaign status` looks), cancellations, run outcomes, cell statistics and the executors' reports. A mixin of
:class:`podtax_runner.service.Runner`, which owns the campaigns they change, the lock and the saves.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import NoReturn

from nats.js.kv import KeyValue
from opentelemetry import trace
from podtax import events, metrics, subjects, templates
from podtax.bus import Bus, Permanent
from podtax.busconsume import HANDLED_SEQUENCE
from podtax.campaign import Campaign, refusal
from podtax.config import RunnerSettings
from pydantic import ValidationError

from podtax_runner import clockjump
from podtax_runner.controlplane import dispatch
from podtax_runner.kube import KubeExecutor
from podtax_runner.state import CampaignState

log = logging.getLogger("podtax.runner")


class Handlers:
    # what the handlers use of the Runner
    settings: RunnerSettings
    bus: Bus
    kv: KeyValue
    executor: KubeExecutor | None
    controlplane: dispatch.ControlPlaneExecutor
    campaigns: dict[str, CampaignState]
    finished: set[str]
    submissions: dict[str, trace.SpanContext]
    lock: asyncio.Lock
    wake: asyncio.Event
    save: Callable[[CampaignState], Awaitable[None]]
    known_nodes: Callable[[], Awaitable[dict[str, dict]]]
    steps: clockjump.Steps

    async def now(self) -> datetime:
        """The wall-clock time, read under the lock for every time recorded in the campaigns' state: a step of it since
        the previous reading first moves the times the runs in flight count from (clockjump.py; before, a time
        recorded between the step and the next tick was moved again then: a report's by 2 h held its node 2 h too
        long, or expired the run as it reported), then saves them (before, only the run's next write did: a runner
        restarted meanwhile expired a run still running). A failed save leaves them, and those of the campaigns after it
        (not tried: each save waits up to SAVE_TIMEOUT_S under the lock), to each campaign's next save."""
        now = self.steps.now(self.campaigns.values())
        moved, self.steps.moved = self.steps.moved, []
        for i, state in enumerate(moved):
            try:
                await self.save(state)
            except Exception as exc:  # noqa: BLE001 - see above
                log.warning("could not save the runs of %s moved by the clock's step (%s: %s): they and those of %d "
                            "other campaigns go with each one's next save", state.name, type(exc).__name__, exc,
                            len(moved) - i - 1)
                break
        return now

    async def on_facts(self, event: events.Event) -> None:
        if isinstance(event, events.HostFactsV1):
            f = event.data
            await self.merge_node(f.node, {"node": f.node, "cluster": f.cluster, "hw_threads": f.hw_threads,
                                           "arch": f.arch, "tool_versions": f.tool_versions, "host_agent": True,
                                           "seen": event.time.isoformat()})

    async def merge_node(self, node: str, doc: dict) -> None:
        """Node facts in KV, merged from host facts and the Kubernetes node list (CLI reads them)."""
        old = await Bus.kv_json(self.kv, subjects.node_key(node)) or {}
        merged = {**old, **doc}
        if old.get("host_agent") and not doc.get("host_agent"):  # host facts outrank node capacity
            merged["hw_threads"] = old["hw_threads"]
        if merged != old:
            await self.kv.put(subjects.node_key(node), json.dumps(merged).encode())

    async def on_campaign(self, event: events.Event) -> None:
        if not isinstance(event, events.CampaignSubmittedV1):
            raise Permanent(f"unexpected {event.type}")
        try:
            campaign = Campaign.model_validate(event.data.spec)
        except ValidationError as exc:  # permanent: retrying the same spec cannot help
            first = exc.errors()[0]
            where = ".".join(map(str, first["loc"]))
            await self.refuse(event.data.campaign, f"campaign {event.data.campaign}: {where}: "
                                                   f"{templates.pydantic_msg(first['msg'])}", event.time)
        # each run's trace links to the submission's (kept in memory: after a restart, no link)
        self.submissions[campaign.name] = trace.get_current_span().get_span_context()
        if campaign.name in self.campaigns or campaign.name in self.finished:  # one at a time, in order
            planned = self.campaigns[campaign.name].header.submitted if campaign.name in self.campaigns else None
            if events.same_submission(planned, event.time):  # unknown (planned before stamps), or a redelivery
                log.info("campaign %s already planned; ignoring the duplicate submission", campaign.name)
                return
            # another submission (the CLI refuses one while the first is unplanned: cli/earlier.unplanned), which
            # the analyzer takes as current, leaving out every report of this one (its submissions.py)
            log.error("campaign %s already planned (submitted at %s); its submission of %s is ignored, but the "
                      "analyzer takes that one as current and leaves out the reports of this one: cancel it (podtax "
                      "campaign cancel %s) and submit it under another name", campaign.name, planned.isoformat(),
                      event.time.isoformat(), campaign.name)
            return
        try:
            nodes = await self.resolve_nodes(campaign)
        except Permanent as exc:
            await self.refuse(campaign.name, exc.reason, event.time)
        why = refusal(campaign, len(nodes)) or self.too_large(campaign)
        if why:
            await self.refuse(campaign.name, why, event.time)
        seed = campaign.seed if campaign.seed is not None else random.SystemRandom().randrange(2**31)
        # planned and saved without the lock (15 s for 100,000 runs on a slow VM): meanwhile the other
        # campaigns go on, their outcomes are recorded, and none of their runs expires behind the lock
        try:
            state = await asyncio.to_thread(CampaignState.new, campaign, nodes, self.settings.cluster, seed,
                                            events.now(), event.time)
        except templates.TemplateError as exc:  # `threads: all` on a node whose facts claim 100,000 threads
            await self.refuse(campaign.name, f"campaign {campaign.name}: {exc.detail}", event.time)
        if not state.runs:  # nothing would ever finish it: `campaign status --follow` waited 24 h
            await self.refuse(campaign.name, f"campaign {campaign.name}: the plan has 0 runs on "
                                             f"{len(nodes)} node(s); name nodes that exist, or tests and repetitions",
                              event.time)
        await self.save(state)
        async with self.lock:
            self.campaigns[campaign.name] = state
        log.info("campaign %s planned: %d runs on %d nodes", campaign.name, len(state.runs), len(nodes))
        for warning in state.header.warnings:
            log.warning("campaign %s: %s", campaign.name, warning)

    async def refuse(self, name: str, why: str, submitted: datetime) -> NoReturn:
        """Record why campaign `name` cannot run where `podtax campaign status` looks, and which submission: its
        campaign.submitted's stream sequence (`seq`; its time, `submitted`, is now() when the message carries none:
        another publisher's) and time. `podtax campaign submit` lets a name go again, and `campaign status` shows the
        reason, only when the last one NATS holds is the one refused (cli/earlier.refusal_of). Then dead-letter it with
        the reason: a permanent refusal, not retried (retrying the same campaign cannot help)."""
        record = {"reason": why, "submitted": submitted.isoformat(), "seq": HANDLED_SEQUENCE.get()}
        await self.kv.put(f"refused.{name}", json.dumps(record).encode())
        raise Permanent(why)

    def too_large(self, campaign: Campaign) -> str | None:
        """A control-plane run whose timeline cannot fit one NATS message: refused for the whole campaign
        at once, not run by run after each was planned (an audit's count 5,000 failed every run). Each template's
        largest count against its own bound (a pod-startup pod's line holds its node's name, a volume's does not)."""
        counts: dict[str, int] = {}
        for t in campaign.tests:
            if templates.get(t.test).control_plane:
                for c in t.combinations():
                    counts[t.test] = max(counts.get(t.test, 0), int(c.get("count", 0) or 0))
        why = next(filter(None, (dispatch.too_large(n, self.bus.nc.max_payload, test) for test, n in counts.items())),
                   None)
        return f"campaign {campaign.name}: {why}" if why else None

    async def resolve_nodes(self, campaign: Campaign) -> dict[str, int]:
        known = await self.known_nodes()
        if self.executor:
            for doc in await asyncio.to_thread(self.executor.nodes):  # fresh labels for `campaign submit`
                await self.merge_node(doc["node"], doc)
                known.setdefault(doc["node"], doc)
        if isinstance(campaign.nodes, list):
            missing = [n for n in campaign.nodes if n not in known]
            if missing:
                raise Permanent(f"campaign {campaign.name}: unknown node(s) {', '.join(missing)}")
            names = campaign.nodes
        else:
            if not self.executor:
                raise Permanent("a node selector needs the Kubernetes executor (PODTAX_RUNNER_KUBERNETES)")
            names = await asyncio.to_thread(self.executor.select_nodes, campaign.nodes.selector)
            if not names:
                raise Permanent(f"campaign {campaign.name}: selector {campaign.nodes.selector} matches no node "
                                f"(known: {', '.join(sorted(known)) or 'none'})")
        return {n: int(known[n]["hw_threads"]) for n in names}

    async def on_cancel(self, event: events.Event) -> None:
        """Pending runs are recorded as cancelled; control-plane runs in flight here stop before their next object,
        delete what they created and are recorded as cancelled (ControlPlaneExecutor.cancel); pod runs in flight
        here have their Job deleted and are recorded as cancelled (KubeExecutor.cancel); host runs in flight are stopped
        by their host agent, which follows cancellations itself and reports them failed with reason cancelled (counted
        cancelled here); nodes are freed."""
        if not isinstance(event, events.CampaignCancelledV1):
            raise Permanent(f"unexpected {event.type}")
        name = event.data.campaign
        async with self.lock:
            state = self.campaigns.get(name)
            if state is None and name in self.finished:
                log.info("campaign %s already finished; nothing to cancel", name)
                return
            if state is None:  # submission and cancellation travel on different consumers: retried
                raise LookupError(f"campaign {name} is not planned (yet)")
            n = state.cancel(await self.now())
            await self.save(state)
        stopping = self.controlplane.cancel(name) + (self.executor.cancel(name) if self.executor else [])
        log.info("campaign %s cancelled: %d pending runs cancelled, %d in flight (%d control-plane or pod run(s) "
                 "stopping: %s)", name, n, state.counts()["dispatched"], len(stopping), ", ".join(stopping) or "none")

    async def on_outcomes(self, batch: list[events.Event]) -> dict[str, str]:
        """Results and failures, a batch at a time: one save per campaign per batch."""
        touched: dict[str, CampaignState] = {}
        async with self.lock:
            now = await self.now()
            for event in batch:
                if not isinstance(event, events.ResultV1 | events.RunFailedV1):
                    continue
                run = event.data.run
                reason = event.data.reason if isinstance(event, events.RunFailedV1) else None
                state = self.campaigns.get(run.campaign)
                if state is None or self.earlier(state, run, "outcome"):
                    continue
                if state.outcome(run.run_id, isinstance(event, events.ResultV1), now, reason):
                    metrics.RUNS_FINISHED.labels("result" if reason is None else "failed").inc()
                touched[state.name] = state  # saved even when nothing changed: a failed save is retried
            for state in touched.values():
                await self.save(state)
                for status, n in state.counts().items():  # campaign progress
                    metrics.CAMPAIGN_RUNS.labels(state.name, status).set(n)
                if state.finished_at:
                    log.info("campaign %s finished: %s", state.name, state.counts())
        self.wake.set()
        return {}

    async def on_outcome(self, event: events.Event) -> None:
        await self.on_outcomes([event])

    async def on_cell_stats(self, event: events.Event) -> None:
        if not isinstance(event, events.CellStatsV1):
            return
        async with self.lock:
            state = self.campaigns.get(event.data.campaign)
            if state and state.campaign.repetitions.target_ci_width is not None:
                state.cell_stats(event.data, await self.now())
                await self.save(state)

    async def on_reported(self, run: events.RunSpec) -> bool:
        """An executor published a run's log or failure: recorded, so a restart before the outcome comes
        back does not run it again. A failed save is only logged: the document stays dirty and goes with
        the next save, and a run started again meanwhile publishes under the same event id (de-duplicated).
        False only then (the run's kept report, if any, stays: outbox.release)."""
        async with self.lock:
            state = self.campaigns.get(run.campaign)
            if state is None or self.earlier(state, run, "report") or not state.reported(run.run_id, await self.now()):
                return True
            state.header.held.pop(run.run_id, None)  # NATS took it: no longer held (saved now, before its outcome)
            try:
                await self.save(state)
            except Exception as exc:  # noqa: BLE001 - see above
                log.warning("could not record run %s as reported: %s", run.run_id, exc)
                return False
            return True

    @staticmethod
    def earlier(state: CampaignState, run: events.RunSpec, what: str) -> bool:
        """Whether a report of `run` is of another submission of its campaign (state.of_another_submission): said in
        one line and left out, never counted as this submission's run (which is still measured)."""
        if not state.of_another_submission(run):
            return False
        log.warning("%s of run %s left out: it is of an earlier submission of campaign %s (submitted at %s), not of "
                    "the one running (submitted at %s); the run is measured in this one", what, run.run_id,
                    run.campaign, run.submitted.isoformat() if run.submitted else "?",
                    state.header.submitted.isoformat() if state.header.submitted else "?")
        return True

    def submitted_at(self, campaign: str) -> str:
        """When the campaign (the one running) was submitted, ISO 8601 ('' unknown): a kept report names it."""
        state = self.campaigns.get(campaign)
        return state.created_at.isoformat() if state is not None else ""
