"""Hard constraints no filter here checks (a required pod affinity or anti-affinity term with a non-empty
namespaceSelector): the pod stays Pending with a
FailedScheduling Event and the PodScheduled condition naming the field and the fix, rather than be placed as if
they were not there; soft (preferred, ScheduleAnyway) ones only score
(test_pod_scores.py). Required pod affinity and anti-affinity
without one are checked (InterPodAffinity, test_pod_affinity.py), and so is topology spread with whenUnsatisfiable:
DoNotSchedule (PodTopologySpread, test_pod_spread.py)."""

from __future__ import annotations

from typing import Any

import pytest
from podtax_scheduler.model import unchecked_constraints

from tests.scheduler.conftest import events_for
from tests.scheduler.sched_objects import pod

TERM = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
NS_TERM = {**TERM, "namespaceSelector": {"matchLabels": {"team": "a"}}}
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": TERM}]}


@pytest.mark.parametrize(("spec", "named"), [
    ({}, None),
    ({"affinity": {"podAntiAffinity": PREFERRED, "podAffinity": PREFERRED}}, None),
    ({"affinity": {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": []}}}}, None),  # checked by NodeAffinity
    ({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}]},
     None),
    ({"affinity": {"podAffinity": {REQUIRED: [TERM]}, "podAntiAffinity": {REQUIRED: [TERM]}}}, None),  # checked
    ({"affinity": {"podAntiAffinity": {REQUIRED: [{**TERM, "namespaceSelector": {}}]}}}, None),  # every namespace
    ({"affinity": {"podAntiAffinity": {REQUIRED: [TERM, NS_TERM]}}},
     ["spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[].namespaceSelector "
      "(namespace labels are not watched)"]),
    ({"affinity": {"podAffinity": {REQUIRED: [NS_TERM]}, "podAntiAffinity": {REQUIRED: [NS_TERM]}}},
     ["spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[].namespaceSelector "
      "(namespace labels are not watched)",
      "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[].namespaceSelector "
      "(namespace labels are not watched)"]),
    ({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone"}]}, None),  # checked: PodTopologySpread
])
def test_which_constraints_are_named(spec: dict[str, Any], named: list[str] | None) -> None:
    said = unchecked_constraints(spec)
    if named is None:
        assert said is None
    else:
        assert said is not None and said.startswith(f"benchmark-scheduler does not check {' nor '.join(named)}, ")


def test_a_pod_with_a_namespace_selector_stays_pending_and_says_why(sim_factory: Any,
                                                                    scheduler_factory: Any) -> None:
    sim = sim_factory({"nodes": [{"name": n, "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
                                 for n in ("a", "b")]})
    scheduler_factory(sim.kubeconfig)
    sim.create(pod("spread", cpu="100m", labels={"app": "x"}, affinity={"podAntiAffinity": {REQUIRED: [NS_TERM]}}))
    sim.create(pod("soft", cpu="100m", labels={"app": "x"}, affinity={"podAntiAffinity": PREFERRED}))
    sim.wait_for(lambda: (sim.get("pods", "soft", "default") or {})["spec"].get("nodeName"))
    failed = sim.wait_for(lambda: [e for e in events_for(sim, "spread") if e["reason"] == "FailedScheduling"])
    assert failed[0]["message"].startswith("benchmark-scheduler does not check spec.affinity.podAntiAffinity."
                                           "requiredDuringSchedulingIgnoredDuringExecution[].namespaceSelector "
                                           "(namespace labels are not watched), so it leaves the pod Pending"), failed
    cond = sim.wait_for(lambda: [c for c in sim.get("pods", "spread", "default")["status"].get("conditions") or []
                                 if c["type"] == "PodScheduled"])
    assert (cond[0]["status"], cond[0]["reason"]) == ("False", "Unschedulable")
    assert not sim.get("pods", "spread", "default")["spec"].get("nodeName")
