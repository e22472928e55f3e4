"""The simulated kubelet's pod conditions, seen through the real kubernetes client's watch: each becomes True in a
kubelet's order, PodScheduled (the binding), Initialized and PodReadyToStartContainers (the kubelet's first statuses:
no init containers, the sandbox up) before the containers start, then ContainersReady and Ready; their
lastTransitionTime is metav1.Time (whole seconds, as kube-burner's podLatency reads them) and never goes back.
Before, PodReadyToStartContainers turned True with ContainersReady, after the start delay (a kubelet's image pull
and container start), where a kubelet sets it once the sandbox is up."""

from __future__ import annotations

import datetime as dt
import re
import sys
import time
from typing import Any

from kubernetes import client, watch
from podtax_kubesim.testing import Sim

ORDER = ("PodScheduled", "Initialized", "PodReadyToStartContainers", "ContainersReady", "Ready")
SECONDS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": {"podtax.io/sim-start-seconds": "0.3",
                                                      "podtax.io/sim-duration-seconds": "inf"}},
            "spec": {"restartPolicy": "Always", "nodeSelector": {"kubernetes.io/hostname": "rpi-0"},
                     "containers": [{"name": "c", "image": "i"}], **spec}}


def conditions_seen(core: client.CoreV1Api, body: dict[str, Any]) -> list[dict[str, Any]]:
    """Create `body`; the pod's conditions (by type) in each event a watch sees of it, until Ready is True."""
    rv = core.list_namespaced_pod("default").metadata.resource_version  # the watch sees every event of the pod
    core.create_namespaced_pod("default", body)
    seen: list[dict[str, Any]] = []  # the conditions of each event, in order
    for ev in watch.Watch().stream(core.list_namespaced_pod, "default",
                                   field_selector=f"metadata.name={body['metadata']['name']}",
                                   resource_version=rv, timeout_seconds=20, _preload_content=False):
        conds = {c["type"]: c for c in (ev["raw_object"].get("status") or {}).get("conditions") or []}
        seen.append(conds)
        if (conds.get("Ready") or {}).get("status") == "True":
            break
    assert seen and seen[-1]["Ready"]["status"] == "True", seen
    return seen


def first_true(seen: list[dict[str, Any]], ctype: str) -> int:
    return next(i for i, conds in enumerate(seen) if (conds.get(ctype) or {}).get("status") == "True")


def test_conditions_in_a_kubelets_order_with_whole_second_times(kubesim: Sim) -> None:
    core = client.CoreV1Api(kubesim.api_client())
    seen = conditions_seen(core, pod("cond"))
    firsts = [first_true(seen, c) for c in ORDER]
    assert firsts == sorted(firsts), (firsts, seen)
    # the sandbox is up before the containers start: seen True in an event before ContainersReady's
    assert first_true(seen, "PodReadyToStartContainers") < first_true(seen, "ContainersReady"), seen
    final = seen[-1]
    times = [final[c]["lastTransitionTime"] for c in ORDER]
    assert all(SECONDS.match(t) for t in times), times
    assert times == sorted(times), times  # whole seconds of one clock: never back
    for conds in seen:  # a condition's time, once True, stays
        for c, cond in conds.items():
            if cond["status"] == "True":
                assert cond["lastTransitionTime"] == final[c]["lastTransitionTime"], (c, seen)
    core.delete_namespaced_pod("cond", "default", grace_period_seconds=0)


def test_a_pod_with_init_containers_is_initialized_after_its_sandbox(kubesim: Sim) -> None:
    """With init containers a kubelet's order is PodScheduled, PodReadyToStartContainers (the sandbox, where the init
    containers run), Initialized (once they completed), ContainersReady, Ready; Initialized is False until then, in
    the kubelet's words. Before, kubesim set Initialized True on admission, before PodReadyToStartContainers."""
    core = client.CoreV1Api(kubesim.api_client())
    seen = conditions_seen(core, pod("init", initContainers=[{"name": "setup", "image": "i"},
                                                             {"name": "migrate", "image": "i"}]))
    order = ("PodScheduled", "PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready")
    firsts = [first_true(seen, c) for c in order]
    assert firsts == sorted(firsts) and len(set(firsts[1:])) == 4, (firsts, seen)  # each in an event of its own
    waiting = next(conds["Initialized"] for conds in seen if "Initialized" in conds)
    assert (waiting["status"], waiting["reason"], waiting["message"]) == \
        ("False", "ContainersNotInitialized", "containers with incomplete status: [setup migrate]"), waiting
    assert "reason" not in seen[-1]["Initialized"], seen[-1]
    final = core.read_namespaced_pod("init", "default").status
    assert [(s.name, s.state.terminated.reason, s.state.terminated.exit_code) for s in final.init_container_statuses] \
        == [("setup", "Completed", 0), ("migrate", "Completed", 0)]
    core.delete_namespaced_pod("init", "default", grace_period_seconds=0)


