"""A pod that never becomes Ready is given up with what the pod itself says holds it, not only the phase it
lacked: PodScheduled False's reason and message (`Unschedulable: 0/1 nodes are available: ...`), a container's
waiting reason (`ImagePullBackOff: Back-off pulling image ...`). The real runner against kubesim: the pod is
counted as failed, the others keep their timings, and nothing is left behind; a run all of whose pods are held
says why in its abort."""

from __future__ import annotations

from typing import Any

import pytest
from podtax.parsers import timeline as parser
from podtax_runner.controlplane import podstartup
from podtax_runner.controlplane.common import Aborted

from tests.controlplane.conftest import cluster, leftovers, spec


def plant(sim: Any, monkeypatch: pytest.MonkeyPatch, change: Any, numbers: set[int]) -> None:
    """FAULT INJECTION: the emulator's create applies `change` to the pods whose names end in one of `numbers`."""
    api = sim.emulator.api
    real = api.create

    def create(res: Any, ns: str, body: Any) -> Any:
        name = body["metadata"]["name"]
        if res.kind == "Pod" and name[-4:].isdigit() and int(name[-4:]) in numbers:
            change(body)
        return real(res, ns, body)

    monkeypatch.setattr(api, "create", create)


def no_such_node(body: Any) -> None:
    body["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "no-such-node"}


def image_missing(body: Any) -> None:
    body["metadata"].setdefault("annotations", {})["podtax.io/sim-image-pull-error"] = "not found"


def init_then_image_missing(body: Any) -> None:
    """A mutating webhook's injected init container (a mesh's `istio-init`), then the container's image missing."""
    body["spec"]["initContainers"] = [{"name": "mesh-init", "image": "mesh/init:1"}]
    image_missing(body)


@pytest.mark.parametrize("change,lacked,said", [
    (no_such_node, "not scheduled after", "the pod said: Unschedulable: 0/1 nodes are available: 1 node(s) didn't "
                                          "match Pod's node affinity/selector"),
    (image_missing, "not started after", 'the pod said: container pod: ImagePullBackOff: Back-off pulling image "'),
    # the init container ran to completion before the image pull failed: Initialized, and its Completed is no hold
    (init_then_image_missing, "not started after",
     'the pod said: container pod: ImagePullBackOff: Back-off pulling image "'),
])
def test_a_pod_never_ready_is_given_up_with_the_pods_own_reason(kubesim_factory: Any, run_cp: Any,
                                                                 monkeypatch: pytest.MonkeyPatch, change: Any,
                                                                 lacked: str, said: str) -> None:
    sim = kubesim_factory(cluster(), kubelet="simulated")
    plant(sim, monkeypatch, change, numbers={3})
    tl = run_cp(spec("pod-startup", count=12, concurrency=4, timeout=20), kube=sim)
    failed = {n: r.error for n, r in tl.objects.items() if r.error}
    assert list(failed) == [n for n in tl.objects if n.endswith("-0003")], failed
    name, reason = failed.popitem()
    assert lacked in (reason or "") and said in (reason or ""), reason
    if change is init_then_image_missing:  # a kubelet pulls the containers' images once the init containers are done
        assert "initialized" in tl.objects[name].t, tl.objects[name].t
    assert tl.left_behind == 0 and leftovers(sim.kubeconfig) == []
    values = parser.parse(tl.jsonl(), "pod-startup", {"count": 12}).values()
    assert values["objects_ok"] == 11 and values["errors"] == 1


def test_a_pod_stuck_creating_is_given_up_with_its_newest_event(kubesim_factory: Any, run_cp: Any,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A pod scheduled whose containers never start and whose status says nothing but ContainerCreating (a volume
    that does not mount, a sandbox not set up): its newest event says why, as `kubectl describe pod` shows it."""
    sim = kubesim_factory(cluster(), kubelet="simulated")
    api = sim.emulator.api
    real = api.create

    def create(res: Any, ns: str, body: Any) -> Any:  # FAULT INJECTION: pod 3 never starts, a kubelet's Warning on it
        name = body["metadata"]["name"]
        stuck = res.kind == "Pod" and name.endswith("-0003")
        if stuck:
            body["metadata"].setdefault("annotations", {})["podtax.io/sim-start-seconds"] = "inf"
        made = real(res, ns, body)
        if stuck:
            api.record_event(made, "FailedMount", 'MountVolume.SetUp failed for volume "data" : rpc error: code = '
                             "DeadlineExceeded", "Warning", component="kubelet")
        return made

    monkeypatch.setattr(api, "create", create)
    tl = run_cp(spec("pod-startup", count=12, concurrency=4, timeout=20), kube=sim)
    failed = {n: r.error or "" for n, r in tl.objects.items() if r.error}
    assert list(failed) == [n for n in tl.objects if n.endswith("-0003")], failed
    reason = failed.popitem()[1]
    assert "not started after" in reason and "its newest event: FailedMount: MountVolume.SetUp failed" in reason, \
        reason
    assert tl.left_behind == 0 and leftovers(sim.kubeconfig) == []


def test_a_run_whose_pods_are_all_unschedulable_says_why_in_its_abort(kubesim_factory: Any, run_cp: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    sim = kubesim_factory(cluster(), kubelet="simulated")
    plant(sim, monkeypatch, no_such_node, numbers={1, 2, 3})
    with pytest.raises(Aborted) as info:
        run_cp(spec("pod-startup", count=3, concurrency=3, timeout=4), kube=sim)
    detail = info.value.detail
    assert info.value.reason == "timeout" and "3 of 3 objects stuck in the start wait (3 not scheduled" in detail
    assert "Unschedulable: 0/1 nodes are available" in detail, detail
    assert leftovers(sim.kubeconfig) == []


@pytest.mark.parametrize("status,said", [
    ({"phase": "Running", "containerStatuses": [{"name": "pod", "restartCount": 4, "state": {"waiting": {
        "reason": "CrashLoopBackOff", "message": "back-off 1m20s restarting failed container=pod"}}}]},
     "the pod said: container pod: CrashLoopBackOff: back-off 1m20s restarting failed container=pod (4 restarts)"),
    ({"phase": "Running", "containerStatuses": [{"name": "pod", "restartCount": 1, "state": {"terminated": {
        "exitCode": 137, "reason": "OOMKilled"}}}]},
     "the pod said: container pod: terminated, exit code 137: OOMKilled (1 restarts)"),
    ({"phase": "Pending", "initContainerStatuses": [{"name": "mesh-init", "state": {"terminated": {
        "exitCode": 0, "reason": "Completed"}}}], "containerStatuses": [{"name": "pod", "state": {"waiting": {
            "reason": "ErrImagePull", "message": "not found"}}}]},
     "the pod said: container pod: ErrImagePull: not found"),  # an init container done holds nothing up
    ({"phase": "Pending", "initContainerStatuses": [{"name": "mesh-init", "restartCount": 2, "state": {
        "terminated": {"exitCode": 1, "reason": "Error"}}}]},
     "the pod said: container mesh-init: terminated, exit code 1: Error (2 restarts)"),  # one that failed does
    ({"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."},
     "the pod said: pod Failed: Evicted: The node was low on resource: memory."),
    ({"phase": "Pending", "containerStatuses": [{"name": "pod", "state": {"waiting": {
        "reason": "ContainerCreating"}}}]}, None),  # starting: nothing holds it
    ({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                          "message": "x" * 500}]},
     "the pod said: Unschedulable: " + "x" * (podstartup.SAID_CHARS - len("Unschedulable: "))),  # bounded
])
def test_what_a_held_pod_says(status: dict[str, Any], said: str | None) -> None:
    assert podstartup.held_by({"status": status}) == said
