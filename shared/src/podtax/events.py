"""Every podtax event: one envelope, versioned types, a discriminated union on `type`.

Producers build events with these frozen models (unknown fields are rejected when an event is
constructed); consumers decode with :func:`decode`, which ignores fields it does not know, so a
newer producer can add optional fields without breaking older consumers. A breaking change gets a
new ``.v2`` type. ``python -m podtax.events --markdown`` prints the reference in docs/events.md.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from podtax import subjects

# the payloads are in event_payloads.py; every name stays importable from here
from podtax.event_payloads import (  # noqa: F401
    EARLIEST,
    MAX_AHEAD,
    CampaignCancelled,
    CampaignName,
    CampaignSubmitted,
    Candidate,
    CellStats,
    Env,
    FailureStage,
    HostFacts,
    LeftOutRuns,
    Metric,
    Model,
    NodeName,
    NodeScore,
    Params,
    PlacementMade,
    Provenance,
    RawLog,
    Result,
    RunFailed,
    RunId,
    RunRequested,
    RunSpec,
    Timestamp,
    new_id,
    now,
    same_submission,
    utc,
)

# ---------------------------------------------------------------- envelopes


class Envelope(Model):
    id: str = Field(default_factory=new_id, description="Unique id; also the Nats-Msg-Id (de-duplication).")
    source: str = Field(default="podtax", description="Producing service, e.g. `podtax/host-agent/node-1`.")
    time: Timestamp = Field(default_factory=now)
    subject: str = Field(description="NATS subject the event is published on.")


def _run_subject(prefix: str, run: RunSpec) -> str:
    return subjects.join(prefix, run.env, run.node)


class CampaignSubmittedV1(Envelope):
    type: Literal["podtax.campaign.submitted.v1"] = "podtax.campaign.submitted.v1"
    data: CampaignSubmitted


class CampaignCancelledV1(Envelope):
    type: Literal["podtax.campaign.cancelled.v1"] = "podtax.campaign.cancelled.v1"
    data: CampaignCancelled


class RunRequestedV1(Envelope):
    type: Literal["podtax.run.requested.v1"] = "podtax.run.requested.v1"
    data: RunRequested


class RawLogV1(Envelope):
    type: Literal["podtax.run.log.v1"] = "podtax.run.log.v1"
    data: RawLog


class ResultV1(Envelope):
    type: Literal["podtax.run.result.v1"] = "podtax.run.result.v1"
    data: Result


class RunFailedV1(Envelope):
    type: Literal["podtax.run.failed.v1"] = "podtax.run.failed.v1"
    data: RunFailed


class HostFactsV1(Envelope):
    type: Literal["podtax.host.facts.v1"] = "podtax.host.facts.v1"
    data: HostFacts


class CellStatsV1(Envelope):
    type: Literal["podtax.cell.stats.v1"] = "podtax.cell.stats.v1"
    data: CellStats


class NodeScoreV1(Envelope):
    type: Literal["podtax.score.updated.v1"] = "podtax.score.updated.v1"
    data: NodeScore


class PlacementMadeV1(Envelope):
    type: Literal["podtax.placement.made.v1"] = "podtax.placement.made.v1"
    data: PlacementMade


EVENT_TYPES: tuple[type[Envelope], ...] = (
    CampaignSubmittedV1,
    CampaignCancelledV1,
    RunRequestedV1,
    RawLogV1,
    ResultV1,
    RunFailedV1,
    HostFactsV1,
    CellStatsV1,
    NodeScoreV1,
    PlacementMadeV1,
)

Event = Annotated[
    CampaignSubmittedV1
    | CampaignCancelledV1
    | RunRequestedV1
    | RawLogV1
    | ResultV1
    | RunFailedV1
    | HostFactsV1
    | CellStatsV1
    | NodeScoreV1
    | PlacementMadeV1,
    Field(discriminator="type"),
]
_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


def decode(raw: bytes | str) -> Event:
    """Parse an event, ignoring unknown fields. Raises pydantic.ValidationError when invalid."""
    return _ADAPTER.validate_json(raw, extra="ignore")


def encode(event: Envelope) -> bytes:
    return event.model_dump_json().encode()


def misplaced(event: Envelope, subject: str) -> str | None:
    """Why `event` must not be taken from the subject it arrived on, or None. An event belongs on the
    subject its type and content give (`podtax.run.result.v1` of a host run on node n1:
    `podtax.run.result.host.n1`), and NATS permissions say who may publish where: a result published on
    a raw-log subject (which the CLI may use, to import logs) would be stored without the parser's checks,
    and a run's event under another node's subject would pass for that node's."""
    prefix = getattr(event, "type", "").removesuffix(".v1")
    data = getattr(event, "data", None)
    run = getattr(data, "run", None)
    if isinstance(run, RunSpec):
        home: str | None = _run_subject(prefix, run)
    elif isinstance(event, HostFactsV1):
        home = subjects.join(prefix, event.data.node)
    elif isinstance(event, CampaignSubmittedV1 | CampaignCancelledV1):
        home = subjects.join(prefix, event.data.campaign)
    else:  # scores, cell statistics, placements: the type's own subjects
        home = None
    if subject == home or (home is None and subject.startswith(prefix + ".")):
        return None
    return (f"misplaced: a {getattr(event, 'type', '?')} event belongs on {home or prefix + '.>'}, not on "
            f"{subject[:200]}")


