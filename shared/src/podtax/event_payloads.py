"""The payloads of podtax events: the `data` of each envelope in podtax.events (RunSpec, RawLog, Result,
RunFailed, HostFacts...), and what they share: the frozen base Model, plausible Timestamps, and the
bounded names that travel on the bus (RunId, CampaignName, NodeName).
"""

from __future__ import annotations

import re
import time
import unicodedata
import uuid
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

Env = Literal["host", "kubernetes", "nomad"]
Params = dict[str, str | int | float | bool]
# A run's parameters and test on the bus are bounded like names (below): an audit's 600 KB test name or parameter
# passed, and the host agent's refusal, which quotes them, exceeded NATS's max_payload on every delivery.
RunParams = Annotated[dict[Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]{1,64}$")],
                           Annotated[str, StringConstraints(max_length=1000)] | int | float | bool],
                      Field(max_length=64)]
TestName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][-A-Za-z0-9_.]{0,99}$")]


def now() -> datetime:
    return datetime.now(UTC)


def utc(t: datetime) -> datetime:
    """`t` in UTC; without a timezone (events.decode accepts one), read as UTC."""
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def same_submission(a: datetime | None, b: datetime | None) -> bool:
    """Whether two submission times of a campaign name (RunSpec.submitted, a campaign.submitted event's time, the one
    in the runner's refused.<name>) are one submission: the same instant in any zone (without one: UTC). The runner,
    the analyzer and the CLI all decide it here. An unknown time (None: an older runner or agent) matches any."""
    return a is None or b is None or utc(a) == utc(b)


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

# Characters that change how the text around them reads without showing themselves: direction marks, embeddings,
# overrides and isolates (U+061C, U+200E/F, U+202A-E, U+2066-9) and zero-width or invisible ones (U+200B-D,
# U+2060-4, U+FEFF). A node `node-1\u202e2-edon` shows as `node-1node-2` (the Trojan Source attack on code).
HIDDEN = (("\u061c", "\u061c"), ("\u200b", "\u200f"), ("\u202a", "\u202e"), ("\u2060", "\u2064"),
          ("\u2066", "\u2069"), ("\ufeff", "\ufeff"))
HIDDEN_CHARS = "".join(chr(c) for first, last in HIDDEN for c in range(ord(first), ord(last) + 1))
# What printable writes as an escape: the control characters but tab and newline (C0, DEL, C1; a CR alone ends a
# row in some CSV readers, a NUL ends the text in many), and the HIDDEN ones. The CSV export's SQL is built from it.
ESCAPED = (("\x00", "\x08"), ("\x0b", "\x1f"), ("\x7f", "\x9f"), *HIDDEN)
_CONTROL = re.compile("[" + "".join(f"{first}-{last}" if first != last else first for first, last in ESCAPED) + "]")
_PIECES = re.compile(f"({_CONTROL.pattern})")


def escaped(char: str) -> str:
    """`char` as text: `\\xNN` (a control character), `\\uNNNN` (a HIDDEN one)."""
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


ESCAPE = r"\\u[0-9a-f]{4}|\\x[0-9a-f]{2}"  # what `escaped` writes (a regex): a cut or a wrap keeps one whole


# printable is registered as a DuckDB SQL function (podtax_analyzer.exports): keep it a module-level function, never
# a lambda or bound method (duckdb-python issue #530: a registered callable whose owner is gone crashes the process)
def printable(text: str) -> str:
    """`text` with its control characters but newline and tab written as `\\xNN`, and its HIDDEN ones (direction
    and zero-width characters) as `\\uNNNN`. Free text from the bus reaches terminals, pages and spreadsheets, and
    an ESC starts a terminal's own sequences (its title, hyperlinks, clearing the screen): an audit's fio log version
    line and a failure's words carried them to `podtax report`; a U+202E in a stored node name reversed the text
    after it, so that one node's name read as another's."""
    return _CONTROL.sub(lambda m: escaped(m.group()), text) if _CONTROL.search(text) else text


def _whole(piece: str, width: int) -> str:
    """The first `width` characters of `piece` (text printable leaves as it is), fewer rather than end between a
    surrogate pair or before the combining marks of the last character kept."""
    while width > 0 and (unicodedata.category(piece[width])[0] == "M" or "\ud800" <= piece[width - 1] <= "\udbff"):
        width -= 1
    return piece[:width]


def printable_cut(text: str, width: int) -> str:
    """`printable(text)`, cut to at most `width` characters where it is longer, never inside one of its escapes (a
    cell cut after `node-1\\u20` read as a node with the text `\\u20` in its name), between a surrogate pair, or
    between a character and its combining marks: shorter by what that takes."""
    if len(text) <= width and not _CONTROL.search(text):
        return text
    out: list[str] = []
    for k, piece in enumerate(_PIECES.split(text)):  # plain text, a character to escape, plain text ...
        shown = escaped(piece) if k % 2 else piece
        if len(shown) > width:
            out.append("" if k % 2 else _whole(piece, width))
            break
        out.append(shown)
        width -= len(shown)
    return "".join(out)