def test_an_exec_kubelets_init_containers_run_before_initialized(kubesim_factory: Any) -> None:
    """The exec kubelet: Initialized turns True once the init container ran (exit 0), in a status of its own after
    PodReadyToStartContainers and before ContainersReady."""
    sim = kubesim_factory({"nodes": [{"name": "local"}]}, kubelet="exec", isolation=False)
    core = client.CoreV1Api(sim.api_client())
    py = sys.executable
    seen = conditions_seen(core, pod("exec-init", nodeSelector={"kubernetes.io/hostname": "local"},
                                     initContainers=[{"name": "setup", "image": "i", "command": [py, "-c", "pass"]}],
                                     containers=[{"name": "c", "image": "i",
                                                  "command": [py, "-c", "import time; time.sleep(60)"]}]))
    order = ("PodScheduled", "PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready")
    firsts = [first_true(seen, c) for c in order]
    assert firsts == sorted(firsts) and len(set(firsts[1:])) == 4, (firsts, seen)
    core.delete_namespaced_pod("exec-init", "default", grace_period_seconds=0)


def test_events_as_kube_burner_reads_them(kubesim: Sim) -> None:
    """kube-burner's podLatency takes PodScheduled from the Scheduled event's eventTime (microseconds) and
    ContainersStarted from the Started event's name (`<pod>.<hex nanoseconds>`, client-go's). Before, kubesim's
    events had no eventTime, a random name suffix, and there was no Started event."""
    core = client.CoreV1Api(kubesim.api_client())
    body = {"metadata": {"name": "ev", "annotations": {"podtax.io/sim-start-seconds": "0.2",
                                                      "podtax.io/sim-duration-seconds": "inf"}},
            "spec": {"restartPolicy": "Always", "nodeSelector": {"kubernetes.io/hostname": "rpi-0"},
                     "containers": [{"name": "c", "image": "i"}]}}
    created = core.create_namespaced_pod("default", body)
    pod = kubesim.wait_for_phase("default", "ev", ("Running",))
    events: dict[str, Any] = {}
    deadline = time.monotonic() + 10
    while {"Scheduled", "Started"} - set(events) and time.monotonic() < deadline:  # the Started event follows Running
        listed = core.list_namespaced_event("default", field_selector="involvedObject.name=ev").items
        events = {e.reason: e for e in listed if e.involved_object.uid == created.metadata.uid}
        time.sleep(0.05)
    assert {"Scheduled", "Started"} <= set(events), events
    scheduled, started = events["Scheduled"].event_time, events["Started"]
    name, stamp = started.metadata.name.split(".")
    started_at = dt.datetime.fromtimestamp(int(stamp, 16) / 1e9, dt.UTC)
    born = created.metadata.creation_timestamp
    ready = next(c["lastTransitionTime"] for c in pod["status"]["conditions"] if c["type"] == "ContainersReady")
    ready_at = dt.datetime.fromisoformat(ready.replace("Z", "+00:00"))
    assert name == "ev" and scheduled is not None
    assert scheduled.microsecond != 0, scheduled  # microseconds (exactly on a second once in a million)
    assert born <= scheduled < started_at < ready_at + dt.timedelta(seconds=1), (born, scheduled, started_at, ready)
    assert started_at - scheduled >= dt.timedelta(seconds=0.2)  # the start delay lies between
    core.delete_namespaced_pod("ev", "default", grace_period_seconds=0)


def _states(statuses: list[Any]) -> list[tuple[str, str, Any, bool, bool]]:
    """(name, state, its reason or exit code, ready, started) of each container status."""
    out = []
    for s in statuses:
        state = s.state.running and ("running", None) or s.state.terminated and \
            ("terminated", (s.state.terminated.reason, s.state.terminated.exit_code)) or \
            ("waiting", s.state.waiting.reason)
        out.append((s.name, *state, s.ready, bool(s.started)))
    return out


