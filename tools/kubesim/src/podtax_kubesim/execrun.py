"""exec-mode containers: each container's command+args runs as a local process (no shell), in the
isolation this machine allows (see isolation.py); stdout+stderr feed pods/{name}/log and the exit
code decides Succeeded/Failed. restartPolicy Always restarts a container that exits (the kubelet's restart_backoff,
1 s by default); OnFailure is treated like Never. Init containers run one after the other first: one that fails is
restarted under restartPolicy Always or OnFailure, as a kubelet does, at once the first time, then after a back-off
of restart_backoff doubled per restart (at most 300 s), the pod Pending meanwhile; under Never it fails the pod (the
containers never start). A sidecar (an init container with restartPolicy Always) starts and runs on beside the
rest, restarted when it exits, and is stopped (SIGTERM, SIGKILL after the grace period) once the containers are done,
or when the pod is deleted before they start (during an init container's run or back-off).
securityContext runAsUser/runAsGroup/supplementalGroups are honoured: the container process drops to that user
and group (kubesim must run as root to switch to another user; otherwise such a container fails to start), and
runAsNonRoot refuses root. When the emulator stops (the pod's task cancelled), every process of the pod is killed
(SIGKILL to its process group) and none restarted."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from podtax_kubesim import initstatus, isolation, podnet
from podtax_kubesim import resources as R
from podtax_kubesim.util import Obj

if TYPE_CHECKING:
    from podtax_kubesim.kubelet import Kubelet

ISOLATION_ANNOTATION = "podtax.io/isolation"
MAX_BACKOFF_S = 300.0  # a kubelet's longest back-off before a container's restart (CrashLoopBackOff)


class StartError(Exception):
    pass


def resolve(command: str) -> str:
    """command[0] on PATH, then next to sys.executable (venv console scripts such as podtax-bench)."""
    if "/" in command:
        return command
    found = shutil.which(command) or shutil.which(command, path=str(Path(sys.executable).parent))
    if not found:
        raise StartError(f'exec: "{command}": executable file not found in $PATH')
    return found


def container_env(pod: Obj, c: Obj, cwd: Path) -> dict[str, str]:
    path = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    env = {"PATH": f"{Path(sys.executable).parent}:{path}", "HOME": str(cwd), "HOSTNAME": pod["metadata"]["name"],
           "LANG": os.environ.get("LANG", "C.UTF-8")}
    fields = {"metadata.name": pod["metadata"]["name"], "metadata.namespace": pod["metadata"]["namespace"],
              "metadata.uid": pod["metadata"]["uid"], "spec.nodeName": pod["spec"].get("nodeName", ""),
              "spec.serviceAccountName": pod["spec"].get("serviceAccountName", ""),
              "status.podIP": pod["status"].get("podIP", ""), "status.hostIP": pod["status"].get("hostIP", "")}
    for item in c.get("env") or []:
        if "value" in item:
            env[item["name"]] = str(item["value"])
        elif ((item.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath") in fields:
            env[item["name"]] = fields[item["valueFrom"]["fieldRef"]["fieldPath"]]
    return env


@dataclass(frozen=True)
class RunAs:
    uid: int | None = None
    gid: int | None = None
    groups: tuple[int, ...] = ()

    @property
    def changes(self) -> bool:
        return self.uid is not None or self.gid is not None

    def nsexec_args(self) -> list[str]:
        out = [] if self.uid is None else ["--user", str(self.uid)]
        out += [] if self.gid is None else ["--group", str(self.gid)]
        return out + (["--groups", ",".join(map(str, self.groups))] if self.groups else [])


def run_as(pod: Obj, c: Obj) -> RunAs:
    """The user and groups a container runs as, from the pod's and the container's securityContext."""
    psc, csc = pod["spec"].get("securityContext") or {}, c.get("securityContext") or {}
    uid, gid = csc.get("runAsUser", psc.get("runAsUser")), csc.get("runAsGroup", psc.get("runAsGroup"))
    for key, value in (("runAsUser", uid), ("runAsGroup", gid)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise StartError(f"securityContext.{key} must be a non-negative integer, not {value!r}")
    if csc.get("runAsNonRoot", psc.get("runAsNonRoot")) and uid in (None, 0):
        raise StartError("container has runAsNonRoot and image will run as root (set runAsUser to a non-zero uid)")
    me = os.geteuid()
    if me != 0 and ((uid is not None and uid != me) or (gid is not None and gid != os.getegid())):
        raise StartError(f"cannot run as user {uid} group {gid}: kubesim is not running as root")
    groups = tuple(int(g) for g in psc.get("supplementalGroups") or [])
    return RunAs(uid, gid, groups)


async def _pump(stream: asyncio.StreamReader, sink) -> None:  # type: ignore[no-untyped-def]
    while chunk := await stream.read(65536):
        sink.write(chunk)


async def _run_container(kl: Kubelet, pod: Obj, c: Obj, applied: isolation.Applied) -> tuple[int, str]:
    uid = pod["metadata"]["uid"]
    buf = kl.logs.open(uid, c["name"])
    try:
        argv = list(c.get("command") or []) + list(c.get("args") or [])
        if not argv:
            raise StartError("exec mode runs spec.containers[].command: this container has none "
                             "(image entrypoints are not simulated)")
        exe = resolve(argv[0])
        base = kl.workdir or Path(tempfile.gettempdir()) / "podtax-kubesim"
        cwd = Path(c["workingDir"]) if c.get("workingDir") and Path(c["workingDir"]).is_dir() else \
            base / "pods" / f"{pod['metadata']['namespace']}_{pod['metadata']['name']}_{uid[:8]}" / c["name"]
        who = run_as(pod, c)
        cwd.mkdir(parents=True, exist_ok=True)
        env = container_env(pod, c, cwd) | applied.env
        prefix, drop = list(applied.prefix), {}
        net = kl.network.pods.get(uid) if kl.network is not None else None
        if who.changes and not c.get("workingDir"):
            os.chown(cwd, -1 if who.uid is None else who.uid, -1 if who.gid is None else who.gid)
            if prefix:  # nsexec drops privileges itself, after joining cgroups and namespaces
                prefix[-1:-1] = who.nsexec_args()
            else:
                drop = {"user": who.uid, "group": who.gid, "extra_groups": list(who.groups)}
        if net is not None:  # the pod's own network namespace (podnet.py), entered first, as root
            prefix = net.enter(drop.get("user"), drop.get("group")) + prefix  # then nsenter drops privileges
            drop = {}
        proc = await asyncio.create_subprocess_exec(
            *prefix, exe, *argv[1:], stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT, cwd=str(cwd), env=env, start_new_session=True, **drop)
    except (StartError, OSError) as exc:
        buf.write(f"kubesim: {exc}\n".encode())
        buf.close()
        return 128, str(exc)
    kl.procs.setdefault(uid, []).append(proc)
    try:
        assert proc.stdout is not None
        await _pump(proc.stdout, buf)
        code = await proc.wait()
    except asyncio.CancelledError:  # the emulator stops: kill the process before it leaves kl.procs
        await _kill(proc, buf)
        raise
    finally:
        buf.close()
        with contextlib.suppress(ValueError):
            kl.procs.get(uid, []).remove(proc)
    return (128 - code if code < 0 else code), ""


async def _kill(proc: asyncio.subprocess.Process, buf) -> None:  # type: ignore[no-untyped-def]
    """SIGKILL the container's process group and wait (at most 5 s) until the process is gone and its output read to
    the end (then its transport is closed, not left for the garbage collector once the loop is closed)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)

    async def gone() -> None:
        if proc.stdout is not None:
            await _pump(proc.stdout, buf)
        await proc.wait()

    with contextlib.suppress(TimeoutError, ProcessLookupError):
        await asyncio.wait_for(gone(), timeout=5)


