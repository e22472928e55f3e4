"""kubesim's built-in default-scheduler when the API server refuses a binding (fault failCreates 'bindings/...'):
as kube-scheduler, it goes on with the next pod, says why (FailedScheduling, PodScheduled False/SchedulerError) and
tries the refused pod again after a backoff. Before, the ApiError ended that turn's drain: the next pod waited for
an unrelated retry and the refused one was never tried again."""

from __future__ import annotations

import asyncio

from kubernetes import client, watch
from podtax_kubesim import resources as R
from podtax_kubesim.testing import Sim

NS = "default"
REFUSED = 'running Bind plugin "DefaultBinder": create of bindings p-a failed (podtax kubesim fault failCreates)'


def events(core: client.CoreV1Api, pod: str) -> list[client.CoreV1Event]:
    """The scheduler's events about `pod`, in the order written."""
    found = core.list_namespaced_event(NS, field_selector=f"involvedObject.name={pod}").items
    return sorted((e for e in found if e.source.component == "default-scheduler"),
                  key=lambda e: int(e.metadata.resource_version))


def test_a_refused_binding_does_not_hold_up_the_next_pod_and_is_tried_again(kubesim_factory) -> None:  # type: ignore[no-untyped-def]
    sim: Sim = kubesim_factory({"nodes": [{"name": "n1", "unschedulable": True}],
                                "faults": {"failCreates": [{"match": "bindings/p-a", "status": 500, "times": 1}]}})
    core = client.CoreV1Api(sim.api_client())
    created = [core.create_namespaced_pod(NS, {"metadata": {"name": name}, "spec": {
        "containers": [{"name": "c", "image": "i"}]}}) for name in ("p-a", "p-b")]
    for name in ("p-a", "p-b"):  # both pending on the cordoned node, so that one turn takes both
        sim.wait_for(lambda n=name: any(e.reason == "FailedScheduling" for e in events(core, n)))
    core.patch_node("n1", {"spec": {"unschedulable": False}})

    assert sim.wait_for(lambda: core.read_namespaced_pod("p-a", NS).spec.node_name, timeout=15) == "n1"
    assert core.read_namespaced_pod("p-b", NS).spec.node_name == "n1"
    said_a = [(e.reason, e.type, e.message) for e in events(core, "p-a")]
    assert said_a[1:] == [("FailedScheduling", "Warning", REFUSED),
                          ("Scheduled", "Normal", "Successfully assigned default/p-a to n1")], said_a
    refused = events(core, "p-a")[1]
    scheduled_b = next(e for e in events(core, "p-b") if e.reason == "Scheduled")
    # the same turn: after p-a's refusal only p-a's PodScheduled=False and p-b's binding are written, then its event
    assert int(scheduled_b.metadata.resource_version) - int(refused.metadata.resource_version) == 3
    assert int(scheduled_b.metadata.resource_version) < int(events(core, "p-a")[2].metadata.resource_version)
    assert [c.status for c in core.read_namespaced_pod("p-a", NS).status.conditions if c.type == "PodScheduled"] \
        == ["True"]
    assert said_by(core, created[0].metadata.resource_version) == [
        ("False", "Unschedulable", "0/1 nodes are available: 1 node(s) were unschedulable."),
        ("False", "SchedulerError", REFUSED), ("True", None, None)]


def said_by(core: client.CoreV1Api, since: str) -> list[tuple[str, str | None, str | None]]:
    """p-a's PodScheduled condition each time it changed after `since`, from a watch (the real client's; the
    emulator replays the writes since then at once, the watch ends after a second)."""
    said: list[tuple[str, str | None, str | None]] = []
    for ev in watch.Watch().stream(core.list_namespaced_pod, NS, field_selector="metadata.name=p-a",
                                   resource_version=since, timeout_seconds=1):
        cond = next((c for c in ev["object"].status.conditions or [] if c.type == "PodScheduled"), None)
        if cond is not None and (not said or said[-1] != (cond.status, cond.reason, cond.message)):
            said.append((cond.status, cond.reason, cond.message))
    return said


