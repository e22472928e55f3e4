"""The exec kubelet restarts a failed init container, as a real kubelet does, when the pod's restartPolicy is Always or
OnFailure (Never fails the pod: test_kubesim_pod_conditions): at once the first time, then after a back-off, waiting
CrashLoopBackOff meanwhile with the exit in lastState; restartCount grows, the pod stays Pending, Initialized False,
its containers waiting PodInitializing, and the server-side Table (kubectl get's STATUS) says Init:Error or
Init:CrashLoopBackOff. Before, kubesim failed the pod at the first failure under every restartPolicy."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch
from podtax_kubesim.testing import Sim

TABLE = "application/json;as=Table;v=1;g=meta.k8s.io"


def exec_sim(factory: Any, **opts: Any) -> tuple[Sim, client.CoreV1Api]:
    sim = factory({"nodes": [{"name": "local"}]}, kubelet="exec", isolation=False, **opts)
    return sim, client.CoreV1Api(sim.api_client())


def pod(name: str, policy: str, init_code: str, main: str = "import time; time.sleep(600)") -> dict[str, Any]:
    py = sys.executable
    return {"metadata": {"name": name}, "spec": {
        "restartPolicy": policy, "nodeSelector": {"kubernetes.io/hostname": "local"},
        "initContainers": [{"name": "setup", "image": "i", "command": [py, "-c", init_code]}],
        "containers": [{"name": "main", "image": "i", "command": [py, "-c", main]}]}}


def table_status(core: client.CoreV1Api, name: str) -> tuple[str, str, int]:
    """(READY, STATUS, RESTARTS) of the pod's row in the Table kubectl get asks for."""
    api = core.api_client
    params = api.param_serialize(method="GET", resource_path=f"/api/v1/namespaces/default/pods/{name}",
                                 header_params={"Accept": TABLE}, auth_settings=["BearerToken"])
    resp = api.call_api(*params)
    resp.read()
    table = json.loads(resp.data)
    cols = [c["name"] for c in table["columnDefinitions"]]
    cells = dict(zip(cols, table["rows"][0]["cells"], strict=True))
    return cells["Ready"], cells["Status"], cells["Restarts"]


def init_states(core: client.CoreV1Api, body: dict[str, Any], until_restarts: int) -> list[dict[str, Any]]:
    """Create pod `body`; each status of it a watch sees (raw JSON), until its init container setup has restarted
    `until_restarts` times and waits out a back-off."""
    rv = core.list_namespaced_pod("default").metadata.resource_version  # the watch sees every event of the pod
    core.create_namespaced_pod("default", body)
    name = body["metadata"]["name"]
    seen: list[dict[str, Any]] = []
    for ev in watch.Watch().stream(core.list_namespaced_pod, "default", field_selector=f"metadata.name={name}",
                                   resource_version=rv, timeout_seconds=30, _preload_content=False):
        st = ev["raw_object"].get("status") or {}
        seen.append(st)
        init = (st.get("initContainerStatuses") or [{}])[0]
        if init.get("restartCount", 0) >= until_restarts and "waiting" in (init.get("state") or {}):
            break
    return seen


@pytest.mark.parametrize("policy", ["Always", "OnFailure"])
def test_a_failed_init_container_is_restarted_with_back_off(kubesim_factory: Any, policy: str) -> None:
    sim, core = exec_sim(kubesim_factory)
    seen = init_states(core, pod("crashy", policy, "print('no config'); raise SystemExit(3)"), until_restarts=2)
    assert {st.get("phase") for st in seen} == {"Pending"}  # never Failed, never Running
    inits = [(st.get("initContainerStatuses") or [{}])[0] for st in seen]
    kinds = [(next(iter(i.get("state") or {"none": 0})), i.get("restartCount")) for i in inits]
    assert ("terminated", 0) in kinds and ("running", 1) in kinds and ("terminated", 1) in kinds, kinds
    assert ("waiting", 1) in kinds and ("running", 2) in kinds, kinds  # the first restart waits no back-off
    assert kinds.index(("terminated", 0)) < kinds.index(("running", 1)) < kinds.index(("waiting", 1)) \
        < kinds.index(("running", 2))
    last = inits[-1]
    uid = core.read_namespaced_pod("crashy", "default").metadata.uid
    waiting = last["state"]["waiting"]
    assert waiting["reason"] == "CrashLoopBackOff"
    assert re.fullmatch(rf"back-off 2s restarting failed container=setup pod=crashy_default\({uid}\)",
                        waiting["message"]), waiting  # the default 1 s back-off, doubled once
    assert (last["lastState"]["terminated"]["exitCode"], last["lastState"]["terminated"]["reason"]) == (3, "Error")
    assert (last["ready"], last["started"], last["restartCount"]) == (False, False, 2)
    ids = {i.get("containerID") for i in inits if "running" in (i.get("state") or {})}
    assert len(ids) == 3, ids  # each start a new container
    st = seen[-1]
    conds = {c["type"]: c for c in st["conditions"]}
    assert (conds["Initialized"]["status"], conds["Initialized"]["message"]) == \
        ("False", "containers with incomplete status: [setup]")
    assert [c["state"] for c in st["containerStatuses"]] == [{"waiting": {"reason": "PodInitializing"}}]
    ready, status, restarts = table_status(core, "crashy")
    assert (ready, status) == ("0/1", "Init:CrashLoopBackOff") and restarts >= 2
    events = core.list_namespaced_event("default", field_selector="involvedObject.name=crashy").items
    backoff = [e for e in events if e.reason == "BackOff"]
    assert backoff and backoff[0].type == "Warning" and backoff[0].message == \
        f"Back-off restarting failed container setup in pod crashy_default({uid})"
    core.delete_namespaced_pod("crashy", "default", grace_period_seconds=30)  # the back-off does not hold it up
    sim.wait_for(lambda: sim.get("pods", "crashy", "default") is None, timeout=10)