def test_an_exec_init_container_that_fails_leaves_the_containers_unstarted(kubesim_factory: Any) -> None:
    """restartPolicy Never, init i1 exits 0, i2 exits 3: the pod Failed; i1 terminated Completed (ready), i2
    terminated Error 3; the container never started (waiting PodInitializing); Initialized False naming i2 alone
    (generate.go). Before: Initialized named [i1 i2], initContainerStatuses was empty and the container showed
    terminated Error exit 3."""
    sim = kubesim_factory({"nodes": [{"name": "local"}]}, kubelet="exec", isolation=False)
    core = client.CoreV1Api(sim.api_client())
    py = sys.executable
    core.create_namespaced_pod("default", {"metadata": {"name": "init-fails"}, "spec": {
        "restartPolicy": "Never", "nodeSelector": {"kubernetes.io/hostname": "local"},
        "initContainers": [{"name": "i1", "image": "i", "command": [py, "-c", "pass"]},
                           {"name": "i2", "image": "i", "command": [py, "-c", "raise SystemExit(3)"]}],
        "containers": [{"name": "main", "image": "i", "command": [py, "-c", "pass"]}]}})
    sim.wait_for_phase("default", "init-fails", ("Failed", "Succeeded"))
    st = core.read_namespaced_pod("init-fails", "default").status
    assert st.phase == "Failed"
    conds = {c.type: c for c in st.conditions}
    assert (conds["Initialized"].status, conds["Initialized"].reason, conds["Initialized"].message) == \
        ("False", "ContainersNotInitialized", "containers with incomplete status: [i2]"), conds["Initialized"]
    assert [(conds[t].status, conds[t].reason) for t in ("ContainersReady", "Ready")] == [("False", "PodFailed")] * 2
    assert _states(st.init_container_statuses) == [("i1", "terminated", ("Completed", 0), True, False),
                                                   ("i2", "terminated", ("Error", 3), False, False)]
    assert _states(st.container_statuses) == [("main", "waiting", "PodInitializing", False, False)]
    assert st.container_statuses[0].container_id is None


def test_a_sidecar_init_container_runs_beside_the_containers(kubesim: Sim) -> None:
    """An init container with restartPolicy Always (a sidecar, 1.29+) keeps running: running, started, ready, while
    the regular init container after it completed; Initialized True. Before, kubesim showed it terminated
    Completed."""
    core = client.CoreV1Api(kubesim.api_client())
    conditions_seen(core, pod("side", initContainers=[{"name": "proxy", "image": "i", "restartPolicy": "Always"},
                                                      {"name": "setup", "image": "i"}]))
    st = core.read_namespaced_pod("side", "default").status
    assert _states(st.init_container_statuses) == [("proxy", "running", None, True, True),
                                                   ("setup", "terminated", ("Completed", 0), True, False)]
    assert next(c for c in st.conditions if c.type == "Initialized").status == "True"
    core.delete_namespaced_pod("side", "default", grace_period_seconds=0)


def test_an_exec_sidecar_runs_until_the_containers_are_done(kubesim_factory: Any, tmp_path: Any) -> None:
    """The exec kubelet starts a sidecar and goes on (it used to wait for it to exit: a sidecar that never exits
    held the pod Pending); once the container exited 0 the sidecar is stopped (SIGTERM: 143, Error) and the pod
    Succeeded, its sidecar's code aside; Initialized True, reason PodCompleted."""
    sim = kubesim_factory({"nodes": [{"name": "local"}]}, kubelet="exec", isolation=False)
    core = client.CoreV1Api(sim.api_client())
    py, flag = sys.executable, tmp_path / "done"
    wait_flag = f"import os, time\nwhile not os.path.exists({str(flag)!r}):\n    time.sleep(0.02)"
    core.create_namespaced_pod("default", {"metadata": {"name": "exec-side"}, "spec": {
        "restartPolicy": "Never", "nodeSelector": {"kubernetes.io/hostname": "local"},
        "terminationGracePeriodSeconds": 5,
        "initContainers": [{"name": "proxy", "image": "i", "restartPolicy": "Always",
                            "command": [py, "-c", "import time; time.sleep(600)"]},
                           {"name": "setup", "image": "i", "command": [py, "-c", "pass"]}],
        "containers": [{"name": "main", "image": "i", "command": [py, "-c", wait_flag]}]}})

    def ready() -> Any:
        got = sim.get("pods", "exec-side", "default") or {}
        return got if any(c["type"] == "Ready" and c["status"] == "True"
                          for c in (got.get("status") or {}).get("conditions") or []) else None

    sim.wait_for(ready, timeout=20)
    st = core.read_namespaced_pod("exec-side", "default").status
    assert _states(st.init_container_statuses) == [("proxy", "running", None, True, True),
                                                   ("setup", "terminated", ("Completed", 0), True, False)]
    flag.write_text("")
    sim.wait_for_phase("default", "exec-side", ("Failed", "Succeeded"))
    st = core.read_namespaced_pod("exec-side", "default").status
    assert st.phase == "Succeeded"
    assert _states(st.init_container_statuses)[0] == ("proxy", "terminated", ("Error", 143), False, False)
    init = next(c for c in st.conditions if c.type == "Initialized")
    assert (init.status, init.reason) == ("True", "PodCompleted")