async def run_pod(kl: Kubelet, pod: Obj) -> None:
    uid, name = pod["metadata"]["uid"], pod["metadata"]["name"]
    applied: list[isolation.Applied] = []
    sidecars = Sidecars(kl, pod)
    tasks: list[asyncio.Task] = []

    def isolate(c: Obj) -> isolation.Applied:
        a = isolation.apply(uid, c["name"], name, c.get("resources") or {}, kl.isolation)
        applied.append(a)
        return a

    try:
        extra: dict[str, str] = {ISOLATION_ANNOTATION: ""}
        if kl.network is not None and not pod["spec"].get("hostNetwork"):
            try:
                net = kl.network.attach(uid, pod["spec"]["nodeName"])
            except podnet.NetError as exc:
                kl.mark_terminated(pod, {x["name"]: 128 for x in pod["spec"]["containers"]},
                                   {x["name"]: f"pod network: {exc}" for x in pod["spec"]["containers"]})
                return
            extra[podnet.ANNOTATION] = net.annotation()
        for c in pod["spec"].get("initContainers") or []:
            kl.mark_init(pod, c)
            if initstatus.is_sidecar(c):  # runs on beside the next ones and the containers (started: no probe)
                sidecars.start(c, isolate(c))
                await asyncio.sleep(0)
                continue
            if not await _run_init(kl, pod, c, isolate(c), sidecars):
                return
            if uid in kl.terminating:  # being deleted: no further container starts; the sidecars stop
                await sidecars.stop(deletion_grace(kl, pod))
                return
            kl.mark_init(pod, c, 0)
        kl.mark_initialized(pod)
        containers = pod["spec"]["containers"]
        setups = [isolate(c) for c in containers]
        always = pod["spec"].get("restartPolicy") == "Always"
        results: dict[str, tuple[int, str]] = {}

        async def one(c: Obj, a: isolation.Applied) -> None:
            restarts = 0
            while True:
                results[c["name"]] = await _run_container(kl, pod, c, a)
                if not always or uid in kl.terminating:
                    return
                restarts += 1
                kl.update(pod, lambda p, n=c["name"], r=restarts: _bump_restart(p, n, r))
                await asyncio.sleep(kl.restart_backoff)

        tasks += [asyncio.create_task(one(c, a)) for c, a in zip(containers, setups, strict=True)]
        await asyncio.sleep(0)
        extra[ISOLATION_ANNOTATION] = setups[0].description
        ip = kl.network.pods[uid].ip if kl.network is not None and uid in kl.network.pods else None
        if kl.network is not None and pod["spec"].get("hostNetwork"):
            ip = podnet.host_address()  # a hostNetwork pod's IP is its node's: this host's own address
        kl.mark_running(pod, [c["name"] for c in containers], extra, pod_ip=ip)
        await asyncio.gather(*tasks)
        kl.mark_terminated(pod, {n: r[0] for n, r in results.items()}, {n: r[1] for n, r in results.items()},
                           await sidecars.stop())
    except asyncio.CancelledError:  # the emulator stops: every task of the pod ends, each killing its process
        _signal_all(kl, uid, signal.SIGKILL)
        await _cancel([*tasks, *sidecars.tasks.values()])
        raise
    finally:
        for a in applied:
            a.cleanup()
        if kl.network is not None:
            kl.network.detach(uid)
        if kl.handles.get(uid) is asyncio.current_task():
            kl.handles.pop(uid, None)