def test_an_init_container_that_fails_once_then_succeeds_lets_the_pod_run(kubesim_factory: Any,
                                                                          tmp_path: Path) -> None:
    flag = tmp_path / "tried"
    init = f"import pathlib, sys\np = pathlib.Path({str(flag)!r})\nif not p.exists():\n    p.touch()\n" \
           "    sys.exit(1)\n"
    sim, core = exec_sim(kubesim_factory)
    core.create_namespaced_pod("default", pod("flaky", "Always", init))
    sim.wait_for(lambda: (sim.get("pods", "flaky", "default") or {}).get("status", {}).get("phase") == "Running",
                 timeout=20)
    st = core.read_namespaced_pod("flaky", "default").status
    setup = st.init_container_statuses[0]
    assert (setup.state.terminated.reason, setup.state.terminated.exit_code, setup.restart_count, setup.ready) == \
        ("Completed", 0, 1, True)
    assert (setup.last_state.terminated.reason, setup.last_state.terminated.exit_code) == ("Error", 1)
    assert next(c for c in st.conditions if c.type == "Initialized").status == "True"
    assert table_status(core, "flaky") == ("1/1", "Running", 0)  # kubectl counts the containers' restarts then
    core.delete_namespaced_pod("flaky", "default", grace_period_seconds=1)  # its container's process goes with it
    sim.wait_for(lambda: sim.get("pods", "flaky", "default") is None, timeout=20)


def test_the_back_off_is_configurable_and_shown_in_gos_words(kubesim_factory: Any) -> None:
    _, core = exec_sim(kubesim_factory, restart_backoff=0.25)
    seen = init_states(core, pod("quick", "Always", "raise SystemExit(1)"), until_restarts=2)
    said = [i["state"]["waiting"]["message"].split(" restarting")[0] for i in
            ((st.get("initContainerStatuses") or [{}])[0] for st in seen) if "waiting" in (i.get("state") or {})
            and i["state"]["waiting"].get("reason") == "CrashLoopBackOff"]
    assert said == ["back-off 250ms", "back-off 500ms"], said


def test_an_init_error_shows_as_kubectl_shows_it(kubesim_factory: Any) -> None:
    """restartPolicy Never: the pod Failed, its row Init:Error (before: Failed... from the container's reason)."""
    sim, core = exec_sim(kubesim_factory)
    core.create_namespaced_pod("default", pod("broken", "Never", "raise SystemExit(4)"))
    sim.wait_for_phase("default", "broken", ("Failed",), timeout=20)
    assert table_status(core, "broken") == ("0/1", "Init:Error", 0)


def alive(pid: int) -> bool:
    """Process `pid` exists and is no zombie (one killed but not yet reaped is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def pid_writer(path: Path, ignore_term: bool = False) -> str:
    """A container's python program: writes its pid to `path`, then sleeps (ignoring SIGTERM if asked)."""
    ignore = "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if ignore_term else ""
    return f"import os, signal, time\n{ignore}open({str(path)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)\n"


def read_pid(sim: Sim, path: Path) -> int:
    sim.wait_for(lambda: path.exists() and path.read_text().isdigit(), timeout=20)
    return int(path.read_text())


@pytest.mark.parametrize(("policy", "when"), [("Always", "back-off"), ("OnFailure", "back-off"),
                                              ("Always", "running"), ("OnFailure", "running"),
                                              ("Always", "exits 0 on SIGTERM")])
