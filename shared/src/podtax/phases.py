"""The phases of the control-plane benchmarks, defined once (docs/control-plane.md, "Phases").

A phase is the time between two of an object's recorded end points (seconds on the client's
monotonic clock). The parser derives per-run metrics from them, the analyzer stores them per
object, and the report prints each definition beside its numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

TEMPLATES: tuple[str, ...] = ("volume-churn", "pod-startup")


@dataclass(frozen=True)
class Phase:
    name: str
    start: str  # end point key in the timeline's "t"
    end: str
    definition: str
    optional: bool = False  # not required of every completed object: recorded only when asked for (consumer pods),
    # or not in every timeline (pod-startup's initialized, ready_to_start_containers and containers_ready, which
    # timelines written before them lack, as do clusters without the condition): an object without it has no figure in
    # the phase, never a zero


# A claim of a WaitForFirstConsumer class is provisioned only once the scheduler has placed a pod that uses it and
# written the node on the claim (volume.kubernetes.io/selected-node, the provisioner's cue): timed from its create,
# provisioned and bound held the consumer pod's create and scheduling, which Nomad's provisioned does not. So they
# start at `provision_start` (derive_points): in a run whose summary says `provision_start: node` (the executor writes
# it when the run's class is WaitForFirstConsumer) when the claim was seen given a node (`node_selected`), else when
# its create was sent. The annotation alone says nothing: the external-provisioner in --node-deployment mode writes it
# on Immediate claims too, after a random wait the user sits through (review r9 H1).
PROVISION_START, NODE_SELECTED = "provision_start", "node_selected"
FROM_NODE, FROM_CREATE = "node", "create"  # the summary's provision_start
_WFFC = (" (in a run of a WaitForFirstConsumer class, its summary marked provision_start node: from when the claim "
         "was seen given a node, volume.kubernetes.io/selected-node, once its consumer pod was scheduled: no pod "
         "scheduling in it, as in Nomad's; a consumer run marked neither node nor create has no figure)")
NODE_START_FLAG = "PROVISION_START: node"  # the run flag of a consumer run timed from the node (parsers/timeline.py)
CREATE_START_FLAG = "PROVISION_START: create"  # of a consumer run timed from the create (without consumer: always)
_NODE_START = ("when the claim was seen given a node (volume.kubernetes.io/selected-node, a WaitForFirstConsumer "
               "class; no pod scheduling in it)")
_K8S_VOLUMES = (
    Phase("accepted", "request_sent", "api_accepted", "create request sent -> the create call returned"),
    Phase("provisioned", PROVISION_START, "pv_created",
          "create request sent -> the PV's ADDED event (or the claim's Bound, if its watch delivers that first)"
          + _WFFC),
    Phase("bound", PROVISION_START, "bound", "create request sent -> the claim's MODIFIED event with phase Bound"
          + _WFFC),
    Phase("consumer_running", "request_sent", "consumer_running",
          "create request sent -> the consumer pod is Running (consumer: true only)", optional=True),
    Phase("deleted", "delete_requested", "gone",
          "delete requested -> the claim's DELETED event (or its PV's, if that watch delivers first)"),
    Phase("pv_deleted", "delete_requested", "pv_gone",
          "delete requested -> the PV's DELETED event (the provisioner's finalizer is done)"),
)
# Nomad's calls are synchronous: its create returns once the volume is provisioned and its delete once the
# storage is removed. So they pair with Kubernetes' provisioned and pv_deleted (the PV's events), and it has
# no accepted and no claim-level deleted (an audit: pairing those by name gave "nomad 4.7x slower" for
# accepted and "4.2x slower" for deleted, each comparing two different moments).
_NOMAD_VOLUMES = (
    Phase("provisioned", "request_sent", "api_accepted",
          "create request sent -> PUT .../create returned (the volume exists when the call returns)"),
    Phase("pv_deleted", "delete_requested", "gone",
          "delete requested -> DELETE .../delete returned (the storage is removed when the call returns)"),
)
_POD_STARTUP = (
    Phase("scheduled", "request_sent", "scheduled", "create request sent -> PodScheduled condition True seen"),
    Phase("initialized", "request_sent", "initialized", "create request sent -> Initialized condition True seen "
          "(init containers done; at once without them)", optional=True),
    Phase("ready_to_start_containers", "request_sent", "ready_to_start_containers",
          "create request sent -> PodReadyToStartContainers condition True seen (the pod's sandbox and network are "
          "set up; a kubelet's PodReadyToStartContainersCondition feature, on by default since 1.29)", optional=True),
    Phase("started", "request_sent", "started", "create request sent -> all containers started (phase Running)"),
    Phase("containers_ready", "request_sent", "containers_ready",
          "create request sent -> ContainersReady condition True seen", optional=True),
    Phase("ready", "request_sent", "ready", "create request sent -> Ready condition True"),
    Phase("deleted", "delete_requested", "gone", "delete requested -> the pod's DELETED event"),
)

PHASES: dict[tuple[str, str], tuple[Phase, ...]] = {
    ("volume-churn", "kubernetes"): _K8S_VOLUMES,
    ("volume-churn", "nomad"): _NOMAD_VOLUMES,
    ("pod-startup", "kubernetes"): _POD_STARTUP,
}

# Phases one backend has and another has not, said plainly instead of pretending they match.
ABSENT: dict[tuple[str, str, str], str] = {
    ("volume-churn", "nomad", "bound"): "Nomad volumes have no Bound phase: a CSI volume exists, unclaimed, "
                                        "when its create call returns; there is nothing to bind",
    ("volume-churn", "nomad", "accepted"): "Nomad's create call returns only once the volume is provisioned: "
                                           "there is no stored-but-not-provisioned moment to time; compare "
                                           "provisioned",
    ("volume-churn", "nomad", "deleted"): "Nomad's delete call returns once the storage is removed: compare "
                                          "pv_deleted (Kubernetes' claim is DELETED before its storage is gone)",
    ("volume-churn", "nomad", "consumer_running"): "no consumer job was timed on Nomad",
}


def phases_of(template: str, backend: str) -> tuple[Phase, ...]:
    """The phases of a template on a backend; ValueError names what is known."""
    try:
        return PHASES[(template, backend)]
    except KeyError:
        known = ", ".join(f"{t} on {b}" for t, b in PHASES)
        raise ValueError(f"no phases are defined for {template} on {backend!r}; known: {known}") from None


# What a reader must know before reading a ratio of the two backends (the report shows it beside the row).
CAVEATS: dict[tuple[str, str], str] = {
    ("volume-churn", "provisioned"): (
        "Kubernetes' create returns once the claim is stored, so all its provisions run at once, while Nomad's "
        "create returns once the volume is provisioned, so at most `concurrency` of its volumes provision at "
        "a time: the makespans compare the backends at that concurrency only; at another one the ratio can "
        "differ, even in direction, so run the campaign at the concurrency you use"),
    ("volume-churn", "pv_deleted"): (
        "Nomad serializes a CSI plugin's controller delete calls (serializedControllerRPC: one at a time per "
        "plugin; creates are not serialized), so at `concurrency` above one each Nomad delete also waits for the "
        "deletes queued before it on that plugin: its pv_deleted latencies measure that queue (up to "
        "`concurrency` deletes long), not one delete, and its makespan the plugin's deletes one after another. "
        "The ratio holds at that concurrency only and can change direction at another: run at concurrency one "
        "to time a single delete, or at the concurrency you use"),
}


def caveat(template: str, name: str) -> str | None:
    """The caveat of a phase or of one of its per-run metrics (pv_deleted, pv_deleted_p50_ms); None when none."""
    return CAVEATS.get((template, phase_of_metric(name) or name))


def definition(template: str, phase: str) -> str:
    """A phase's definition for the report: per backend when the backends differ."""
    texts: dict[str, str] = {}
    for (t, backend), phases in PHASES.items():
        if t != template:
            continue
        found = next((p.definition for p in phases if p.name == phase), None)
        texts[backend] = found if found else ABSENT.get((t, backend, phase), f"not measured on {backend}")
    if len(set(texts.values())) == 1:
        return next(iter(texts.values()))
    return "; ".join(f"{backend}: {text}" for backend, text in texts.items())