async def _run_init(kl: Kubelet, pod: Obj, c: Obj, applied: isolation.Applied, sidecars: Sidecars) -> bool:
    """Run regular init container `c` until it exits 0 (True). A failure fails the pod under restartPolicy Never
    (False); under Always or OnFailure the container is restarted (False once the pod is being deleted: the sidecars
    stopped then, as a kubelet stops them, SIGKILL after the deletion's grace period)."""
    meta = pod["metadata"]
    restarts = 0
    while True:
        code, msg = await _run_container(kl, pod, c, applied)
        if code == 0:
            return True
        if pod["spec"].get("restartPolicy") == "Never":
            kl.mark_init_failed(pod, c, code, msg, await sidecars.stop())
            return False
        kl.mark_init(pod, c, code, msg)
        if restarts:  # a kubelet restarts a failed container at once the first time, then backs off
            delay = backoff_seconds(kl.restart_backoff, restarts)
            said = f"back-off {go_duration(delay)} restarting failed container={c['name']} pod=" \
                f"{meta['name']}_{meta['namespace']}({meta['uid']})"
            shown = kl.mark_init(pod, c, state=lambda previous, _, m=said: initstatus.backing_off(c, previous, m))
            if shown is not None:
                kl.api.record_event(shown, "BackOff", f"Back-off restarting failed container {c['name']} in pod "
                                    f"{meta['name']}_{meta['namespace']}({meta['uid']})", "Warning", "kubelet",
                                    repeat=True)
            if not await _wait_unless_deleted(kl, meta["uid"], delay):
                await sidecars.stop(deletion_grace(kl, pod))
                return False
        if meta["uid"] in kl.terminating:
            await sidecars.stop(deletion_grace(kl, pod))
            return False
        restarts += 1
        kl.mark_init(pod, c, state=lambda previous, ts: initstatus.restarted(c, ts, previous))


def deletion_grace(kl: Kubelet, pod: Obj) -> float:
    """The grace period of the pod's deletion (its deletionGracePeriodSeconds), else its spec's."""
    meta = pod["metadata"]
    current = kl.store.get(R.PODS, meta["namespace"], meta["name"])
    same = current is not None and current["metadata"]["uid"] == meta["uid"]
    grace = current["metadata"].get("deletionGracePeriodSeconds") if same else None
    return float(grace if grace is not None else pod["spec"].get("terminationGracePeriodSeconds", 30))