def printable_tree(value: Any) -> Any:
    """`value` (an API's JSON: dicts, lists, strings, numbers) with every string, keys too, made `printable`: a
    store written before names were checked holds a node `\x1b]0;...` or a unit `ms\x1b[2J` as it got them, and
    the terminal report printed them as they were (its warnings alone were made printable)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable_tree(k): printable_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [printable_tree(v) for v in value]
    return value


Text = Annotated[str, AfterValidator(printable)]


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
    test: TestName = Field(description="Registered benchmark template name, e.g. `sysbench-cpu`.")
    params: RunParams = Field(description="Template parameters, already resolved (`threads: all` -> a number); "
                              "at most 64, keys `[A-Za-z0-9_.-]{1,64}`, text values at most 1,000 characters.")
    attempt: int = Field(default=1, ge=1, le=10, description="1 for the first try, 2 for the retry.")
    timeout_s: float = Field(default=600, gt=0, le=86400, description="Seconds before the run is killed.")
    sequence: int = Field(default=0, ge=0, le=2**31 - 1, description="Position of the run in its node's schedule.")
    submitted: Timestamp | None = Field(default=None, description="When the run's campaign was submitted (its "
                                        "campaign.submitted event's time), set by the runner and echoed in the run's "
                                        "log, result or failure: run ids repeat when a campaign is submitted again "
                                        "under its name, and a report of another submission is left out. None: "
                                        "not known (an older runner or agent), taken as before.")

    def of_another_submission(self, current: datetime | None) -> bool:
        """Whether this run (as a report echoes it) names another submission of its campaign than `current` (the time
        of the submission running, or current in the analyzer): run ids repeat when a campaign is submitted again.
        Unstamped (an older runner or agent), or `current` unknown (planned before stamps): not another, as before."""
        return not same_submission(self.submitted, current)

    def event_id(self, kind: str) -> str:
        """The id (Nats-Msg-Id) of the run's `kind` event (`request`, `log`, `outcome`...): one per run and
        submission, so NATS drops a report sent twice but not a report of the same run id in another submission
        (the earlier one's late log took the id, and the new submission's own log was dropped as its duplicate)."""
        if self.submitted is None:
            return f"{self.run_id}.{kind}"
        return f"{self.run_id}.{kind}.{self.submitted.astimezone(UTC).strftime('%Y%m%dT%H%M%S%f')}"


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

    kernel: Text | None = None
    cpu_model: Text | None = None
    hw_threads: int | None = Field(default=None, ge=1)
    machine: Text | None = Field(default=None, description="`uname -m` where the tool ran: the kernel's architecture "
                                 "(aarch64 in a 32-bit container on a 64-bit kernel).")
    tool_arch: Text | None = Field(default=None, description="The architecture the tool's executable was built for, "
                                   "from its ELF header (`arm` for a 32-bit ARM build); None: not known.")
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
    tool_version: Text | None = Field(default=None, description="`<tool> --version` as recorded by the runner.")
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
    tool_version: Text | None
    tool_build: Text | None = None
    parser_version: str
    metrics: list[Metric] = Field(min_length=1)
    echoed: Params = Field(default_factory=dict, description="Parameters the tool printed back.")
    flags: list[Text] = Field(default_factory=list, description="e.g. SHORT: stopped before the requested work.")
    started_at: Timestamp
    ended_at: Timestamp
    provenance: Provenance = Field(default_factory=Provenance)


FailureStage = Literal["runner", "agent", "kubernetes", "parser"]


class RunFailed(Model):
    run: RunSpec
    stage: FailureStage
    reason: Text = Field(description="Stable machine-readable reason code, e.g. `unknown-template`.")
    detail: Text = Field(description="A sentence that says what went wrong and what to fix.")
    started_at: Timestamp | None = None
    ended_at: Timestamp | None = None


class HostFacts(Model):
    node: NodeName
    cluster: NodeName = "local"
    kernel: Text
    os: Text
    cpu_model: Text
    hw_threads: int = Field(ge=1)
    arch: Text
    tool_versions: dict[str, Text] = Field(description="Tool name -> first line of its --version output.")


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


class LeftOutRuns(Model):
    """The runs of older tool builds a node score leaves out after a clean switch (podtax_analyzer.build_switch)."""

    builds: list[Text] = Field(description="The older builds: tool version text, and the executable's architecture "
                               "in parentheses when the runs name one ('sysbench 1.0.18 (arm)').")
    runs: int = Field(ge=1, description="How many of their runs (kept in the store, not counted).")
    since: Timestamp = Field(description="When the first run of the build scored ended: every run left out ended "
                             "before it.")


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
                             "CONFOUNDED (mixed tool builds, tool architectures or units), BIMODAL, OVERLAP, "
                             "THROTTLED, EMULATED (a run's tool executable was built for an architecture its "
                             "kernel runs only through an emulator, qemu-user: it measured the emulator).")
    tool_archs: list[Text] = Field(default_factory=list, description="The architectures the runs' tool executables "
                                   "were built for (ELF header: arm, aarch64, x86_64...), among the runs that name "
                                   "one, sorted; empty when none does (an older wrapper or agent). Two or more: "
                                   "CONFOUNDED; the scheduler ranks no nodes of one kubernetes.io/arch whose scores "
                                   "name different ones (a native build on each node is ranked).")
    left_out: LeftOutRuns | None = Field(default=None, description="Set when the node switched tool builds cleanly "
                                         "(every run of the older builds ended before the first run of the newest, "
                                         "a build naming an architecture, of at least 3 runs): "
                                         "the score counts the newest build's runs only (n, interval, flags and "
                                         "tool_archs are theirs) and this names what it left out. Builds whose runs "
                                         "interleave are all counted: CONFOUNDED.")


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
