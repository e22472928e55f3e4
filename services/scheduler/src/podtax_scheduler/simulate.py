"""A discrete-event simulation of a cluster, to evaluate placement policies against each other.

Nodes run each benchmark at speeds drawn from a campaign's measured pod-side distributions; pods
arrive per a workload (Poisson arrivals per class, each with requests and a runtime on a node of
the fleet's median speed); a pod's runtime scales with the drawn speed of the node it lands on and
with contention (each pod already running on the node adds ``contention`` to it; fixed at start).
Pods that fit nowhere wait in a FIFO queue and are retried whenever a pod finishes (and, when a class has a
required pod affinity, after each placement). A class's pods may carry labels and a pod affinity (its namespace's
and the workload's namespaces' labels are what a namespaceSelector reads, as the live scheduler's informer keeps
them); pods still waiting when every other has finished are counted (unplaced) and left out of the figures.

Policies (sim_policies.py), all behind the same filters (the real ``ClusterState.feasible``):
- ``default``: kube-scheduler's default scoring: NodeResourcesLeastAllocated + BalancedAllocation;
- ``random``: a random feasible node;
- ``prototype``: the study's prototype: the node with the largest sum of its results for the
  benchmark, read once at start-up (more runs look faster; no direction, no uncertainty);
- ``podtax``: the real scheduler code (``algorithm.decide`` with ``BenchmarkScore`` and
  ``LeastAllocated`` and the profile's weights) on scores built from the campaign like the
  analyzer builds them (median per run, distribution-free 95% interval, n);
- ``oracle`` (always run, the reference): the feasible node with the best true mean speed.

Per seed (common random numbers: the same arrivals and speed draws for every policy): mean and
95th percentile job completion time (arrival to finish, queueing included), makespan (first arrival
to last finish), throughput (jobs per hour over the makespan) and regret (expected runtime on the
chosen node over expected runtime on the oracle's choice at that moment, minus 1, averaged over
jobs). Across seeds: mean with a t-distribution 95% interval, and each policy's mean JCT as a ratio
to ``default`` per seed (paired) with its interval. The same seed gives the same numbers.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import t

from podtax_scheduler.model import PodInfo
from podtax_scheduler.podaffinity import REQUIRED
from podtax_scheduler.profile import Profile
from podtax_scheduler.sim_policies import OraclePolicy, make_policy
from podtax_scheduler.state import ClusterState


@dataclass(frozen=True)
class Measured:
    """One benchmark group of a campaign: pod-side values per node (metric unit, run order)."""

    test: str
    params_key: str
    metric: str
    unit: str
    higher_is_better: bool
    values: dict[str, np.ndarray]

    def speeds(self, node: str) -> np.ndarray:
        """Sorted speeds (larger is better) of a node; every node's pooled when it was not measured."""
        v = self.values.get(node)
        if v is None or len(v) == 0:
            v = np.concatenate(list(self.values.values()))
        v = np.asarray(v, dtype=float)
        v = v[v > 0]
        return np.sort(v if self.higher_is_better else 1.0 / v)


@dataclass(frozen=True)
class JobClass:
    name: str
    group: Measured
    rate_per_s: float
    runtime_s: float
    requests: dict[str, str]
    namespace: str = "sim"
    labels: dict[str, str] = field(default_factory=dict)  # the pods' own, besides `test`
    affinity: dict[str, Any] | None = None  # the pods' spec.affinity, as Kubernetes takes it


@dataclass(frozen=True)
class Workload:
    nodes: list[str]  # simulated node -> measured node it copies: "<measured>" or "<measured>-<k>"
    measured_node: dict[str, str]
    capacity: dict[str, str]
    duration_s: float
    contention: float
    classes: list[JobClass]
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> labels (a namespaceSelector's)


@dataclass
class Job:
    id: int
    cls: int
    arrival: float
    u: float  # the job's quantile of a node's speed distribution (common across policies)
    pod: dict[str, Any] = field(default_factory=dict)
    info: PodInfo | None = None


def node_object(name: str, capacity: dict[str, str]) -> dict[str, Any]:
    alloc = {"pods": "110", **capacity}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {}, "status": {"allocatable": alloc, "capacity": alloc,
                                   "conditions": [{"type": "Ready", "status": "True"}]}}


