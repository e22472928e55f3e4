"""The fake kubelet of every node: admits bound pods and moves them Pending -> Running ->
Succeeded/Failed, sets conditions, containerStatuses, podIP and startTime, and finishes graceful
deletions. Modes:
  simulated  containers "run" for podtax.io/sim-duration-seconds (or the default); exit code from
             podtax.io/sim-exit-code; output from podtax.io/sim-log. restartPolicy Always pods run
             until deleted.
  exec       containers run as local processes (see execrun.py).
  none       no containers at all: bound pods go Running and stay there until deleted.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Callable
from pathlib import Path
from typing import Any

from podtax_kubesim import initstatus as I
from podtax_kubesim import resources as R
from podtax_kubesim.api import Api, set_condition
from podtax_kubesim.dist import Sampler
from podtax_kubesim.logs import Logs
from podtax_kubesim.podnet import PodNetwork
from podtax_kubesim.store import Event
from podtax_kubesim.util import Obj, deepcopy, new_uid, now

TERMINAL = ("Succeeded", "Failed")
A_DURATION, A_EXIT, A_LOG, A_START = ("podtax.io/sim-duration-seconds", "podtax.io/sim-exit-code",
                                      "podtax.io/sim-log", "podtax.io/sim-start-seconds")
A_PULL = "podtax.io/sim-image-pull-error"  # its images never pull: the error (ErrImagePull, then ImagePullBackOff)


class Kubelet:
    def __init__(self, api: Api, logs: Logs, mode: str, duration: Sampler, start_delay: float = 0.0,
                 workdir: Path | None = None, isolation: bool = True, pod_network: bool = False,
                 restart_backoff: float = 1.0) -> None:
        if mode not in ("simulated", "exec", "none"):
            raise ValueError(f"kubelet mode must be simulated, exec or none, not {mode!r}")
        self.api, self.store, self.logs, self.mode = api, api.store, logs, mode
        self.duration, self.start_delay = duration, start_delay
        self.workdir, self.isolation = workdir, isolation
        self.restart_backoff = restart_backoff  # exec: a restart's first back-off, doubled per restart (execrun.py)
        self.handles: dict[str, Any] = {}  # pod uid -> timer list or exec task
        self.waiting: dict[str, tuple[str, str]] = {}
        self.terminating: set[str] = set()
        self.procs: dict[str, list[asyncio.subprocess.Process]] = {}
        self.ips: dict[str, int] = {}
        self.network: PodNetwork | None = None
        if pod_network:
            if mode != "exec":
                raise ValueError("pod_network needs the exec kubelet (pods must be real processes)")
            self.network = PodNetwork()
        self.nets: dict[str, ipaddress.IPv4Network | ipaddress.IPv6Network] = {}
        self.store.listen(R.PODS, self._on_pod)
        self.store.listen(R.NODES, lambda ev: self._recheck())
        self.store.listen(R.PVCS, lambda ev: self._recheck())

    # --- admission -----------------------------------------------------------
    def _on_pod(self, ev: Event) -> None:
        pod, uid = ev.obj, ev.obj["metadata"]["uid"]
        if ev.type == "DELETED":
            self._stop(uid, force=True)
            self.waiting.pop(uid, None)
            asyncio.get_running_loop().call_later(60, self.logs.forget, uid)
        elif pod["metadata"].get("deletionTimestamp"):
            if pod["spec"].get("nodeName") and uid not in self.terminating:
                self.terminating.add(uid)
                asyncio.get_running_loop().call_soon(self._terminate, pod)
        elif pod["spec"].get("nodeName") and uid not in self.handles and uid not in self.waiting \
                and pod["status"].get("phase") not in TERMINAL:
            self._admit(pod)

    def _blocked(self, pod: Obj) -> str:
        node = self.store.get(R.NODES, "", pod["spec"]["nodeName"])
        if node is None:
            return "node missing"
        if not any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", [])):
            return "node not ready"
        for vol in pod["spec"].get("volumes") or []:
            claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
            if claim:
                pvc = self.store.get(R.PVCS, pod["metadata"]["namespace"], claim)
                if pvc is None or pvc["status"].get("phase") != "Bound":
                    return f"waiting for PVC {claim}"
        return ""

    def _admit(self, pod: Obj) -> None:
        uid = pod["metadata"]["uid"]
        if self._blocked(pod):
            self.waiting[uid] = (pod["metadata"]["namespace"], pod["metadata"]["name"])
            return
        self.waiting.pop(uid, None)
        loop = asyncio.get_running_loop()
        # as a kubelet's first sync: Initialized (False with init containers), then ContainersReady and Ready once
        # running;
        # soon, not now: an update from this listener would reach the other listeners before the event they are on
        loop.call_soon(self._initialize, pod)
        if self.mode == "exec":
            from podtax_kubesim.execrun import run_pod  # local: keeps simulated runs light

            self.handles[uid] = loop.create_task(run_pod(self, pod))
        else:
            ann = pod["metadata"].get("annotations") or {}
            delay = float(ann.get(A_START, self.start_delay))
            start = self._sim_pull_failed if A_PULL in ann and self.mode == "simulated" else self._sim_start
            self.handles[uid] = [loop.call_later(delay, start, pod)]

    def _recheck(self) -> None:
        for uid, key in list(self.waiting.items()):
            pod = self.store.get(R.PODS, *key)
            if pod is None or pod["metadata"]["uid"] != uid:
                self.waiting.pop(uid, None)
            elif not self._blocked(pod):
                self._admit(pod)

    # --- simulated containers ----------------------------------------------------
    def _sim_start(self, pod: Obj) -> None:
        uid = pod["metadata"]["uid"]
        ann = pod["metadata"].get("annotations") or {}
        for c in pod["spec"]["containers"]:
            buf = self.logs.open(uid, c["name"])
            text = ann.get(f"{A_LOG}.{c['name']}", ann.get(A_LOG, ""))
            if text:
                buf.write(text.encode() + (b"" if text.endswith("\n") else b"\n"))
        self.mark_initialized(pod)
        self.mark_running(pod, [c["name"] for c in pod["spec"]["containers"]])
        if self.mode == "none" or pod["spec"].get("restartPolicy") == "Always":
            return
        raw = ann.get(A_DURATION)
        duration = float(raw) if raw is not None else self.duration()
        if duration == float("inf"):
            return
        code = int(ann.get(A_EXIT, "0"))
        handle = asyncio.get_running_loop().call_later(max(duration, 0.0), self._sim_finish, pod, code)
        self.handles.setdefault(uid, []).append(handle)

    def _sim_pull_failed(self, pod: Obj) -> None:
        """A kubelet's pod whose images do not pull: the sandbox is up (PodReadyToStartContainers), its init
        containers (whose images pulled) ran to completion first (Initialized True: a kubelet pulls a container's
        image only once the init containers are done), then each container waits ErrImagePull with the pull's error,
        then ImagePullBackOff; the pod stays Pending, never Ready."""
        error = (pod["metadata"].get("annotations") or {}).get(A_PULL) or "not found"
        self.mark_initialized(pod)

        def waiting(reason: str, message: Callable[[str], str]) -> Callable[[Obj], None]:
            def change(p: Obj) -> None:
                set_condition(p["status"], "PodReadyToStartContainers", "True")
                p["status"]["containerStatuses"] = [
                    {**container_status(c, running=False, ts=now(), previous=_previous(p["status"], c["name"])),
                     "state": {"waiting": {"reason": reason, "message": message(c.get("image", ""))}}}
                    for c in p["spec"]["containers"]]
            return change

        if self.update(pod, waiting("ErrImagePull", lambda img: f'failed to pull and unpack image "{img}": {error}')):
            self.update(pod, waiting("ImagePullBackOff", lambda image: f'Back-off pulling image "{image}"'))

    def _sim_finish(self, pod: Obj, code: int) -> None:
        names = [c["name"] for c in pod["spec"]["containers"]]
        for name in names:
            buf = self.logs.get(pod["metadata"]["uid"], name)
            if buf:
                buf.close()
        self.mark_terminated(pod, {n: code for n in names})
        self.handles.pop(pod["metadata"]["uid"], None)

    # --- termination ------------------------------------------------------------
    def _stop(self, uid: str, force: bool = False) -> None:
        handle = self.handles.pop(uid, None)
        if isinstance(handle, list):
            for timer in handle:
                timer.cancel()
        elif handle is not None and force:
            handle.cancel()
        if force:
            self.terminating.discard(uid)

    def _terminate(self, pod: Obj) -> None:
        uid = pod["metadata"]["uid"]
        handle = self.handles.get(uid)
        if isinstance(handle, asyncio.Task) and not handle.done():
            from podtax_kubesim.execrun import stop_pod

            grace = int(pod["metadata"].get("deletionGracePeriodSeconds") or 0)
            asyncio.get_running_loop().create_task(stop_pod(self, pod, handle, grace))
            return
        self._stop(uid)
        self.finish_deletion(pod)

    def finish_deletion(self, pod: Obj) -> None:
        meta = pod["metadata"]
        current = self.store.get(R.PODS, meta["namespace"], meta["name"])
        self.terminating.discard(meta["uid"])
        if current is not None and current["metadata"]["uid"] == meta["uid"] \
                and not current["metadata"].get("finalizers"):
            self.store.delete(R.PODS, meta["namespace"], meta["name"])

    # --- status -----------------------------------------------------------------
    def update(self, pod: Obj, change: Callable[[Obj], None]) -> Obj | None:
        meta = pod["metadata"]
        current = self.store.get(R.PODS, meta["namespace"], meta["name"])
        if current is None or current["metadata"]["uid"] != meta["uid"]:
            return None
        new = deepcopy(current)
        change(new)
        return self.store.update(R.PODS, new)

    def pod_ip(self, node_name: str) -> str:
        net = self.nets.get(node_name)
        if net is None:
            node = self.store.get(R.NODES, "", node_name)
            cidr = (node or {}).get("spec", {}).get("podCIDR") or "10.244.0.0/24"
            net = self.nets[node_name] = ipaddress.ip_network(cidr, strict=False)
        n = self.ips[node_name] = self.ips.get(node_name, 0) + 1
        return str(net.network_address + 2 + (n % max(net.num_addresses - 3, 1)))

    def mark_initialized(self, pod: Obj) -> None:
        """A pod with init containers, once they all completed (sidecars: started, running on): Initialized True in
        a status of its own, after PodReadyToStartContainers and before its containers start, as a kubelet reports
        it."""
        inits = pod["spec"].get("initContainers") or []
        if not inits:
            return

        def change(p: Obj) -> None:
            ts, st = now(), p["status"]
            for c in inits:
                previous = _previous_init(st, c["name"])
                if I.is_sidecar(c):
                    if not ((previous or {}).get("state") or {}).get("running"):
                        I.set_init_status(st, p["spec"], I.running(c, ts, previous))
                elif not (previous or {}).get("ready"):
                    I.set_init_status(st, p["spec"], I.terminated(c, 0, ts, previous))
            _set_initialized(p)

        self.update(pod, change)

    def mark_init(self, pod: Obj, c: Obj, code: int | None = None, message: str = "",
                  state: Callable[[Obj | None, str], Obj] | None = None) -> Obj | None:
        """Init container `c` running (`code` None), exited with `code`, or as `state(previous status, now)` makes it
        (a restart, a back-off); Initialized follows (the exec kubelet)."""

        def change(p: Obj) -> None:
            ts, st = now(), p["status"]
            previous = _previous_init(st, c["name"])
            made = state(previous, ts) if state is not None else I.running(c, ts, previous) if code is None else \
                I.terminated(c, code, ts, previous, message)
            I.set_init_status(st, p["spec"], made)
            _set_initialized(p)

        return self.update(pod, change)

    def mark_init_failed(self, pod: Obj, c: Obj, code: int, message: str = "",
                         sidecars: dict[str, int] | None = None) -> None:
        """restartPolicy Never: init container `c` exited `code`, so the pod Failed and its containers never
        started (waiting PodInitializing); the sidecars started before it were stopped (`sidecars`: their codes)."""

        def change(p: Obj) -> None:
            ts, st = now(), p["status"]
            st["phase"] = "Failed"
            I.set_init_status(st, p["spec"], I.terminated(c, code, ts, _previous_init(st, c["name"]), message))
            for name, sidecar_code in (sidecars or {}).items():
                spec = next(x for x in p["spec"]["initContainers"] if x["name"] == name)
                I.set_init_status(st, p["spec"], I.terminated(spec, sidecar_code, ts, _previous_init(st, name)))
            st["containerStatuses"] = [_previous(st, x["name"]) or I.waiting(x) for x in p["spec"]["containers"]]
            _set_initialized(p)
            for ctype in ("Ready", "ContainersReady"):
                set_condition(st, ctype, "False", "PodFailed")
            set_condition(st, "PodReadyToStartContainers", "False")

        self.update(pod, change)

    def mark_running(self, pod: Obj, names: list[str], annotations: dict[str, str] | None = None,
                     pod_ip: str | None = None) -> None:
        node = self.store.get(R.NODES, "", pod["spec"]["nodeName"]) or {"status": {}}
        host_ip = next((a["address"] for a in node["status"].get("addresses", []) if a["type"] == "InternalIP"), "")

        def change(p: Obj) -> None:
            st, ts = p["status"], now()
            if annotations:
                p["metadata"].setdefault("annotations", {}).update(annotations)
            st["phase"] = "Running"
            st.setdefault("startTime", ts)
            st["hostIP"] = host_ip
            st["hostIPs"] = [{"ip": host_ip}]
            if pod_ip:
                st["podIP"] = pod_ip
                st["podIPs"] = [{"ip": pod_ip}]
            elif not st.get("podIP"):
                st["podIP"] = self.pod_ip(p["spec"]["nodeName"])
                st["podIPs"] = [{"ip": st["podIP"]}]
            for ctype in ("PodScheduled", "PodReadyToStartContainers", "Initialized", "ContainersReady"):
                set_condition(st, ctype, "True")
            st["containerStatuses"] = [container_status(c, running=c["name"] in names, ts=ts,
                                                        previous=_previous(st, c["name"]))
                                       for c in p["spec"]["containers"]]
        # Ready in an update of its own, after ContainersReady (a kubelet's order; a watch sees the two apart)
        running = self.update(pod, change)
        for name in names if running is not None else []:  # a kubelet's event, once each container started
            self.api.record_event(running, "Started", f"Started container {name}", component="kubelet")
        if running is not None and not _true(running["status"], "Ready"):
            self.update(pod, lambda p: set_condition(p["status"], "Ready", "True"))

    def _initialize(self, pod: Obj) -> None:
        """Initialized (True without init containers, else False until mark_initialized), PodReadyToStartContainers,
        ContainersReady and Ready False: a kubelet's first status of a pod it admitted; then, in a status of its own,
        PodReadyToStartContainers True (its sandbox is up), before its containers start (after the start delay: a
        kubelet's image pull and start)."""
        meta = pod["metadata"]
        current = self.store.get(R.PODS, meta["namespace"], meta["name"])
        if current is None or current["metadata"]["uid"] != meta["uid"] or _true(current["status"], "Initialized") \
                or current["status"].get("phase") in TERMINAL or current["metadata"].get("deletionTimestamp"):
            return
        if self.update(pod, _initialized) is not None:
            self.update(pod, lambda p: set_condition(p["status"], "PodReadyToStartContainers", "True"))

    def mark_terminated(self, pod: Obj, codes: dict[str, int], messages: dict[str, str] | None = None,
                        sidecars: dict[str, int] | None = None) -> None:
        """The containers exited with `codes`: Succeeded or Failed; each sidecar still running is stopped (its code
        from `sidecars`, else 0: one that exits on SIGTERM as asked), as a kubelet stops them after the containers;
        their codes never decide the phase."""
        def change(p: Obj) -> None:
            st, ts = p["status"], now()
            failed = any(code != 0 for code in codes.values())
            st["phase"] = "Failed" if failed else "Succeeded"
            statuses = {c["name"]: c for c in st.get("containerStatuses") or []}
            out = []
            for c in p["spec"]["containers"]:
                cs = statuses.get(c["name"]) or container_status(c, running=False, ts=ts)
                started = ((cs.get("state") or {}).get("running") or {}).get("startedAt", ts)
                if c["name"] in codes:
                    code = codes[c["name"]]
                    term: Obj = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                                 "startedAt": started, "finishedAt": ts, "containerID": cs.get("containerID")}
                    if messages and messages.get(c["name"]):
                        term["message"] = messages[c["name"]]
                    cs = {**cs, "state": {"terminated": term}, "ready": False, "started": False}
                out.append(cs)
            st["containerStatuses"] = out
            for c in p["spec"].get("initContainers") or []:
                previous = _previous_init(st, c["name"])
                if I.is_sidecar(c) and ((previous or {}).get("state") or {}).get("running"):
                    I.set_init_status(st, p["spec"], I.terminated(c, (sidecars or {}).get(c["name"], 0), ts, previous))
            _set_initialized(p)
            for ctype in ("Ready", "ContainersReady"):
                set_condition(st, ctype, "False", "PodCompleted" if not failed else "PodFailed")
            set_condition(st, "PodReadyToStartContainers", "False")
        self.update(pod, change)