def backoff_seconds(first: float, restarts: int) -> float:
    """The back-off before restart number `restarts` + 1 of a container restarted `restarts` times (at least once):
    `first`, doubled per restart since, at most a kubelet's 300 s (the first restart waits none)."""
    return min(first * 2 ** (restarts - 1), MAX_BACKOFF_S)


def go_duration(seconds: float) -> str:
    """`seconds` as Go's time.Duration prints it: 200ms, 1.5s, 2m40s, 5m0s."""
    ns = round(seconds * 1e9)
    if ns < 1_000_000_000:
        return f"{_decimal(ns / 1e6)}ms"
    hours, rest = divmod(ns, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    return (f"{hours}h" if hours else "") + (f"{minutes}m" if hours or minutes else "") + f"{_decimal(rest / 1e9)}s"


def _decimal(x: float) -> str:
    return f"{x:.9f}".rstrip("0").rstrip(".")


async def _wait_unless_deleted(kl: Kubelet, uid: str, seconds: float) -> bool:
    """Wait `seconds`, a back-off; False as soon as the pod is being deleted (its deletion must not wait on it)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while uid not in kl.terminating:
        left = end - loop.time()
        if left <= 0:
            return True
        await asyncio.sleep(min(left, 0.05))
    return False


def _bump_restart(p: Obj, name: str, restarts: int, key: str = "containerStatuses") -> None:
    for cs in p["status"].get(key) or []:
        if cs["name"] == name:
            cs["restartCount"] = restarts


class Sidecars:
    """A pod's sidecars (init containers with restartPolicy Always): each restarted when it exits (after the kubelet's
    restart_backoff) until stop(), which, once the containers are done, SIGTERMs them (SIGKILL after the pod's grace
    period)."""

    def __init__(self, kl: Kubelet, pod: Obj) -> None:
        self.kl, self.pod, self.uid = kl, pod, pod["metadata"]["uid"]
        self.tasks: dict[str, asyncio.Task] = {}
        self.codes: dict[str, int] = {}
        self.stopping = False

    def start(self, c: Obj, applied: isolation.Applied) -> None:
        async def run() -> None:
            restarts = 0
            while True:
                self.codes[c["name"]] = (await _run_container(self.kl, self.pod, c, applied))[0]
                if self.stopping or self.uid in self.kl.terminating:
                    return
                restarts += 1
                self.kl.update(self.pod, lambda p, r=restarts: _bump_restart(p, c["name"], r, "initContainerStatuses"))
                await asyncio.sleep(self.kl.restart_backoff)

        self.tasks[c["name"]] = asyncio.create_task(run())

    async def stop(self, grace: float | None = None) -> dict[str, int]:
        """Stop every sidecar (the containers are done: only sidecar processes are left), SIGKILL after `grace`
        seconds (None: the pod's terminationGracePeriodSeconds); their exit codes."""
        if not self.tasks:
            return {}
        self.stopping = True
        _signal_all(self.kl, self.uid, signal.SIGTERM)
        if grace is None:
            grace = float(self.pod["spec"].get("terminationGracePeriodSeconds", 30))
        _, late = await asyncio.wait(self.tasks.values(), timeout=max(grace, 0.1))
        if late:
            _signal_all(self.kl, self.uid, signal.SIGKILL)
            await asyncio.wait(late, timeout=5)
        return dict(self.codes)


async def _cancel(tasks: list[asyncio.Task]) -> None:
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=10)


def _signal_all(kl: Kubelet, uid: str, sig: int) -> None:
    for proc in kl.procs.get(uid, []):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)


async def stop_pod(kl: Kubelet, pod: Obj, task: asyncio.Task, grace: int) -> None:
    """SIGTERM the containers, SIGKILL them after the grace period, then remove the pod."""
    uid = pod["metadata"]["uid"]
    _signal_all(kl, uid, signal.SIGTERM)
    try:
        await asyncio.wait_for(asyncio.shield(task), timeout=max(grace, 0.1))
    except (TimeoutError, asyncio.CancelledError):
        _signal_all(kl, uid, signal.SIGKILL)
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), timeout=5)
    except Exception:  # noqa: BLE001 - a container failure must not block the deletion
        pass
    kl.finish_deletion(pod)