def test_a_pod_whose_bindings_are_all_refused_is_tried_again_and_said_once(kubesim_factory) -> None:  # type: ignore[no-untyped-def]
    sim: Sim = kubesim_factory({"nodes": [{"name": "n1"}],
                                "faults": {"failCreates": [{"match": "bindings/p-a", "status": 500, "times": 0}]}})
    core = client.CoreV1Api(sim.api_client())
    created = core.create_namespaced_pod(NS, {"metadata": {"name": "p-a"}, "spec": {
        "containers": [{"name": "c", "image": "i"}]}})
    (told,) = sim.wait_for(lambda: [e for e in events(core, "p-a") if (e.count or 1) >= 3], timeout=20)
    assert (told.reason, told.type, told.message) == ("FailedScheduling", "Warning", REFUSED)
    assert len(events(core, "p-a")) == 1  # one event, counted up
    pod = core.read_namespaced_pod("p-a", NS)
    assert pod.spec.node_name is None
    writes = [ev for ev in watch.Watch().stream(core.list_namespaced_pod, NS, field_selector="metadata.name=p-a",
                                                 resource_version=created.metadata.resource_version,
                                                 timeout_seconds=1)
              if int(ev["object"].metadata.resource_version) <= int(pod.metadata.resource_version)]
    assert [(c.status, c.reason) for ev in writes for c in ev["object"].status.conditions] == [
        ("False", "SchedulerError")]  # written once, not again for the same refusal


def test_the_backoff_doubles_per_refusal_and_the_pods_own_update_does_not_cut_it_short(kubesim_factory) -> None:  # type: ignore[no-untyped-def]
    sim: Sim = kubesim_factory({"nodes": [{"name": "n1"}],
                                "faults": {"failCreates": [{"match": "bindings/p-a", "status": 500, "times": 0}]}})
    scheduler, key = sim.emulator.scheduler, (NS, "p-a")
    core = client.CoreV1Api(sim.api_client())
    core.create_namespaced_pod(NS, {"metadata": {"name": "p-a"}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
    sim.wait_for(lambda: sim.call(lambda: len(scheduler.delays.get(key, []))) >= 3, timeout=20)

    def relabel() -> tuple[list[float], bool, bool, bool]:
        """During the third backoff (4 s): a label patched, as the pod's owner may; said in the same turn, before the
        queue's drain could take it. The retry's own timer (not only the delay recorded) is due in at most 4 s and
        more than 3 s: the third refusal was seen a poll ago."""
        sim.emulator.api.patch(R.POD, NS, "p-a", {"metadata": {"labels": {"touched": "yes"}}},
                               "application/merge-patch+json")
        due = scheduler.backing_off[key].when() - asyncio.get_running_loop().time()
        return list(scheduler.delays[key]), key in scheduler.queue.keys, key in scheduler.backing_off, 3.0 < due <= 4.0

    # retry_seconds 1 doubled per refusal; not queued; the timer set for 4 s
    assert sim.call(relabel) == ([1.0, 2.0, 4.0], False, True, True)


def test_a_pod_deleted_during_its_backoff_has_its_retry_cancelled(kubesim_factory) -> None:  # type: ignore[no-untyped-def]
    """The retry is keyed by namespace/name: left due, it tried a pod created again under that name early."""
    sim: Sim = kubesim_factory({"nodes": [{"name": "n1"}],
                                "faults": {"failCreates": [{"match": "bindings/p-a", "status": 500, "times": 0}]}})
    scheduler, key = sim.emulator.scheduler, (NS, "p-a")
    core = client.CoreV1Api(sim.api_client())
    pod = {"metadata": {"name": "p-a"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    core.create_namespaced_pod(NS, pod)
    sim.wait_for(lambda: sim.call(lambda: len(scheduler.delays.get(key, []))) >= 2, timeout=20)
    retry = sim.call(lambda: scheduler.backing_off[key])
    core.delete_namespaced_pod("p-a", NS)
    sim.wait_for(lambda: sim.get("pods", "p-a", NS) is None)
    assert sim.call(lambda: (retry.cancelled(), key in scheduler.backing_off, scheduler.delays.get(key))) == (
        True, False, None)
    core.create_namespaced_pod(NS, pod)  # a new pod: tried at once, its backoff from 1 s again
    assert sim.wait_for(lambda: sim.call(lambda: scheduler.delays.get(key)), timeout=20) == [1.0]
