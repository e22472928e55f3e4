"""Run the simulated Nomad API in a background thread for tests and scripts:

    from podtax_nomadsim.testing import start, running
    with running({"plugins": [{"id": "hostpath", "createLatency": 0.05}]}, acl_token="t") as sim:
        httpx.get(f"{sim.url}/v1/plugin/csi/hostpath", headers={"X-Nomad-Token": sim.token})
        sim.controller_calls()        # the simulated plugin's RPCs with their server-side times

pytest fixtures (entry point pytest11 'podtax_nomadsim'): `nomadsim` (default cluster: one plugin
'hostpath', zero latency, ACLs off) and `nomadsim_factory(cluster=None, **options)`.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from podtax_nomadsim.cluster import Obj
from podtax_nomadsim.core import NomadSim
from podtax_nomadsim.state import ControllerCall
from podtax_nomadsim.tls import TlsFiles

T = TypeVar("T")
__all__ = ["Sim", "start", "running"]


class Sim:
    """A running simulated Nomad. url ("http://127.0.0.1:PORT"), address ("127.0.0.1:PORT"), token
    (the ACL token, or None when ACLs are off). Helpers are thread-safe (they run on its loop)."""

    def __init__(self, sim: NomadSim, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
        self.sim, self._loop, self._thread = sim, loop, thread
        self.url: str = sim.url
        self.address: str = f"{sim.host}:{sim.port}"
        self.token: str | None = sim.acl_token
        self.tls: TlsFiles | None = sim.tls  # ca, client_cert, client_key (Paths) when started with tls=True
        self._stopped = False
        self._tmp: tempfile.TemporaryDirectory | None = None

    def headers(self) -> dict[str, str]:
        """Request headers carrying the ACL token (empty when ACLs are off)."""
        return {"X-Nomad-Token": self.token} if self.token else {}

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        async def run() -> T:
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=30)

    def volumes(self, namespace: str = "*") -> list[Obj]:
        """Stubs of the registered volumes (all namespaces by default)."""
        return self.call(lambda: self.sim.state.volume_stubs(namespace)[0])

    def controller_calls(self) -> list[ControllerCall]:
        return self.call(lambda: list(self.sim.state.calls))

    def orphans(self) -> list[str]:
        """ExternalIDs of volumes the plugin made that Nomad did not register (a create into a namespace that does
        not exist): left in the storage, unknown to Nomad, so no cleanup by Nomad's API finds them."""
        return self.call(lambda: list(self.sim.state.orphaned))

    def claim(self, volume: str, alloc_id: str, namespace: str = "default", terminal: bool = False) -> int:
        """A simulated allocation claims the volume (so delete/deregister answer `volume in use`)."""
        return self.call(lambda: self.sim.state.claim(namespace, volume, alloc_id, terminal=terminal))

    def release(self, volume: str, alloc_id: str, namespace: str = "default") -> int:
        return self.call(lambda: self.sim.state.release(namespace, volume, alloc_id))

    def set_refuse_creates_after(self, count: int | None) -> None:
        def change() -> None:
            self.sim.state.refuse_creates_after = count

        self.call(change)

    @property
    def index(self) -> int:
        return self.call(lambda: self.sim.state.index)

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        try:
            asyncio.run_coroutine_threadsafe(self.sim.stop(), self._loop).result(timeout=15)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            if self._tmp is not None:
                self._tmp.cleanup()

    def __enter__(self) -> Sim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start(cluster: Obj | Path | str | None = None, *, tls: bool = False, **options: Any) -> Sim:
    """Start a simulated Nomad on 127.0.0.1 (a free port unless port=N) in a background thread.
    options: see core.NomadSim (port, acl_token, refuse_creates_after, seed, verify_client).
    tls=True: HTTPS with mutual TLS, certificates in a temporary directory (sim.tls)."""
    tmp = tempfile.TemporaryDirectory(prefix="podtax-nomadsim-") if tls else None
    if tmp is not None:
        options["tls_dir"] = Path(tmp.name)
    loop = asyncio.new_event_loop()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_forever()
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()

    thread = threading.Thread(target=run, name="podtax-nomadsim", daemon=True)
    thread.start()

    async def boot() -> NomadSim:
        sim = NomadSim(cluster, **options)
        await sim.start()
        return sim

    try:
        sim = asyncio.run_coroutine_threadsafe(boot(), loop).result(timeout=30)
    except BaseException:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        if tmp is not None:
            tmp.cleanup()
        raise
    handle = Sim(sim, loop, thread)
    handle._tmp = tmp
    return handle


@contextlib.contextmanager
def running(cluster: Obj | Path | str | None = None, **options: Any) -> Iterator[Sim]:
    sim = start(cluster, **options)
    try:
        yield sim
    finally:
        sim.stop()
