"""A campaign's progress: which run is planned, in flight, done, failed or cancelled, per node queue.

Pure state transitions (no I/O). The state is persisted as many small documents, so a save never
comes near the message limit whatever the campaign's size:

- ``campaign.<name>``: the header (spec, nodes, seed, per-node progress counters), a few KB;
- ``run.<name>.<run id>``: one per run (its spec and status), about 400 bytes;
- ``cell.<name>.<hash>``: one per cell whose repetitions or statistics changed.

Only what changed since the last save is written (:meth:`CampaignState.dirty_documents`), so a save
is a handful of small puts. A restarted runner rebuilds the state from these documents
(:meth:`CampaignState.from_documents`) and resumes where it stopped. The documents' models
are in documents.py.
"""

from __future__ import annotations

import json
import random
from collections.abc import Collection, Iterable
from datetime import datetime, timedelta
from typing import Any

from podtax import events, templates
from podtax.campaign import STORED, Campaign

from podtax_runner import documents, plan
from podtax_runner.documents import STATUSES, TERMINAL, CellState, Header, NodeProgress, RunState, Status, cell_key

REPORT_GRACE_S = 60.0  # beyond the run's own timeout, for scheduling, image pulls and the bus


class CampaignState:
    """In memory: every run with indexes per node and per cell, so each transition is O(1)-ish."""

    def __init__(self, header: Header, runs: Iterable[RunState], cells: Iterable[CellState] = ()) -> None:
        self.header = header
        self.campaign = Campaign.model_validate(header.spec, context=STORED)
        self.runs: dict[str, RunState] = {}
        self.queues: dict[str, list[str]] = {n: [] for n in header.nodes}
        self._cursor: dict[str, int] = dict.fromkeys(header.nodes, 0)
        self._inflight: dict[str, str] = {}
        self._last_finished: dict[str, datetime] = {}
        self._cell_runs: dict[str, list[str]] = {}
        self._with_results: set[str] = set()
        self.reps = {c.key: self.campaign.repetitions.min
                     for n, t in header.nodes.items() for c in plan.cells(self.campaign, n, t)}
        self.settled_cells: list[str] = []
        self.last_stats: dict[str, events.CellStats] = {}
        self._dirty_runs: set[str] = set()
        self._dirty_cells: set[str] = set()
        # when a restarted runner took this state back: runs then in flight get a fresh grace from here,
        # since their outcomes may wait in the stream for the runner that was away (see expired)
        self.resumed_at: datetime | None = None
        for c in cells:
            self.reps[c.key] = c.reps
            if c.settled:
                self.settled_cells.append(c.key)
            if c.last_stats:
                self.last_stats[c.key] = c.last_stats
        ordered = sorted(runs, key=lambda s: (s.run.node, s.run.sequence, s.run.attempt))
        header.progress = {n: NodeProgress() for n in header.nodes}
        for s in ordered:
            self._add(s)
        header.runs = len(self.runs)
        self._dirty_runs.clear()

    # ---------------------------------------------------------------- construction

    @classmethod
    def new(cls, campaign: Campaign, nodes: dict[str, int], cluster: str, seed: int, now: datetime,
            submitted: datetime | None = None) -> CampaignState:
        queues = plan.expand(campaign, nodes, cluster, seed)
        header = Header(name=campaign.name, spec=campaign.model_dump(mode="json"), cluster=cluster, seed=seed,
                        nodes=nodes, created_at=now, submitted=submitted, warnings=plan.merged(campaign, nodes))
        state = cls(header, (RunState(run=r) for q in queues.values() for r in q))
        state._dirty_runs = set(state.runs)
        return state

    @classmethod
    def from_documents(cls, header: dict[str, Any], runs: Iterable[bytes], cells: Iterable[bytes]) -> CampaignState:
        if documents.is_legacy(header):
            return cls.from_legacy(header)
        return cls(Header.model_validate(header), (RunState.model_validate_json(r) for r in runs),
                   (CellState.model_validate_json(c) for c in cells))

    @classmethod
    def from_legacy(cls, doc: dict[str, Any]) -> CampaignState:
        """The format before per-run documents: one value holding every run. Everything is rewritten."""
        header = Header.model_validate({k: v for k, v in doc.items() if k in Header.model_fields and k != "runs"})
        cells = [CellState(key=k, reps=r, settled=k in doc.get("settled_cells", []),
                           last_stats=doc.get("last_stats", {}).get(k)) for k, r in doc.get("reps", {}).items()]
        state = cls(header, (RunState.model_validate(r) for r in doc["runs"].values()), cells)
        state._dirty_runs, state._dirty_cells = set(state.runs), set(state.reps)
        return state

    def _add(self, s: RunState, position: int | None = None) -> None:
        rid, node = s.run.run_id, s.run.node
        if rid in self.runs:  # counted twice, it would stay "planned" for ever: status and cancel would wait on it
            return
        self.runs[rid] = s
        queue = self.queues.setdefault(node, [])
        self._cursor.setdefault(node, 0)
        if position is None:
            queue.append(rid)
        else:
            queue.insert(position, rid)
            self._cursor[node] = min(self._cursor[node], position)
        self._cell_runs.setdefault(cell_key(s.run), []).append(rid)
        self._count(s, +1)
        if s.status == "dispatched":
            self._inflight[node] = rid
        if s.finished_at and (node not in self._last_finished or s.finished_at > self._last_finished[node]):
            self._last_finished[node] = s.finished_at
        if s.status == "done":
            self._with_results.add(cell_key(s.run))
        self.header.runs = len(self.runs)
        self._dirty_runs.add(rid)

    def _count(self, s: RunState, sign: int) -> None:
        p = self.header.progress.setdefault(s.run.node, NodeProgress())
        setattr(p, s.status, getattr(p, s.status) + sign)
        if s.status in TERMINAL and s.dispatched_at and s.finished_at:
            p.seconds += sign * (s.finished_at - s.dispatched_at).total_seconds()
            p.timed += sign

    def _set(self, s: RunState, status: Status, **changes: Any) -> None:
        self._count(s, -1)
        s.status = status
        for k, v in changes.items():
            setattr(s, k, v)
        self._count(s, +1)
        node = s.run.node
        if self._inflight.get(node) == s.run.run_id and status != "dispatched":
            del self._inflight[node]
        if status == "dispatched":
            self._inflight[node] = s.run.run_id
        if s.finished_at and (node not in self._last_finished or s.finished_at > self._last_finished[node]):
            self._last_finished[node] = s.finished_at
        if status == "done":
            self._with_results.add(cell_key(s.run))
        self._dirty_runs.add(s.run.run_id)

    # ---------------------------------------------------------------- persistence

    @property
    def name(self) -> str:
        return self.header.name

    @property
    def seed(self) -> int:
        return self.header.seed

    @property
    def cluster(self) -> str:
        return self.header.cluster

    @property
    def created_at(self) -> datetime:
        return self.header.created_at

    @property
    def finished_at(self) -> datetime | None:
        return self.header.finished_at

    @property
    def cancelled_at(self) -> datetime | None:
        return self.header.cancelled_at

    def dirty_documents(self) -> list[tuple[str, bytes]]:
        """KV (key, value) pairs that changed since :meth:`clear_dirty`: runs and cells first, header last."""
        docs = [(f"run.{self.name}.{rid}", documents.dump(self.runs[rid])) for rid in sorted(self._dirty_runs)]
        for key in sorted(self._dirty_cells):
            cell = CellState(key=key, reps=self.reps[key], settled=key in self.settled_cells,
                             last_stats=self.last_stats.get(key))
            docs.append((documents.cell_doc_key(self.name, key), documents.dump(cell)))
        docs.append((f"campaign.{self.name}", documents.dump(self.header)))
        return docs

    def clear_dirty(self) -> None:
        self._dirty_runs.clear()
        self._dirty_cells.clear()

    def header_json(self) -> dict[str, Any]:
        return json.loads(documents.dump(self.header))

    def moved(self, delta: timedelta) -> int:
        """A step of the wall clock (clockjump.py): the times the deadlines of the runs in flight and the spacing count
        from move by `delta`, and those runs are saved with the next save; the number of runs in flight."""
        self.resumed_at = self.resumed_at and self.resumed_at + delta
        self._last_finished = {node: t + delta for node, t in self._last_finished.items()}
        for s in map(self.runs.__getitem__, self._inflight.values()):
            s.dispatched_at = s.dispatched_at and s.dispatched_at + delta
            s.reported_at = s.reported_at and s.reported_at + delta
        self._dirty_runs.update(self._inflight.values())
        return len(self._inflight)

    def resumed(self, now: datetime) -> None:
        """Taken back by a restarted runner at `now` (see resumed_at). The spacing counts from `now` at the latest: a
        finished_at in the future (the clock stepped back, before the restart or while the runner was down) held the
        node for the size of the step. The runs' finished_at (their progress seconds) stay as saved."""
        self.resumed_at = now
        self._last_finished = {node: min(t, now) for node, t in self._last_finished.items()}

    # ---------------------------------------------------------------- queries

    def in_flight(self, node: str) -> RunState | None:
        rid = self._inflight.get(node)
        return self.runs[rid] if rid else None

    def last_finished(self, node: str) -> datetime | None:
        return self._last_finished.get(node)

    def _next_planned(self, node: str) -> RunState | None:
        queue, i = self.queues.get(node, []), self._cursor.get(node, 0)
        while i < len(queue) and self.runs[queue[i]].status != "planned":
            i += 1
        self._cursor[node] = i
        return self.runs[queue[i]] if i < len(queue) else None

    def next_for(self, node: str, now: datetime) -> events.RunSpec | None:
        """The node's next run (as sent: stamped), if the node is idle in this campaign and the spacing has passed."""
        if self.in_flight(node):
            return None
        last = self.last_finished(node)
        spacing = self.campaign.spacing_s()
        if last and spacing and now < last + timedelta(seconds=spacing):
            return None
        s = self._next_planned(node)
        return self.stamped(s.run) if s else None

    def stamped(self, run: events.RunSpec) -> events.RunSpec:
        """`run` as sent to its executor: carrying this submission (RunSpec.submitted), which its report echoes."""
        if self.header.submitted is None or run.submitted is not None:
            return run
        return run.model_copy(update={"submitted": self.header.submitted})

    def of_another_submission(self, run: events.RunSpec) -> bool:
        """Whether a report of `run` names another submission of this campaign's name than this one (run ids repeat
        when a campaign is submitted again: after a NATS reset, a host agent's late log of the earlier one). A report
        without the stamp (an older runner or agent), or a campaign planned before stamps, is this one's, as before."""
        return run.of_another_submission(self.header.submitted)

    @property
    def done(self) -> bool:
        return all(p.planned == 0 and p.dispatched == 0 for p in self.header.progress.values())

    def counts(self, node: str | None = None) -> dict[str, int]:
        progress = [p for n, p in self.header.progress.items() if node is None or n == node]
        return {st: sum(getattr(p, st) for p in progress) for st in STATUSES}

    # ---------------------------------------------------------------- transitions

    def dispatched(self, run_id: str, now: datetime) -> None:
        self._set(self.runs[run_id], "dispatched", dispatched_at=now)

    def undispatched(self, run_id: str) -> None:
        """Undo :meth:`dispatched` when the run could not be recorded or sent: the node is free again."""
        s = self.runs[run_id]
        if s.status == "dispatched":
            self._set(s, "planned", dispatched_at=None)
            node = s.run.node
            self._cursor[node] = min(self._cursor.get(node, 0), self.queues[node].index(run_id))

    def reported(self, run_id: str, now: datetime) -> bool:
        """Record that the run's executor published its outcome (log or failure); the status stays in
        flight until the outcome comes back. False when the run is unknown or no longer in flight."""
        s = self.runs.get(run_id)
        if s is None or s.status != "dispatched" or s.reported_at is not None:
            return False
        s.reported_at = now
        self._dirty_runs.add(run_id)
        return True

    def outcome(self, run_id: str, ok: bool, now: datetime, reason: str | None = None) -> bool:
        """Record a result or failure; False when the run is unknown or already finished (idempotent)."""
        s = self.runs.get(run_id)
        if s is None or s.status in TERMINAL:
            return False
        # a run stopped by its campaign's cancellation (the control-plane executor's reason) is counted cancelled
        self._set(s, "done" if ok else "cancelled" if reason == "cancelled" else "failed", finished_at=now,
                  reason=reason)
        self._evaluate(cell_key(s.run), now)  # statistics may have arrived before this outcome
        self._finish_check(now)
        return True

    def cancel(self, now: datetime) -> int:
        """Cancel every planned run (recorded as cancelled); in-flight runs are counted when their outcome comes."""
        if self.header.cancelled_at is None:
            self.header.cancelled_at = now
        n = 0
        for node, queue in self.queues.items():
            for rid in queue[self._cursor.get(node, 0):]:
                s = self.runs[rid]
                if s.status == "planned":
                    self._set(s, "cancelled", finished_at=now, reason="cancelled")
                    n += 1
        self._finish_check(now)
        return n

    def expired(self, now: datetime, grace_s: float = REPORT_GRACE_S, executing: Collection[str] = (),
                executing_s: float = 0.0, held: Collection[str] = ()
                ) -> list[tuple[events.RunSpec, events.RunSpec | None]]:
        """Runs that never reported back: mark failed, and plan one retry right after (first attempt only).
        A run is given its timeout + `grace_s` from its dispatch, and at least `grace_s` from `resumed_at`; a run
        in `executing` (the runner's own control-plane executor still runs it: its report is coming, its cleanup
        may outlast the grace) `executing_s` more, not for ever (a stuck executor held the runner-wide
        control-plane slot, every control-plane run after it waiting). A run whose executor here published its log or
        failure (`reported_at`) left `executing` then, its outcome still to come back through the parser and the
        analyzer: it is given `grace_s` + `executing_s` from then (a CI: expired in that window, it ran twice). A run
        in `held` (its executor holds its log or failure until NATS takes it) does not expire: NATS may yet store it
        (a review: expired, it ran again and both attempts were stored)."""
        out = []
        for s in self.due(now, grace_s, executing, executing_s, held):
            node = s.run.node
            self._set(s, "failed", finished_at=now, reason="no-report")
            again = None
            if s.run.attempt == 1 and self.header.cancelled_at is None:
                again = plan.retry(s.run)
                self._add(RunState(run=again), self.queues[node].index(s.run.run_id) + 1)
            out.append((s.run, again))
        self._finish_check(now)
        return out

    def due(self, now: datetime, grace_s: float = REPORT_GRACE_S, executing: Collection[str] = (),
            executing_s: float = 0.0, held: Collection[str] = ()) -> list[RunState]:
        """The runs in flight whose deadline passed (expired() says how it is given), nothing changed."""
        out = []
        for node in list(self._inflight):
            s = self.in_flight(node)
            if not s or not s.dispatched_at or s.run.run_id in held:
                continue
            extra = executing_s if s.run.run_id in executing else 0.0
            deadline = s.dispatched_at + timedelta(seconds=s.run.timeout_s + grace_s + extra)
            if self.resumed_at is not None:
                deadline = max(deadline, self.resumed_at + timedelta(seconds=grace_s))
            if s.reported_at is not None:  # its executor is done and its log or failure is on the bus: the outcome
                deadline = max(deadline, s.reported_at + timedelta(seconds=grace_s + executing_s))  # is coming
            if now >= deadline:
                out.append(s)
        return out

    def cell_stats(self, stats: events.CellStats, now: datetime) -> list[events.RunSpec]:
        """Follow the analyzer: settle a cell whose CI is narrow enough, or extend it up to the maximum.

        Statistics and outcomes travel on different consumers, so either may come first: the newest
        statistics of each cell are kept and evaluated again when the cell's last run reports."""
        key = f"{stats.node}|{stats.test}|{stats.params_key}"
        if self.campaign.repetitions.target_ci_width is None or key not in self._cell_runs:
            return []
        test = templates.get(stats.test)
        sample = self.runs[self._cell_runs[key][0]].run
        if stats.metric != test.primary_metric(test.validate(sample.params)):
            return []  # the cell's headline metric decides
        prev = self.last_stats.get(key)
        if prev is None or stats.n_host + stats.n_pod >= prev.n_host + prev.n_pod:
            self.last_stats[key] = stats
            self._dirty_cells.add(key)
        new = self._evaluate(key, now)
        self._finish_check(now)
        return new

    def _evaluate(self, key: str, now: datetime) -> list[events.RunSpec]:
        reps = self.campaign.repetitions
        stats = self.last_stats.get(key)
        if reps.target_ci_width is None or stats is None or key in self.settled_cells or self.cancelled_at:
            return []
        cell_runs = [self.runs[rid] for rid in self._cell_runs.get(key, [])]
        if any(s.status in ("planned", "dispatched") for s in cell_runs):
            return []  # wait until the planned repetitions are in
        if stats.n_host + stats.n_pod < sum(s.status == "done" for s in cell_runs):
            return []  # computed before the newest results: wait for fresher statistics
        self._dirty_cells.add(key)
        width = None if stats.ci_low is None or stats.ci_high is None else stats.ci_high - stats.ci_low
        if (width is not None and width <= reps.target_ci_width) or self.reps[key] >= reps.max:
            self.settled_cells.append(key)
            return []
        rep = self.reps[key]
        self.reps[key] = rep + 1
        cell = plan.Cell(stats.node, stats.test, cell_runs[0].run.params)
        new = plan.block(self.campaign, cell, rep, random.Random(f"{self.seed}|{key}|{rep}"), self.cluster,
                         len(self.queues[stats.node]))
        out = []
        for r in new:
            self._add(RunState(run=r))
            out.append(r)
        return out

    def _unsettled(self) -> list[str]:
        """Cells still waiting for the analyzer's verdict on their width (only with a target)."""
        if self.campaign.repetitions.target_ci_width is None or self.cancelled_at:
            return []
        return [k for k in self.reps if k in self._with_results and k not in self.settled_cells]

    def _finish_check(self, now: datetime) -> None:
        if self.done and self.finished_at is None and not self._unsettled():
            self.header.finished_at = now