def definition_from(template: str, backend: str, phase: str, start: str) -> str | None:
    """The definition of a phase that starts at `provision_start` as the runs of a figure timed it (`start`: FROM_NODE
    or FROM_CREATE), instead of the template's text for either; None for a phase that does not start there."""
    found = next((p for p in PHASES.get((template, backend), ()) if p.name == phase), None)
    if found is None or found.start != PROVISION_START:
        return None
    text = found.definition.removesuffix(_WFFC)
    return text.replace("create request sent", _NODE_START, 1) if start == FROM_NODE else text


def absent_reason(template: str, backend: str, phase: str) -> str | None:
    """Why a phase has no numbers on a backend (None when the backend defines it)."""
    if any(p.name == phase for p in PHASES.get((template, backend), ())):
        return None
    return ABSENT.get((template, backend, phase), f"{phase} is not measured on {backend}")


# The per-run metrics of a phase (parsers/timeline.py): P_p50_ms ... P_max_ms, P_min_ms, P_avg_ms and P_makespan_s.
METRIC_SUFFIXES: tuple[str, ...] = ("_p50_ms", "_p95_ms", "_p99_ms", "_max_ms", "_min_ms", "_avg_ms", "_makespan_s")


# kube-burner's min and avg of a phase (P_min_ms, P_avg_ms): descriptive figures, shown (ratio, interval, raw p-value)
# to line podtax up with kube-burner, and no hypothesis of either correction family of the report or of `podtax compare`
# (the phase's percentiles are the tested figures), so they move no other cell's adjusted p-value.
DESCRIPTIVE_SUFFIXES: tuple[str, ...] = ("_min_ms", "_avg_ms")
DESCRIPTIVE_WHY = "kube-burner's min/avg"


