"""Every podtax event: one envelope, versioned types, a discriminated union on `type`.

Producers build events with these frozen models (unknown fields are rejected when an event is
constructed); consumers decode with :func:`decode`, which ignores fields it does not know, so a
newer producer can add optional fields without breaking older consumers. A breaking change gets a
new ``.v2`` type. ``python -m podtax.events --markdown`` prints the reference in docs/events.md.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter

from podtax import subjects

Env = Literal["host", "kubernetes", "nomad"]
Params = dict[str, str | int | float | bool]


def now() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return uuid.uuid4().hex


EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
MAX_AHEAD = timedelta(days=1)


_EARLIEST_S = EARLIEST.timestamp()
_MAX_AHEAD_S = MAX_AHEAD.total_seconds()


def _plausible(value: datetime) -> datetime:
    """Refuse times no benchmark can have (a broken clock, a forged event): before 2000 or > 1 day ahead.

    Compared as epoch seconds: every event carries three times, and building `now() + MAX_AHEAD` as a
    datetime for each was 17 µs of every decoded message (the analyzer's hot path)."""
    seconds = (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).timestamp()
    if seconds < _EARLIEST_S:
        raise ValueError(f"{value.isoformat()} is before 2000-01-01: not a plausible time (check the clock)")
    if seconds > time.time() + _MAX_AHEAD_S:
        raise ValueError(f"{value.isoformat()} is more than a day in the future: not a plausible time "
                         "(check the clock)")
    return value


Timestamp = Annotated[datetime, AfterValidator(_plausible)]


class Model(BaseModel):
    # Every float of every event is finite: NaN or Infinity is refused where the event is built or decoded.
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


# ---------------------------------------------------------------- names
# Names that travel on the bus become subjects, KV keys, file names, HTML and workbook cells: printable
# ASCII without spaces, slashes or control and direction characters, and of bounded length (an audit's
# 600 KB run id made the root host agent's log exceed NATS's message limit, so it re-ran the benchmark on
# every redelivery; a campaign named `../../etc/passwd` or holding U+202E was stored).
RunId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][-A-Za-z0-9_.:]{0,199}$",
                             description="Unique id of the run; the idempotency key everywhere downstream "
                                         "(letters, digits, `-_.:`, at most 200).")]
CampaignName = Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,48}[a-z0-9])?$",
                                    description="Campaign name: a DNS label of at most 50 characters.")]
NodeName = Annotated[str, Field(pattern=r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,251}[A-Za-z0-9])?$",
                                description="Node or cluster name (letters, digits, `-_.`, at most 253).")]


# ---------------------------------------------------------------- payloads


class RunSpec(Model):
    """One planned benchmark run (campaign x cell x environment x repetition)."""

    run_id: RunId
    campaign: CampaignName
    cluster: NodeName = Field(default="local", description="Cluster the node belongs to.")
    node: NodeName = Field(description="Node name as Kubernetes knows it (may contain dots).")
    env: Env = Field(description="`host` (the host agent runs it), `kubernetes` (a pod runs it); for "
                     "control-plane tests the backend whose API is timed (`kubernetes`, `nomad`).")
    test: str = Field(description="Registered benchmark template name, e.g. `sysbench-cpu`.")
    params: Params = Field(description="Template parameters, already resolved (`threads: all` -> a number).")
    attempt: int = Field(default=1, ge=1, le=10, description="1 for the first try, 2 for the retry.")
    timeout_s: float = Field(default=600, gt=0, le=86400, description="Seconds before the run is killed.")
    sequence: int = Field(default=0, ge=0, le=2**31 - 1, description="Position of the run in its node's schedule.")


class CampaignSubmitted(Model):
    campaign: CampaignName
    spec: dict[str, Any] = Field(description="The validated campaign document as submitted.")
    runs: list[RunSpec] = Field(default_factory=list, description="Explicit runs (skeleton campaigns).")


class CampaignCancelled(Model):
    campaign: CampaignName
    reason: str = Field(default="cancelled by the operator", description="Why, as the operator gave it.")