def _true(st: Obj, ctype: str) -> bool:
    return any(c["type"] == ctype and c["status"] == "True" for c in st.get("conditions") or [])


def _initialized(p: Obj) -> None:
    """A kubelet's first status: Initialized True without init containers, else False until they complete."""
    st = p["status"]
    if not any(c["type"] == "PodReadyToStartContainers" for c in st.get("conditions") or []):
        set_condition(st, "PodReadyToStartContainers", "False")
    inits = p["spec"].get("initContainers") or []
    if inits:  # each waits PodInitializing, the containers too, until the init containers run
        st["initContainerStatuses"] = [_previous_init(st, c["name"]) or I.waiting(c) for c in inits]
        st["containerStatuses"] = [_previous(st, c["name"]) or I.waiting(c) for c in p["spec"]["containers"]]
    _set_initialized(p)
    for ctype in ("ContainersReady", "Ready"):
        if not any(c["type"] == ctype for c in st.get("conditions") or []):
            set_condition(st, ctype, "False", "ContainersNotReady", "containers with unready status")


def _set_initialized(p: Obj) -> None:
    set_condition(p["status"], "Initialized", *I.initialized(p["spec"], p["status"]))


def _previous(st: Obj, name: str) -> Obj | None:
    return next((c for c in st.get("containerStatuses") or [] if c["name"] == name), None)


def _previous_init(st: Obj, name: str) -> Obj | None:
    return next((c for c in st.get("initContainerStatuses") or [] if c["name"] == name), None)


def container_status(c: Obj, running: bool, ts: str, previous: Obj | None = None) -> Obj:
    cid = (previous or {}).get("containerID") or f"kubesim://{new_uid().replace('-', '')}"
    state: Obj = {"running": {"startedAt": ts}} if running else \
        {"waiting": {"reason": "ContainerCreating"}}
    return {"name": c["name"], "image": c.get("image", ""), "imageID": f"simulated://{c.get('image', '')}",
            "containerID": cid, "ready": running, "started": running,
            "restartCount": (previous or {}).get("restartCount", 0), "state": state, "lastState": {}}
