"""A campaign's progress: which run is planned, in flight, done or failed, per node queue.

Pure state transitions (no I/O); the service persists the state in a JetStream KV bucket after
every change, so a restarted runner resumes where it stopped and never runs a run twice.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Literal

from podtax import events, templates
from podtax.campaign import Campaign
from pydantic import BaseModel, Field

from podtax_runner import plan

Status = Literal["planned", "dispatched", "done", "failed", "cancelled"]
TERMINAL = ("done", "failed", "cancelled")
REPORT_GRACE_S = 60.0  # beyond the run's own timeout, for scheduling, image pulls and the bus


class RunState(BaseModel):
    run: events.RunSpec
    status: Status = "planned"
    dispatched_at: datetime | None = None
    finished_at: datetime | None = None
    reason: str | None = None


class CampaignState(BaseModel):
    name: str
    spec: dict = Field(description="The campaign document as validated.")
    cluster: str = "local"
    seed: int
    nodes: dict[str, int] = Field(description="node -> hardware threads used to resolve `all`.")
    queues: dict[str, list[str]] = Field(description="node -> run ids in execution order.")
    runs: dict[str, RunState]
    reps: dict[str, int] = Field(default_factory=dict, description="cell key -> repetitions planned.")
    settled_cells: list[str] = Field(default_factory=list, description="Cells that need no more runs: their "
                                     "CI met the target, or they reached the maximum.")
    last_stats: dict[str, events.CellStats] = Field(default_factory=dict,
                                                    description="cell key -> the analyzer's newest statistics.")
    created_at: datetime
    finished_at: datetime | None = None

    @property
    def campaign(self) -> Campaign:
        return Campaign.model_validate(self.spec)

    @classmethod
    def new(cls, campaign: Campaign, nodes: dict[str, int], cluster: str, seed: int, now: datetime) -> CampaignState:
        queues = plan.expand(campaign, nodes, cluster, seed)
        runs = {r.run_id: RunState(run=r) for q in queues.values() for r in q}
        reps = {c.key: campaign.repetitions.min for n, t in nodes.items() for c in plan.cells(campaign, n, t)}
        return cls(name=campaign.name, spec=campaign.model_dump(mode="json"), cluster=cluster, seed=seed,
                   nodes=nodes, queues={n: [r.run_id for r in q] for n, q in queues.items()}, runs=runs,
                   reps=reps, created_at=now)

    # ---------------------------------------------------------------- queries

    def in_flight(self, node: str) -> RunState | None:
        return next((s for rid in self.queues.get(node, []) if (s := self.runs[rid]).status == "dispatched"), None)

    def last_finished(self, node: str) -> datetime | None:
        times = [s.finished_at for rid in self.queues.get(node, []) if (s := self.runs[rid]).finished_at]
        return max(times) if times else None

    def next_for(self, node: str, now: datetime) -> events.RunSpec | None:
        """The node's next run, if the node is idle in this campaign and the spacing has passed."""
        if self.in_flight(node):
            return None
        last = self.last_finished(node)
        spacing = self.campaign.spacing_s()
        if last and spacing and now < last + timedelta(seconds=spacing):
            return None
        return next((s.run for rid in self.queues.get(node, []) if (s := self.runs[rid]).status == "planned"), None)

    @property
    def done(self) -> bool:
        return all(s.status in TERMINAL for s in self.runs.values())

    def counts(self, node: str | None = None) -> dict[str, int]:
        out = {"planned": 0, "dispatched": 0, "done": 0, "failed": 0, "cancelled": 0}
        for s in self.runs.values():
            if node is None or s.run.node == node:
                out[s.status] += 1
        return out

    # ---------------------------------------------------------------- transitions

    def dispatched(self, run_id: str, now: datetime) -> None:
        s = self.runs[run_id]
        s.status, s.dispatched_at = "dispatched", now

    def outcome(self, run_id: str, ok: bool, now: datetime, reason: str | None = None) -> bool:
        """Record a result or failure; False when the run is unknown or already finished (idempotent)."""
        s = self.runs.get(run_id)
        if s is None or s.status in TERMINAL:
            return False
        s.status, s.finished_at, s.reason = ("done" if ok else "failed"), now, reason
        self._evaluate(cell_key(s.run), now)  # statistics may have arrived before this outcome
        self._finish_check(now)
        return True

    def expired(self, now: datetime) -> list[tuple[events.RunSpec, events.RunSpec | None]]:
        """Runs that never reported back: mark failed, and plan one retry right after (first attempt only)."""
        out = []
        for node, queue in self.queues.items():
            s = self.in_flight(node)
            if not s or not s.dispatched_at:
                continue
            if now < s.dispatched_at + timedelta(seconds=s.run.timeout_s + REPORT_GRACE_S):
                continue
            s.status, s.finished_at, s.reason = "failed", now, "no-report"
            again = None
            if s.run.attempt == 1:
                again = plan.retry(s.run)
                self.runs[again.run_id] = RunState(run=again)
                queue.insert(queue.index(s.run.run_id) + 1, again.run_id)
            out.append((s.run, again))
        self._finish_check(now)
        return out

    def cell_stats(self, stats: events.CellStats, now: datetime) -> list[events.RunSpec]:
        """Follow the analyzer: settle a cell whose CI is narrow enough, or extend it up to the maximum.

        Statistics and outcomes travel on different consumers, so either may come first: the newest
        statistics of each cell are kept and evaluated again when the cell's last run reports."""
        key = f"{stats.node}|{stats.test}|{stats.params_key}"
        if self.campaign.repetitions.target_ci_width is None or key not in self.reps:
            return []
        test = templates.get(stats.test)
        sample = next(s.run for s in self.runs.values() if cell_key(s.run) == key)
        if stats.metric != test.primary_metric(test.validate(sample.params)):
            return []  # the cell's headline metric decides
        prev = self.last_stats.get(key)
        if prev is None or stats.n_host + stats.n_pod >= prev.n_host + prev.n_pod:
            self.last_stats[key] = stats
        new = self._evaluate(key, now)
        self._finish_check(now)
        return new

    def _evaluate(self, key: str, now: datetime) -> list[events.RunSpec]:
        reps = self.campaign.repetitions
        stats = self.last_stats.get(key)
        if reps.target_ci_width is None or stats is None or key in self.settled_cells:
            return []
        cell_runs = [s for s in self.runs.values() if cell_key(s.run) == key]
        if any(s.status in ("planned", "dispatched") for s in cell_runs):
            return []  # wait until the planned repetitions are in
        if stats.n_host + stats.n_pod < sum(s.status == "done" for s in cell_runs):
            return []  # computed before the newest results: wait for fresher statistics
        width = None if stats.ci_low is None or stats.ci_high is None else stats.ci_high - stats.ci_low
        if (width is not None and width <= reps.target_ci_width) or self.reps[key] >= reps.max:
            self.settled_cells.append(key)
            return []
        rep = self.reps[key]
        self.reps[key] = rep + 1
        cell = plan.Cell(stats.node, stats.test, cell_runs[0].run.params)
        new = plan.block(self.campaign, cell, rep, random.Random(f"{self.seed}|{key}|{rep}"), self.cluster)
        node_queue = self.queues[stats.node]
        out = []
        for r in new:
            r = r.model_copy(update={"sequence": len(node_queue)})
            self.runs[r.run_id] = RunState(run=r)
            node_queue.append(r.run_id)
            out.append(r)
        return out

    def _unsettled(self) -> list[str]:
        """Cells still waiting for the analyzer's verdict on their width (only with a target)."""
        if self.campaign.repetitions.target_ci_width is None:
            return []
        with_results = {cell_key(s.run) for s in self.runs.values() if s.status == "done"}
        return [k for k in self.reps if k in with_results and k not in self.settled_cells]

    def _finish_check(self, now: datetime) -> None:
        if self.done and self.finished_at is None and not self._unsettled():
            self.finished_at = now


def cell_key(run: events.RunSpec) -> str:
    return f"{run.node}|{run.test}|{templates.params_key(run.params)}"
