"""Init containers' statuses and the pod's Initialized condition, as a kubelet reports them.

A regular init container runs to completion before the next starts: while it runs it is started (no startup probe)
and not ready; once it exited 0 it is ready (terminated Completed), a non-zero exit leaves it neither (terminated
Error). A sidecar (an init container with restartPolicy Always, Kubernetes 1.29+) keeps running beside the
containers: started and ready (no probes) while it runs. Containers not started yet wait with reason PodInitializing
(ContainerCreating without init containers), without a container id.

A regular init container that fails is restarted under the pod's restartPolicy Always or OnFailure (Never fails the
pod): at once the first time, later after a back-off, waiting CrashLoopBackOff ("back-off 10s restarting failed
container=<name> pod=<name>_<namespace>(<uid>)") with its last exit in lastState; each start after an exit is a new
container (a new id) and counts one more in restartCount (restarted, backing_off).

Initialized (the kubelet's GeneratePodInitializedCondition): True with reason PodCompleted once the pod Succeeded;
True once any regular container started (running or terminated); else False, reason ContainersNotInitialized,
"containers with incomplete status: [<names>]" naming each regular init container not ready and each sidecar not
started (and "containers with unknown status: [...]" for those without a status); True when none is left.
"""

from __future__ import annotations

from podtax_kubesim.util import Obj, new_uid

INITIALIZING = "PodInitializing"


def is_sidecar(c: Obj) -> bool:
    return c.get("restartPolicy") == "Always"


def _go_list(names: list[str]) -> str:
    return f"[{' '.join(names)}]"  # Go's %s of a []string


def waiting(c: Obj, reason: str = INITIALIZING, previous: Obj | None = None) -> Obj:
    """A container not started yet (no container id, no image id), as a kubelet's status shows it."""
    return {"name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": False, "started": False,
            "restartCount": (previous or {}).get("restartCount", 0), "state": {"waiting": {"reason": reason}},
            "lastState": {}}


def running(c: Obj, ts: str, previous: Obj | None = None) -> Obj:
    """An init container running: started; ready only a sidecar (a regular one is ready once completed)."""
    return {"name": c["name"], "image": c.get("image", ""), "imageID": f"simulated://{c.get('image', '')}",
            "containerID": (previous or {}).get("containerID") or f"kubesim://{new_uid().replace('-', '')}",
            "ready": is_sidecar(c), "started": True, "restartCount": (previous or {}).get("restartCount", 0),
            "state": {"running": {"startedAt": ts}}, "lastState": (previous or {}).get("lastState") or {}}


def terminated(c: Obj, code: int, ts: str, previous: Obj | None = None, message: str = "") -> Obj:
    """An init container that exited with `code`: Completed (ready, unless a sidecar) or Error."""
    base = running(c, ts, previous)
    started = ((previous or {}).get("state") or {}).get("running", {}).get("startedAt", ts)
    term: Obj = {"exitCode": code, "reason": "Completed" if code == 0 else "Error", "startedAt": started,
                 "finishedAt": ts, "containerID": base["containerID"]}
    if message:
        term["message"] = message
    return {**base, "ready": code == 0 and not is_sidecar(c), "started": False, "state": {"terminated": term}}


def _last_exit(previous: Obj | None) -> Obj:
    """The lastState a restarted or backing-off container shows: the exit it follows (or the one shown already)."""
    prev = previous or {}
    last = (prev.get("state") or {}).get("terminated")
    return {"terminated": last} if last else prev.get("lastState") or {}


def restarted(c: Obj, ts: str, previous: Obj | None) -> Obj:
    """Init container `c` started again after it exited: a new container, restartCount one more, the exit before."""
    return {**running(c, ts), "restartCount": (previous or {}).get("restartCount", 0) + 1,
            "lastState": _last_exit(previous)}


def backing_off(c: Obj, previous: Obj | None, message: str) -> Obj:
    """Init container `c` waiting out its back-off before a restart (CrashLoopBackOff), its last exit in lastState."""
    base = previous or waiting(c)
    return {**base, "ready": False, "started": False,
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": message}}, "lastState": _last_exit(previous)}


def initialized(spec: Obj, st: Obj) -> tuple[str, str | None, str | None]:
    """(status, reason, message) of the Initialized condition for pod spec `spec` and status `st`."""
    inits = spec.get("initContainers") or []
    by_name = {s["name"]: s for s in st.get("initContainerStatuses") or []}
    if st.get("phase") == "Succeeded" and all(c["name"] in by_name for c in inits):
        return "True", "PodCompleted", None
    names = {c["name"] for c in spec.get("containers") or []}
    if any(s["name"] in names and ({"running", "terminated"} & set(s.get("state") or {}))
           for s in st.get("containerStatuses") or []):
        return "True", None, None
    unknown = [c["name"] for c in inits if c["name"] not in by_name]
    incomplete = [c["name"] for c in inits if c["name"] in by_name
                  and not by_name[c["name"]].get("started" if is_sidecar(c) else "ready")]
    said = ([f"containers with unknown status: {_go_list(unknown)}"] if unknown else []) + \
        ([f"containers with incomplete status: {_go_list(incomplete)}"] if incomplete else [])
    return ("False", "ContainersNotInitialized", ", ".join(said)) if said else ("True", None, None)


def set_init_status(st: Obj, spec: Obj, status: Obj) -> None:
    """Put `status` in place of its container's in initContainerStatuses (kept in spec order)."""
    by_name = {s["name"]: s for s in st.get("initContainerStatuses") or []}
    by_name[status["name"]] = status
    st["initContainerStatuses"] = [by_name.get(c["name"]) or waiting(c) for c in spec.get("initContainers") or []]