def test_deleting_a_pod_with_a_restarting_init_container_stops_its_sidecar(kubesim_factory: Any, tmp_path: Path,
                                                                            policy: str, when: str) -> None:
    """A pod deleted while its init container backs off or runs: its sidecar (here one that ignores SIGTERM) is
    stopped, SIGKILL after the grace period, before the pod goes, as a kubelet stops it. Before, the sidecar was left
    running and the pod removed at once. An init container that exits 0 on SIGTERM does not start the containers of a
    pod being deleted (before, they started)."""
    sim, core = exec_sim(kubesim_factory)
    side, setup = tmp_path / "side.pid", tmp_path / "setup.pid"
    init = {"back-off": "raise SystemExit(3)", "running": pid_writer(setup),
            "exits 0 on SIGTERM": "import signal, sys\nsignal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\n"
            + pid_writer(setup)}[when]
    body = pod("sc", policy, init)
    body["spec"]["terminationGracePeriodSeconds"] = 1
    body["spec"]["initContainers"].insert(0, {"name": "side", "image": "i", "restartPolicy": "Always",
                                              "command": [sys.executable, "-c", pid_writer(side, True)]})
    core.create_namespaced_pod("default", body)
    pid = read_pid(sim, side)

    def setup_state() -> tuple[int, str]:
        st = (sim.get("pods", "sc", "default") or {}).get("status", {})
        cs = next((c for c in st.get("initContainerStatuses") or [] if c["name"] == "setup"), {})
        return cs.get("restartCount", 0), next(iter(cs.get("state") or {"": 0}))

    if when == "back-off":
        sim.wait_for(lambda: setup_state()[0] >= 1 and setup_state()[1] == "waiting", timeout=20)
    else:
        read_pid(sim, setup)
        assert setup_state() == (0, "running")
    core.delete_namespaced_pod("sc", "default", grace_period_seconds=1)
    sim.wait_for(lambda: sim.get("pods", "sc", "default") is None, timeout=20)
    left = alive(pid)
    if left:
        os.kill(pid, 9)
    assert not left, "the sidecar still runs after its pod was removed"
    events = core.list_namespaced_event("default", field_selector="involvedObject.name=sc").items
    assert [e.message for e in events if e.reason == "Started"] == []  # its containers never started


def test_stopping_the_emulator_kills_every_process_the_exec_kubelet_started(kubesim_factory: Any,
                                                                              tmp_path: Path) -> None:
    """Emulator.stop kills each container process: a running container (restartPolicy Always and Never), a sidecar that
    ignores SIGTERM, an init container running; none is restarted after. Before, the cancelled container tasks took
    their process off the kubelet's list before run_pod's SIGKILL, so the containers and init containers were left
    running (ppid 1 once pytest ended), and the sidecars, killed, were restarted (their tasks were not cancelled)."""
    sim, core = exec_sim(kubesim_factory, restart_backoff=0.05)  # a sidecar killed would be restarted soon
    pids = tmp_path / "pids"
    pids.mkdir()

    def container(name: str, ignore_term: bool = False, **extra: Any) -> dict[str, Any]:
        return {"name": name, "image": "i", "command": [sys.executable, "-c", pid_writer(pids / name, ignore_term)],
                **extra}

    def body(name: str, policy: str, containers: list[dict[str, Any]], inits: list[dict[str, Any]]) -> dict[str, Any]:
        return {"metadata": {"name": name}, "spec": {"restartPolicy": policy, "initContainers": inits,
                                                     "nodeSelector": {"kubernetes.io/hostname": "local"},
                                                     "containers": containers}}

    core.create_namespaced_pod("default", body("always", "Always", [container("always-main")], []))
    core.create_namespaced_pod("default", body("never", "Never", [container("never-main")], []))
    core.create_namespaced_pod("default", body("sided", "Always", [container("sided-main")],
                                               [container("sided-side", True, restartPolicy="Always")]))
    core.create_namespaced_pod("default", body("initing", "Always", [container("initing-main")],
                                               [container("initing-side", True, restartPolicy="Always"),
                                                container("initing-setup")]))
    started = {name: read_pid(sim, pids / name) for name in
               ("always-main", "never-main", "sided-main", "sided-side", "initing-side", "initing-setup")}
    assert all(alive(pid) for pid in started.values()), started
    sim.stop()

    def left() -> dict[int, str]:
        """Each process still running of those started, or of any started since (a restart: its command names pids)."""
        found = {pid: name for name, pid in started.items() if alive(pid)}
        for proc in Path("/proc").iterdir():
            try:
                if proc.name.isdigit() and str(pids).encode() in (proc / "cmdline").read_bytes():
                    found.setdefault(int(proc.name), "a restarted container")
            except OSError:  # gone meanwhile
                continue
        return {pid: name for pid, name in found.items() if alive(pid)}

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and left():
        time.sleep(0.1)
    still = left()
    for pid in still:
        os.kill(pid, 9)
    assert still == {}, f"still running after the emulator stopped: {still}"