def pod_object(job: Job, cls: JobClass) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "benchmark-scheduler",
                            "containers": [{"name": "main", "resources": {"requests": dict(cls.requests)}}]}
    if cls.affinity:
        spec["affinity"] = cls.affinity
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"job-{job.id}", "namespace": cls.namespace, "uid": f"uid-{job.id}",
                         "labels": {**cls.labels, "test": cls.group.test},
                         "annotations": {"podtax.io/params": cls.group.params_key}},
            "spec": spec, "status": {"phase": "Pending"}}


def namespace_objects(w: Workload) -> list[dict[str, Any]]:
    """The workload's namespaces (and its classes', unlabelled when not given) as the namespace informer lists them."""
    labels = {**{c.namespace: {} for c in w.classes}, **w.namespaces}
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(lab)}}
            for name, lab in labels.items()]


def cluster_state(w: Workload) -> ClusterState:
    """The simulated cluster before any pod: its nodes and namespaces, as the live scheduler's informers fill it."""
    state = ClusterState()
    for node in w.nodes:
        state.upsert_node(node_object(node, w.capacity))
    state.namespaces.sync(namespace_objects(w))
    return state


def arrivals(w: Workload, seed: int) -> list[Job]:
    """Poisson arrivals of every class until duration_s, with each job's speed quantile."""
    rng = np.random.default_rng([seed, 13])
    jobs: list[Job] = []
    for ci, cls in enumerate(w.classes):
        n = rng.poisson(cls.rate_per_s * w.duration_s)
        for at in np.sort(rng.uniform(0.0, w.duration_s, n)):
            jobs.append(Job(0, ci, float(at), float(rng.uniform())))
    jobs.sort(key=lambda j: (j.arrival, j.cls))
    for i, j in enumerate(jobs):
        j.id = i
        j.pod = pod_object(j, w.classes[j.cls])
        j.info = PodInfo.from_dict(j.pod)
    return jobs


class NothingPlaced(ValueError):
    """No pod of a run could be placed: every class's required affinity waits on pods that never run beside it."""


def run_once(w: Workload, policy_name: str, seed: int, profile: Profile | None = None) -> dict[str, Any]:
    """Simulate one policy for one seed; returns mean_jct_s, p95_jct_s, makespan_s, jobs_per_h, regret_pct, jobs,
    over the pods placed, and unplaced (pods never placed: a required pod affinity never met) and unplaced_by_class."""
    speeds = {(ci, node): c.group.speeds(w.measured_node[node]) for ci, c in enumerate(w.classes) for node in w.nodes}
    ref = [float(np.median([np.median(speeds[(ci, n)]) for n in w.nodes])) for ci in range(len(w.classes))]
    jobs = arrivals(w, seed)
    oracle = OraclePolicy({k: float(v.mean()) for k, v in speeds.items()}, {j.info.name: j.cls for j in jobs})
    policy = oracle if policy_name == "oracle" else make_policy(policy_name, w, seed, profile)
    state = cluster_state(w)
    running: dict[str, int] = dict.fromkeys(w.nodes, 0)
    events: list[tuple[float, int, int, str]] = [(j.arrival, 0, j.id, "") for j in jobs]
    heapq.heapify(events)
    pending: list[Job] = []
    waits_on_pods = any(c.affinity and (c.affinity.get("podAffinity") or {}).get(REQUIRED) for c in w.classes)
    finish: dict[int, float] = {}
    regrets: list[float] = []
    while events:
        now, kind, jid, node = heapq.heappop(events)
        if kind == 1:  # a job finished: free its node
            state.delete_pod(f"uid-{jid}")
            running[node] -= 1
            finish[jid] = now
        else:
            pending.append(jobs[jid])
        while pending:  # again after a placement: a pod placed may be what an earlier one's affinity waits for
            full: set[int] = set()
            still: list[Job] = []
            for job in pending:
                idx = state.feasible(job.info) if job.cls not in full else np.zeros(0, dtype=np.int64)
                if len(idx) == 0:
                    full.add(job.cls)  # same pod but its name: no later job of this class fits either
                    still.append(job)
                    continue
                pick = int(idx[policy.choose(job.info, state, idx)])
                name = str(state.names[pick])
                expected = oracle.expected(job.info, state, idx)
                regrets.append(float(expected.max() / oracle.mean_speed[(job.cls, name)] - 1.0))
                sp = speeds[(job.cls, name)]
                speed = sp[min(len(sp) - 1, int(job.u * len(sp)))]
                runtime = w.classes[job.cls].runtime_s * ref[job.cls] / speed * (1.0 + w.contention * running[name])
                state.upsert_pod({**job.pod, "spec": {**job.pod["spec"], "nodeName": name}})
                running[name] += 1
                heapq.heappush(events, (now + runtime, 1, job.id, name))
            progressed = len(still) < len(pending)
            pending = still
            if not (progressed and waits_on_pods):
                break
    placed = [j for j in jobs if j.id in finish]
    unplaced = [j for j in jobs if j.id not in finish]  # a required pod affinity never met: the figures leave them
    by_class = {f"classes.{c}": sum(1 for j in unplaced if j.cls == c) for c in sorted({j.cls for j in unplaced})}
    if unplaced and not placed:
        raise NothingPlaced(f"policy {policy_name} placed none of the {len(jobs)} pods of seed {seed}: the required "
                            f"affinity of {', '.join(by_class)} is never met; give the pods it selects a class of "
                            f"their own or drop it")
    jct = np.array([finish[j.id] - j.arrival for j in placed]) if placed else np.zeros(1)
    span = (max(finish.values()) - placed[0].arrival) if placed else 0.0
    return {"mean_jct_s": float(jct.mean()), "p95_jct_s": float(np.percentile(jct, 95)), "makespan_s": span,
            "jobs_per_h": len(placed) / span * 3600.0 if span > 0 else 0.0,
            "regret_pct": 100.0 * float(np.mean(regrets)) if regrets else 0.0, "jobs": float(len(placed)),
            "unplaced": float(len(unplaced)), "unplaced_by_class": by_class}