def is_descriptive(test: str, metric: str) -> bool:
    """Whether ``metric`` of ``test`` is a descriptive figure (DESCRIPTIVE_SUFFIXES of a control-plane template's
    phase): another tool's mean is an ordinary metric."""
    return test in TEMPLATES and metric.endswith(DESCRIPTIVE_SUFFIXES)


def phase_of_metric(metric: str) -> str | None:
    """The phase a timeline metric measures (bound_p50_ms -> bound), None for a run-wide one (errors, wall_s)."""
    return next((metric[:-len(x)] for x in METRIC_SUFFIXES if metric.endswith(x)), None)


def absent_metric(template: str, backend: str, metric: str) -> str | None:
    """Why ``backend`` can have no ``metric`` of ``template`` (Nomad has no bound phase), None when it can or
    when the metric is not a phase's."""
    phase = phase_of_metric(metric)
    if phase is None or (template, backend) not in PHASES:
        return None
    return absent_reason(template, backend, phase)


def derive_points(phases: tuple[Phase, ...], t: dict[str, float], start: str | None) -> None:
    """Add the end points `phases` start at that the executor does not write (in place): `provision_start`. `start` is
    the run summary's provision_start: FROM_NODE (a WaitForFirstConsumer class), the claim's `node_selected` when
    recorded; FROM_CREATE, its `request_sent` (and its `first_request_sent`, a create sent again, as
    `first_provision_start`), `node_selected` ignored (dropped: an Immediate claim may carry the annotation); None (a
    consumer run whose class's binding mode is not known: a timeline written before the marker, or a class the run
    could not read), none: provisioned and bound are left out, as either start may be wrong (review r9 M1)."""
    if not any(p.start == PROVISION_START for p in phases):
        return
    if start != FROM_NODE:
        t.pop(NODE_SELECTED, None)
    if start == FROM_NODE and NODE_SELECTED in t:
        t[PROVISION_START] = t[NODE_SELECTED]
    elif start is not None and "request_sent" in t:
        t[PROVISION_START] = t["request_sent"]
        if "first_request_sent" in t:
            t[f"first_{PROVISION_START}"] = t["first_request_sent"]


def provision_start(header: Mapping[str, Any], summary: Mapping[str, Any] | None) -> str | None:
    """Where a run's provisioned and bound start (derive_points): the summary's provision_start; without it (a
    timeline written before it), FROM_CREATE for a run without consumer pods (its class binds at once: the executor
    refuses WaitForFirstConsumer without a consumer), else None (not known)."""
    said = (summary or {}).get(PROVISION_START)
    if said in (FROM_NODE, FROM_CREATE):
        return str(said)
    params = header.get("params")
    return FROM_CREATE if said is None and not (isinstance(params, dict) and params.get("consumer")) else None


def started_by_create(phase: Phase, t: Mapping[str, float]) -> bool:
    """Whether the create call started `phase` of an object with end points `t` (a retried create's wait is in it):
    `provision_start` is the create's unless the claim was given a node after it (derive_points drops node_selected
    where it is not the start)."""
    return phase.start == "request_sent" or (phase.start == PROVISION_START and NODE_SELECTED not in t)


def object_phases(phases: tuple[Phase, ...], t: Mapping[str, float]) -> dict[str, float]:
    """Phase -> seconds for one object's end points; phases missing an end point are left out."""
    out: dict[str, float] = {}
    for p in phases:
        if p.start in t and p.end in t:
            out[p.name] = t[p.end] - t[p.start]
    return out
