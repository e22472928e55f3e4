"""A pod left under one of a pod-startup run's names (an earlier execution of the run, or another's pod): the pod
whose name is taken fails alone, saying whose it is and how to remove it; nothing of the old pod (its conditions,
its deletion) is recorded as the run's; the others' timings stand."""

from __future__ import annotations

from typing import Any

import pytest
from podtax.parsers import parse_text
from podtax_runner.controlplane.common import KIND, LABEL_CAMPAIGN, LABEL_KIND, LABEL_RUN, object_name
from podtax_runner.controlplane.timeline import run_label

from tests.controlplane.conftest import assert_taken_names_abort, cluster, spec

CAMPAIGN = "cpp"
NS = "podtax-runs"  # the runner's default namespace
RUN = spec("pod-startup", campaign=CAMPAIGN, count=8, concurrency=4, timeout=30)
TAKEN = object_name("ps", CAMPAIGN, RUN.run_id, 3)


def pod(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": {"restartPolicy": "Always", "containers": [{"name": "pod", "image": "registry.k8s.io/pause:3.9"}]}}


@pytest.mark.parametrize("labels,says", [
    ({LABEL_KIND: KIND, LABEL_CAMPAIGN: CAMPAIGN, LABEL_RUN: run_label(RUN.run_id)},  # an earlier execution's pod
     f"pod {NS}/{TAKEN} exists already, left by an earlier run of campaign {CAMPAIGN}: remove its leftovers with "
     f"`podtax volumes cleanup --campaign {CAMPAIGN}`"),
    ({}, f"pod {NS}/{TAKEN} exists already and is not podtax's (no podtax.io/kind=control-plane label): "
         f"delete it (kubectl delete pod -n {NS} {TAKEN})"),
])
def test_a_pod_left_under_a_name_of_the_run_fails_only_that_pod(kubesim_factory: Any, run_cp: Any,
                                                                 labels: dict[str, str], says: str) -> None:
    sim = kubesim_factory(cluster(), kubelet="simulated")
    sim.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}, namespace="")
    sim.create(pod(TAKEN, labels), namespace=NS)
    tl = run_cp(RUN, kube=sim)
    failed = {r.name: r for r in tl.objects.values() if r.error}
    assert list(failed) == [TAKEN] and says in (failed[TAKEN].error or ""), failed
    # nothing of the old pod is recorded as this run's object
    assert set(failed[TAKEN].t) == {"request_sent"} and failed[TAKEN].server == {}, failed[TAKEN].line()
    assert parse_text(tl.jsonl(), "timeline").values()["objects_ok"] == 7  # the run stands, less that pod
    assert all({"scheduled", "ready", "gone"} <= set(r.t) for r in tl.objects.values() if not r.error)


def test_pods_left_under_12_of_20_names_abort_the_run(kubesim_factory: Any, run_cp: Any) -> None:
    """Review r9 of 964847b4: a collision was recorded on its pod before _error counted it, so it counted 0 and
    12 of 20 names taken completed. More than max(10, 10 %) pods failed: the run is aborted."""
    run = spec("pod-startup", campaign=CAMPAIGN, count=20, concurrency=4, timeout=60)
    sim = kubesim_factory(cluster(), kubelet="simulated")
    taken = [pod(object_name("ps", CAMPAIGN, run.run_id, i), {}) for i in range(1, 13)]
    assert_taken_names_abort(run_cp, sim, run, NS, taken, "pod")
