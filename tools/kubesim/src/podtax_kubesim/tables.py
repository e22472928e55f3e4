"""Server-side printing (meta.k8s.io/v1 Table) so `kubectl get` shows the usual columns."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from podtax_kubesim.util import Obj, parse_time

Column = tuple[str, str, int]  # name, type, priority


def age(ts: str | None) -> str:
    start = parse_time(ts)
    if start is None:
        return "<unknown>"
    secs = int((dt.datetime.now(dt.UTC) - start).total_seconds())
    secs = max(secs, 0)
    if secs < 120:
        return f"{secs}s"
    mins = secs // 60
    if mins < 10:
        return f"{mins}m{secs % 60}s" if secs % 60 else f"{mins}m"
    if mins < 180:
        return f"{mins}m"
    hours = mins // 60
    if hours < 48:
        return f"{hours}h"
    return f"{hours // 24}d"


def _node(o: Obj) -> list:
    conds = {c["type"]: c["status"] for c in o.get("status", {}).get("conditions", [])}
    state = "Ready" if conds.get("Ready") == "True" else "NotReady"
    if o.get("spec", {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    labels = o["metadata"].get("labels") or {}
    roles = ",".join(sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/")))
    info = o.get("status", {}).get("nodeInfo", {})
    addrs = {a["type"]: a["address"] for a in o.get("status", {}).get("addresses", [])}
    return [o["metadata"]["name"], state, roles or "<none>", age(o["metadata"].get("creationTimestamp")),
            info.get("kubeletVersion", ""), addrs.get("InternalIP", "<none>"), addrs.get("ExternalIP", "<none>"),
            info.get("osImage", ""), info.get("kernelVersion", ""), info.get("containerRuntimeVersion", "")]


def _pod_state(o: Obj) -> tuple[int, str, int]:
    """(ready containers, STATUS, RESTARTS) of pod `o` as kubectl's printPod gives them: while an init container
    has not completed, Init:<its terminated reason> (Init:Error), Init:<its waiting reason> (Init:CrashLoopBackOff)
    or Init:<i>/<n>, restarts counted over the init containers; else the first container's waiting or terminated
    reason, restarts over the containers and sidecars (init containers with restartPolicy Always)."""
    st, spec = o.get("status", {}), o.get("spec", {})
    sidecars = {c["name"] for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"}
    reason = st.get("reason") or st.get("phase", "Pending")
    ready = restarts = sidecar_restarts = 0
    initializing = False
    for i, cs in enumerate(st.get("initContainerStatuses") or []):
        state = cs.get("state") or {}
        restarts += int(cs.get("restartCount", 0))
        sidecar_restarts += int(cs.get("restartCount", 0)) if cs["name"] in sidecars else 0
        done, waiting = state.get("terminated") or {}, state.get("waiting") or {}
        if done and done.get("exitCode") == 0:
            continue
        if cs["name"] in sidecars and cs.get("started"):
            ready += 1 if cs.get("ready") else 0
            continue
        initializing = True
        if done:
            reason = f"Init:{done['reason']}" if done.get("reason") else f"Init:Signal:{done['signal']}" \
                if done.get("signal") else f"Init:ExitCode:{done.get('exitCode')}"
        elif waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{i}/{len(spec.get('initContainers') or [])}"
        break
    initialized = any(c["type"] == "Initialized" and c["status"] == "True" for c in st.get("conditions") or [])
    if not initializing or initialized:
        restarts, running = sidecar_restarts, False
        for cs in reversed(st.get("containerStatuses") or []):
            state = cs.get("state") or {}
            restarts += int(cs.get("restartCount", 0))
            done, waiting = state.get("terminated"), state.get("waiting") or {}
            if waiting.get("reason"):
                reason = waiting["reason"]
            elif done is not None:
                reason = done.get("reason") or (f"Signal:{done['signal']}" if done.get("signal") else
                                                f"ExitCode:{done.get('exitCode')}")
            elif cs.get("ready") and "running" in state:
                running, ready = True, ready + 1
        if reason == "Completed" and running:
            ready_cond = any(c["type"] == "Ready" and c["status"] == "True" for c in st.get("conditions") or [])
            reason = "Running" if ready_cond else "NotReady"
    if o["metadata"].get("deletionTimestamp") and st.get("phase") not in ("Succeeded", "Failed"):
        reason = "Terminating"
    return ready, reason, restarts


def _pod(o: Obj) -> list:
    st = o.get("status", {})
    ready, reason, restarts = _pod_state(o)
    total = len(o["spec"].get("containers", [])) + sum(1 for c in o["spec"].get("initContainers") or []
                                                       if c.get("restartPolicy") == "Always")
    return [o["metadata"]["name"], f"{ready}/{total}", reason,
            restarts, age(o["metadata"].get("creationTimestamp")), st.get("podIP") or "<none>",
            o["spec"].get("nodeName") or "<none>", "<none>", "<none>"]


def _job(o: Obj) -> list:
    st, spec = o.get("status", {}), o.get("spec", {})
    conds = {c["type"] for c in st.get("conditions") or [] if c.get("status") == "True"}
    state = "Complete" if "Complete" in conds else "Failed" if "Failed" in conds else "Running"
    start, end = parse_time(st.get("startTime")), parse_time(st.get("completionTime"))
    duration = ""
    if start:
        secs = int(((end or dt.datetime.now(dt.UTC)) - start).total_seconds())
        duration = f"{secs}s" if secs < 120 else f"{secs // 60}m"
    return [o["metadata"]["name"], state, f"{st.get('succeeded', 0)}/{spec.get('completions', 1)}", duration,
            age(o["metadata"].get("creationTimestamp"))]


def _pvc(o: Obj) -> list:
    st, spec = o.get("status", {}), o.get("spec", {})
    return [o["metadata"]["name"], st.get("phase", ""), spec.get("volumeName", ""),
            (st.get("capacity") or {}).get("storage", ""), ",".join(_modes(st.get("accessModes") or [])),
            spec.get("storageClassName") or "<unset>", age(o["metadata"].get("creationTimestamp"))]


def _pv(o: Obj) -> list:
    st, spec = o.get("status", {}), o.get("spec", {})
    ref = spec.get("claimRef") or {}
    claim = f"{ref.get('namespace')}/{ref.get('name')}" if ref else ""
    return [o["metadata"]["name"], (spec.get("capacity") or {}).get("storage", ""),
            ",".join(_modes(spec.get("accessModes") or [])), spec.get("persistentVolumeReclaimPolicy", ""),
            st.get("phase", ""), claim, spec.get("storageClassName", ""), age(o["metadata"].get("creationTimestamp"))]


def _modes(modes: list[str]) -> list[str]:
    short = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}
    return [short.get(m, m) for m in modes]


def _event(o: Obj) -> list:
    inv = o.get("involvedObject") or {}
    return [age(o.get("lastTimestamp") or o.get("eventTime")), o.get("type", ""), o.get("reason", ""),
            f"{(inv.get('kind') or '').lower()}/{inv.get('name', '')}", o.get("message", "")]


def _default(o: Obj) -> list:
    return [o["metadata"]["name"], age(o["metadata"].get("creationTimestamp"))]


S, INT = "string", "integer"
PRINTERS: dict[str, tuple[list[Column], Callable[[Obj], list]]] = {
    "Node": ([("Name", S, 0), ("Status", S, 0), ("Roles", S, 0), ("Age", S, 0), ("Version", S, 0),
              ("Internal-IP", S, 1), ("External-IP", S, 1), ("OS-Image", S, 1), ("Kernel-Version", S, 1),
              ("Container-Runtime", S, 1)], _node),
    "Pod": ([("Name", S, 0), ("Ready", S, 0), ("Status", S, 0), ("Restarts", INT, 0), ("Age", S, 0),
             ("IP", S, 1), ("Node", S, 1), ("Nominated Node", S, 1), ("Readiness Gates", S, 1)], _pod),
    "Job": ([("Name", S, 0), ("Status", S, 0), ("Completions", S, 0), ("Duration", S, 0), ("Age", S, 0)], _job),
    "PersistentVolumeClaim": ([("Name", S, 0), ("Status", S, 0), ("Volume", S, 0), ("Capacity", S, 0),
                               ("Access Modes", S, 0), ("StorageClass", S, 0), ("Age", S, 0)], _pvc),
    "PersistentVolume": ([("Name", S, 0), ("Capacity", S, 0), ("Access Modes", S, 0), ("Reclaim Policy", S, 0),
                          ("Status", S, 0), ("Claim", S, 0), ("StorageClass", S, 0), ("Age", S, 0)], _pv),
    "Event": ([("Last Seen", S, 0), ("Type", S, 0), ("Reason", S, 0), ("Object", S, 0), ("Message", S, 0)],
              _event),
}


def table(kind: str, objs: list[Obj], rv: str, include_object: str = "Metadata") -> Obj:
    columns, row = PRINTERS.get(kind, ([("Name", S, 0), ("Age", S, 0)], _default))
    defs = [{"name": n, "type": t, "format": "name" if n == "Name" else "", "description": n, "priority": p}
            for n, t, p in columns]
    rows = []
    for o in objs:
        if include_object == "Object":
            embedded = o
        elif include_object == "None":
            embedded = None
        else:
            embedded = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]}
        rows.append({"cells": row(o), "object": embedded})
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": rv},
            "columnDefinitions": defs, "rows": rows}
