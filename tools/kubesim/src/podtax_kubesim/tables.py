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


def pod_status_text(o: Obj) -> str:
    st = o.get("status", {})
    if o["metadata"].get("deletionTimestamp"):
        return "Terminating"
    reason = st.get("reason") or st.get("phase", "Pending")
    for cs in st.get("containerStatuses") or []:
        state = cs.get("state") or {}
        if "waiting" in state and state["waiting"].get("reason"):
            reason = state["waiting"]["reason"]
        elif "terminated" in state:
            reason = state["terminated"].get("reason") or reason
    return reason


def _pod(o: Obj) -> list:
    st = o.get("status", {})
    statuses = st.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount", 0)) for c in statuses)
    return [o["metadata"]["name"], f"{ready}/{len(o['spec'].get('containers', []))}", pod_status_text(o),
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