class RunRequested(Model):
    run: RunSpec


class Provenance(Model):
    """What the environment looked like around the run (from the wrapper block or the agent)."""

    kernel: str | None = None
    cpu_model: str | None = None
    hw_threads: int | None = Field(default=None, ge=1)
    qos_class: str | None = Field(default=None, description="Pod QoS class; None on the host.")
    cpu_limit: float | None = Field(default=None, description="CPU limit in cores; None when unlimited.")
    nr_throttled_before: int | None = Field(default=None, ge=0, description="cgroup cpu.stat nr_throttled.")
    nr_throttled_after: int | None = Field(default=None, ge=0)
    throttled_usec_before: int | None = Field(default=None, ge=0, description="cgroup throttled time, µs.")
    throttled_usec_after: int | None = Field(default=None, ge=0)
    image: str | None = None
    image_digest: str | None = None
    isolation: str | None = Field(default=None, description="How the pod was isolated (emulator).")


class RawLog(Model):
    run: RunSpec
    stdout: str
    stderr: str = ""
    exit_code: int | None = Field(ge=-255, le=255, description="Process exit code; None when it was killed.")
    started_at: Timestamp
    ended_at: Timestamp
    tool_version: str | None = Field(default=None, description="`<tool> --version` as recorded by the runner.")
    truncated: bool = Field(default=False, description="Output exceeded the size cap and was cut.")
    timed_out: bool = False
    provenance: Provenance = Field(default_factory=Provenance)
    imported_from: str | None = Field(default=None, description="File name when imported by `podtax import`.")


class Metric(Model):
    name: str
    value: float
    unit: str
    higher_is_better: bool


class Result(Model):
    run: RunSpec
    tool: str
    tool_version: str | None
    tool_build: str | None = None
    parser_version: str
    metrics: list[Metric] = Field(min_length=1)
    echoed: Params = Field(default_factory=dict, description="Parameters the tool printed back.")
    flags: list[str] = Field(default_factory=list, description="e.g. SHORT: stopped before the requested work.")
    started_at: Timestamp
    ended_at: Timestamp
    provenance: Provenance = Field(default_factory=Provenance)


FailureStage = Literal["runner", "agent", "kubernetes", "parser"]


class RunFailed(Model):
    run: RunSpec
    stage: FailureStage
    reason: str = Field(description="Stable machine-readable reason code, e.g. `unknown-template`.")
    detail: str = Field(description="A sentence that says what went wrong and what to fix.")
    started_at: Timestamp | None = None
    ended_at: Timestamp | None = None


class HostFacts(Model):
    node: NodeName
    cluster: NodeName = "local"
    kernel: str
    os: str
    cpu_model: str
    hw_threads: int = Field(ge=1)
    arch: str
    tool_versions: dict[str, str] = Field(description="Tool name -> first line of its --version output.")


class CellStats(Model):
    """The analyzer's statistics of one cell, followed by the runner to stop or extend a cell."""

    campaign: str
    node: str
    test: str
    params_key: str
    metric: str
    n_host: int
    n_pod: int
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    verdict: str
    flags: list[str] = Field(default_factory=list)


class NodeScore(Model):
    """Per node, environment, benchmark and parameters: never a sum, always per run."""

    cluster: str
    node: str
    env: Env
    test: str
    params_key: str
    metric: str
    unit: str
    higher_is_better: bool
    median: float
    mean: float
    n: int = Field(ge=1)
    ci_low: float | None = None
    ci_high: float | None = None
    updated_at: Timestamp
    flags: list[str] = Field(default_factory=list, description="Why these runs should not drive placement: "
                             "CONFOUNDED (mixed tool builds), BIMODAL, OVERLAP, THROTTLED.")


class Candidate(Model):
    node: str
    score: float = Field(ge=0, le=100)


class PlacementMade(Model):
    namespace: str
    pod: str
    pod_uid: str
    node: str | None
    test: str | None
    candidates: list[Candidate] = Field(default_factory=list)
    message: str


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
