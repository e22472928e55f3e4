"""Run the emulator in a background thread for tests and scripts:

    sim = podtax_kubesim.testing.start(cluster_dict_or_path, kubelet="simulated")
    api = kubernetes.client.CoreV1Api(sim.api_client())
    ...
    sim.stop()

kubelet modes: "simulated" (containers complete after podtax.io/sim-duration-seconds or the default),
"exec" (containers run as local processes), "none" (no kubelet: bound pods go Running and stay so).
"""

from __future__ import annotations

import asyncio
import copy
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from podtax_kubesim import resources as R
from podtax_kubesim.api import set_condition
from podtax_kubesim.cluster import generated
from podtax_kubesim.core import Emulator, write_emulator_kubeconfig
from podtax_kubesim.util import Obj

if TYPE_CHECKING:
    import kubernetes

T = TypeVar("T")
__all__ = ["Sim", "start", "generated"]


class Sim:
    """A running emulator. All helpers are thread-safe (they run on the emulator's loop)."""

    def __init__(self, emulator: Emulator, loop: asyncio.AbstractEventLoop, thread: threading.Thread,
                 kubeconfig: Path, tmp: tempfile.TemporaryDirectory | None) -> None:
        self.emulator, self._loop, self._thread, self._tmp = emulator, loop, thread, tmp
        self.url: str = emulator.url
        self.token: str = emulator.token
        self.kubeconfig: Path = kubeconfig
        self._stopped = False

    # --- clients ------------------------------------------------------------------
    def api_client(self) -> kubernetes.client.ApiClient:
        """A client configured from the kubeconfig (server, CA and bearer token)."""
        import kubernetes

        return kubernetes.config.new_client_from_config(str(self.kubeconfig))

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run fn(*args) on the emulator's event loop and return its result."""
        async def run() -> T:
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=30)

    # --- inspection -------------------------------------------------------------
    def objects(self, plural: str, namespace: str | None = None, group: str = "") -> list[Obj]:
        key = f"{group}/{plural}"
        return self.call(lambda: [copy.deepcopy(o) for o in self.emulator.store.items(key, namespace)])

    def get(self, plural: str, name: str, namespace: str = "", group: str = "") -> Obj | None:
        obj = self.call(self.emulator.store.get, f"{group}/{plural}", namespace, name)
        return copy.deepcopy(obj) if obj is not None else None

    def wait_for(self, predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.02) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            result = predicate()
            if result:
                return result
            if time.monotonic() > deadline:
                raise TimeoutError(f"condition not met within {timeout} s")
            time.sleep(interval)

    def wait_for_phase(self, namespace: str, name: str, phases: tuple[str, ...] = ("Succeeded", "Failed"),
                       timeout: float = 10.0) -> Obj:
        def check() -> Obj | None:
            pod = self.get("pods", name, namespace)
            return pod if pod and pod["status"].get("phase") in phases else None

        return self.wait_for(check, timeout)

    # --- changing the cluster -----------------------------------------------------
    def create(self, obj: Obj, namespace: str = "default") -> Obj:
        """Create any supported object directly (no HTTP); returns the stored copy."""
        group, _, version = obj.get("apiVersion", "v1").rpartition("/")
        res = next((r for r in R.RESOURCES if r.kind == obj.get("kind") and r.group == group
                    and r.version == version), None)
        if res is None:
            raise ValueError(f"unsupported kind {obj.get('kind')} {obj.get('apiVersion')}")
        return copy.deepcopy(self.call(self.emulator.api.create, res, namespace, copy.deepcopy(obj)))

    def add_node(self, spec: Obj) -> Obj:
        """Add a node from a cluster-file entry ({name, arch, labels, capacity, taints, conditions})."""
        return copy.deepcopy(self.call(self.emulator.add_node, spec))

    def remove_node(self, name: str) -> None:
        self.call(self.emulator.store.delete, R.NODES, "", name)

    def _node_change(self, name: str, change: Callable[[Obj], None]) -> Obj:
        def run() -> Obj:
            node = copy.deepcopy(self.emulator.store.must_get(R.NODES, "", name))
            change(node)
            return self.emulator.store.update(R.NODES, node)

        return copy.deepcopy(self.call(run))

    def set_node_condition(self, name: str, type: str, status: str, reason: str = "Simulated",
                           message: str = "set by a test") -> Obj:
        return self._node_change(name, lambda n: set_condition(n["status"], type, status, reason, message))

    def cordon(self, name: str, unschedulable: bool = True) -> Obj:
        def change(node: Obj) -> None:
            if unschedulable:
                node["spec"]["unschedulable"] = True
            else:
                node["spec"].pop("unschedulable", None)

        return self._node_change(name, change)

    def uncordon(self, name: str) -> Obj:
        return self.cordon(name, False)

    def set_node_taints(self, name: str, taints: list[Obj]) -> Obj:
        return self._node_change(name, lambda n: n["spec"].__setitem__("taints", copy.deepcopy(taints)))

    def finish_volume_deletion(self, name: str) -> None:
        """The provisioner's DeleteVolume of PV `name` is done now: the PV (deleted by someone, or not yet) and its
        finalizer go. With podtax.io/sim-delete-seconds `inf` it is never done otherwise: a test decides when."""
        pv = self.get("persistentvolumes", name)
        if pv is not None:
            self.call(self.emulator.provisioner.delete_volume, name, pv["metadata"]["uid"])

    def compact(self) -> None:
        """Drop the watch history: watches from any earlier resourceVersion now get 410 Gone."""
        self.call(self.emulator.store.compact)

    @property
    def resource_version(self) -> int:
        return self.call(lambda: self.emulator.store.rv)

    # --- lifecycle ---------------------------------------------------------------
    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        try:
            asyncio.run_coroutine_threadsafe(self.emulator.stop(), self._loop).result(timeout=15)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            if self._tmp is not None:
                self._tmp.cleanup()

    def __enter__(self) -> Sim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start(cluster: dict | Path | None = None, *, kubelet: str = "simulated", workdir: Path | None = None,
          **opts: Any) -> Sim:
    """Start an emulator on 127.0.0.1 (a free port unless port=N) in a background thread.

    cluster: a cluster dict or YAML file (None: a small mixed cluster, see cluster.DEFAULT_CLUSTER).
    kubelet: "simulated" | "exec" | "none". workdir: where the kubeconfig and exec-mode working
    directories go (a temporary directory when None). Other options: see core.Emulator.
    """
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="podtax-kubesim-")
        workdir = Path(tmp.name)
    workdir.mkdir(parents=True, exist_ok=True)
    loop = asyncio.new_event_loop()
    ready: dict[str, Any] = {}

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_forever()
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()

    thread = threading.Thread(target=run, name="podtax-kubesim", daemon=True)
    thread.start()

    async def boot() -> str:
        ready["emulator"] = Emulator(cluster, kubelet, workdir, **opts)
        return await ready["emulator"].start()

    try:
        asyncio.run_coroutine_threadsafe(boot(), loop).result(timeout=30)
    except BaseException:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        if tmp is not None:
            tmp.cleanup()
        raise
    kubeconfig = workdir / "kubeconfig.yaml"
    write_emulator_kubeconfig(kubeconfig, ready["emulator"])
    return Sim(ready["emulator"], loop, thread, kubeconfig, tmp)
