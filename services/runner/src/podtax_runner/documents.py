"""The documents a campaign's state is saved as in the runner's KV bucket (see state.py): the header
``campaign.<name>`` (:class:`Header`, with each node's :class:`NodeProgress`), one ``run.<name>.<run id>``
per run (:class:`RunState`) and one ``cell.<name>.<hash>`` per cell (:class:`CellState`), and the
statuses a run goes through.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any, Literal

from podtax import events, templates
from pydantic import BaseModel, Field

Status = Literal["planned", "dispatched", "done", "failed", "cancelled"]
STATUSES: tuple[Status, ...] = ("planned", "dispatched", "done", "failed", "cancelled")
TERMINAL = ("done", "failed", "cancelled")
FORMAT = 2


class RunState(BaseModel):
    run: events.RunSpec
    status: Status = "planned"
    dispatched_at: datetime | None = None
    finished_at: datetime | None = None
    reason: str | None = None
    # when its executor published its log or failure (pod and control-plane runs): a restarted runner
    # then waits for the outcome instead of running it again
    reported_at: datetime | None = None


class CellState(BaseModel):
    key: str
    reps: int
    settled: bool = False
    last_stats: events.CellStats | None = None


class NodeProgress(BaseModel):
    planned: int = 0
    dispatched: int = 0
    done: int = 0
    failed: int = 0
    cancelled: int = 0
    seconds: float = Field(0.0, description="Sum of dispatch-to-outcome times of timed runs (for the ETA).")
    timed: int = 0


class Header(BaseModel):
    format: int = FORMAT
    name: str
    spec: dict[str, Any] = Field(description="The campaign document as validated.")
    cluster: str = "local"
    seed: int
    nodes: dict[str, int] = Field(description="node -> hardware threads used to resolve `all`.")
    created_at: datetime
    submitted: datetime | None = Field(None, description="The time of the campaign.submitted event it was planned "
                                       "from, which its runs carry (RunSpec.submitted); None: planned before that.")
    finished_at: datetime | None = None
    cancelled_at: datetime | None = None
    runs: int = 0
    progress: dict[str, NodeProgress] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list, description="What the plan did that the file did not say.")
    held: dict[str, str] = Field(default_factory=dict, description="run id -> why its report (log, timeline, failure) "
                                 "is held by the runner until NATS takes it (NATS refusing it: the stream full).")
    stalled: str | None = Field(None, description="Why NATS refuses the runner's own events (run requests, simulated "
                                "results, no-report failures: the stream full), while it does.")


def cell_key(run: events.RunSpec) -> str:
    return f"{run.node}|{run.test}|{templates.params_key(run.params)}"


def dump(model: BaseModel) -> bytes:
    return model.model_dump_json(exclude_defaults=True).encode()


def cell_doc_key(campaign: str, key: str) -> str:
    return f"cell.{campaign}.{hashlib.sha1(key.encode()).hexdigest()[:16]}"


def is_legacy(header: dict[str, Any]) -> bool:
    """A campaign saved in the format before per-run documents: one value holding every run."""
    return isinstance(header.get("runs"), dict)