# ---------------------------------------------------------------- constructors


def run_requested(run: RunSpec, source: str) -> RunRequestedV1:
    return RunRequestedV1(subject=_run_subject(subjects.RUN_REQUESTED, run), source=source,
                          data=RunRequested(run=run))


def raw_log(log: RawLog, source: str) -> RawLogV1:
    return RawLogV1(subject=_run_subject(subjects.RUN_LOG, log.run), source=source, data=log)


def result(res: Result, source: str, *, event_id: str | None = None) -> ResultV1:
    return ResultV1(id=event_id or new_id(), subject=_run_subject(subjects.RUN_RESULT, res.run), source=source,
                    data=res)


def run_failed(failure: RunFailed, source: str, *, event_id: str | None = None) -> RunFailedV1:
    return RunFailedV1(id=event_id or new_id(), subject=_run_subject(subjects.RUN_FAILED, failure.run),
                       source=source, data=failure)


def host_facts(facts: HostFacts, source: str) -> HostFactsV1:
    return HostFactsV1(subject=subjects.join(subjects.HOST_FACTS, facts.node), source=source, data=facts)


def campaign_submitted(c: CampaignSubmitted, source: str = "podtax/cli") -> CampaignSubmittedV1:
    return CampaignSubmittedV1(subject=subjects.join(subjects.CAMPAIGN_SUBMITTED, c.campaign),
                               source=source, data=c)


def campaign_cancelled(c: CampaignCancelled, source: str = "podtax/cli") -> CampaignCancelledV1:
    return CampaignCancelledV1(subject=subjects.join(subjects.CAMPAIGN_CANCELLED, c.campaign),
                               source=source, data=c)


# ---------------------------------------------------------------- reference


def reference_markdown() -> str:
    """A generated reference of every event type (JSON Schema per type)."""
    out = ["# podtax events (generated by `make docs`; do not edit)", ""]
    out.append("Every event is an envelope `{id, type, source, time, subject, data}`; `id` is also the "
               "`Nats-Msg-Id` header, so JetStream drops duplicates inside its window.")
    out.append("")
    for cls in EVENT_TYPES:
        type_name = cls.model_fields["type"].default
        schema = cls.model_fields["data"].annotation.model_json_schema()  # type: ignore[union-attr]
        out += [f"## `{type_name}`", "", "```json", json.dumps(schema, indent=2), "```", ""]
    return "\n".join(out)


if __name__ == "__main__":  # pragma: no cover
    if "--markdown" in sys.argv:
        print(reference_markdown())
    else:
        print(json.dumps(_ADAPTER.json_schema(), indent=2))
