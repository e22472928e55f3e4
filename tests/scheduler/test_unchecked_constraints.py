"""Hard constraints no filter here checks (required pod affinity or anti-affinity, topology spread with
whenUnsatisfiable: DoNotSchedule): before, the scheduler placed such a pod as if they were not there, so two
replicas that must never share a node could. Now the pod stays Pending with a FailedScheduling Event and the
PodScheduled condition naming the field and the fix; soft (preferred, ScheduleAnyway) ones are only ignored."""

from __future__ import annotations

from typing import Any

import pytest
from podtax_scheduler.model import unchecked_constraints

from tests.scheduler.conftest import events_for
from tests.scheduler.sched_objects import pod

TERM = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": TERM}]}


@pytest.mark.parametrize(("spec", "named"), [
    ({}, None),
    ({"affinity": {"podAntiAffinity": PREFERRED, "podAffinity": PREFERRED}}, None),
    ({"affinity": {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": []}}}}, None),  # checked by NodeAffinity
    ({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}]},
     None),
    ({"affinity": {"podAntiAffinity": {REQUIRED: [TERM]}}},
     ["spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"]),
    ({"affinity": {"podAffinity": {REQUIRED: [TERM]}, "podAntiAffinity": {REQUIRED: [TERM]}}},
     ["spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution",
      "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"]),
    ({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone"}]},  # DoNotSchedule is the default
     ["spec.topologySpreadConstraints with whenUnsatisfiable: DoNotSchedule"]),
])
def test_which_constraints_are_named(spec: dict[str, Any], named: list[str] | None) -> None:
    said = unchecked_constraints(spec)
    if named is None:
        assert said is None
    else:
        assert said is not None and said.startswith(f"benchmark-scheduler does not check {' nor '.join(named)}, ")


def test_a_pod_with_required_anti_affinity_stays_pending_and_says_why(sim_factory: Any,
                                                                      scheduler_factory: Any) -> None:
    sim = sim_factory({"nodes": [{"name": n, "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
                                 for n in ("a", "b")]})
    scheduler_factory(sim.kubeconfig)
    sim.create(pod("spread", cpu="100m", labels={"app": "x"}, affinity={"podAntiAffinity": {REQUIRED: [TERM]}}))
    sim.create(pod("soft", cpu="100m", labels={"app": "x"}, affinity={"podAntiAffinity": PREFERRED}))
    sim.wait_for(lambda: (sim.get("pods", "soft", "default") or {})["spec"].get("nodeName"))
    failed = sim.wait_for(lambda: [e for e in events_for(sim, "spread") if e["reason"] == "FailedScheduling"])
    assert failed[0]["message"].startswith("benchmark-scheduler does not check spec.affinity.podAntiAffinity."
                                           "requiredDuringSchedulingIgnoredDuringExecution, so it leaves the pod "
                                           "Pending"), failed
    cond = sim.wait_for(lambda: [c for c in sim.get("pods", "spread", "default")["status"].get("conditions") or []
                                 if c["type"] == "PodScheduled"])
    assert (cond[0]["status"], cond[0]["reason"]) == ("False", "Unschedulable")
    assert not sim.get("pods", "spread", "default")["spec"].get("nodeName")