def place_sequence(w: Workload, classes: Sequence[int], policy_name: str = "podtax", seed: int = 0,
                   profile: Profile | None = None) -> list[str | None]:
    """Place one pod of each given class in turn, none finishing; the node of each (None: nothing fits).
    The emulator cross-check creates the same pods against the real scheduler service and compares."""
    policy = make_policy(policy_name, w, seed, profile)
    state = cluster_state(w)
    out: list[str | None] = []
    for i, c in enumerate(classes):
        job = Job(i, c, 0.0, 0.5)
        job.pod = pod_object(job, w.classes[c])
        info = PodInfo.from_dict(job.pod)
        idx = state.feasible(info)
        if len(idx) == 0:
            out.append(None)
            continue
        name = str(state.names[int(idx[policy.choose(info, state, idx)])])
        state.upsert_pod({**job.pod, "spec": {**job.pod["spec"], "nodeName": name}})
        out.append(name)
    return out


def interval(x: Sequence[float]) -> tuple[float, float, float]:
    """Mean and its t-distribution 95% interval."""
    a = np.asarray(x, dtype=float)
    m = float(a.mean())
    if len(a) < 2:
        return m, m, m
    h = float(t.ppf(0.975, len(a) - 1) * a.std(ddof=1) / math.sqrt(len(a)))
    return m, m - h, m + h


def evaluate(w: Workload, policies: Sequence[str], seeds: Sequence[int],
             profile: Profile | None = None) -> dict[str, dict[str, Any]]:
    """Every policy (and the oracle) over every seed: per metric [mean, low, high], plus vs_default."""
    names = list(dict.fromkeys([*policies, "oracle"]))
    per = {p: [run_once(w, p, s, profile) for s in seeds] for p in names}
    out: dict[str, dict[str, Any]] = {}
    for p, runs in per.items():
        out[p] = {k: list(interval([r[k] for r in runs])) for k in runs[0] if k != "unplaced_by_class"}
        by_class = {c for r in runs for c in r["unplaced_by_class"]}
        out[p]["unplaced_by_class"] = {c: sum(r["unplaced_by_class"].get(c, 0) for r in runs) / len(runs)
                                       for c in sorted(by_class)}  # mean pods a seed
        if "default" in per:
            out[p]["jct_vs_default"] = list(interval([r["mean_jct_s"] / d["mean_jct_s"]
                                                      for r, d in zip(runs, per["default"], strict=True)]))
    return out
