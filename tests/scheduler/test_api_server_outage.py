"""The API server unreachable for a while and back (its connections dropped and refused by a TCP proxy between the
scheduler and kubesim, kubesim's state kept, as a restarting API server behind its address): the leader steps down
within the renew deadline and takes the lease again, the pods created meanwhile are all bound once, and each part
says the outage once and its end once, in a line that names the address and the refusal."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from tests.scheduler.sched_objects import pod


class Proxy:
    """A TCP relay on 127.0.0.1 to `upstream` that can go down (listener and every connection closed) and up again
    on the same port."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream, self.port = upstream, 0
        self.conns: list[socket.socket] = []
        self.listener: socket.socket | None = None

    def up(self) -> Proxy:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(64)
        self.port, self.listener = s.getsockname()[1], s
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()
        return self

    def _accept(self, s: socket.socket) -> None:
        while True:
            try:
                c, _ = s.accept()
                u = socket.create_connection(self.upstream)
            except OSError:
                return
            self.conns += [c, u]
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        for x in (a, b):
            with contextlib.suppress(OSError):
                x.shutdown(socket.SHUT_RDWR)

    def down(self) -> None:
        assert self.listener is not None
        for s in [self.listener, *self.conns]:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)  # wakes a blocked accept(), which close() alone does not
            s.close()
        self.conns = []


def node_of(sim: Any, name: str) -> str | None:
    return ((sim.get("pods", name, "default") or {}).get("spec") or {}).get("nodeName")


def test_the_api_server_gone_and_back(sim_factory: Any, scheduler_factory: Any, tmp_path: Path, caplog: Any) -> None:
    sim = sim_factory({"nodes": [{"name": "a", "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}]})
    real = urlparse(sim.url)
    proxy = Proxy((str(real.hostname), int(real.port or 443))).up()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(sim.kubeconfig.read_text().replace(f":{real.port}", f":{proxy.port}"))
    with caplog.at_level(logging.INFO, logger="podtax.scheduler"):
        bg = scheduler_factory(kubeconfig, scheduler_leader_elect=True, scheduler_lease_namespace="default",
                               scheduler_lease_duration_s=2.0, scheduler_renew_deadline_s=1.5,
                               scheduler_retry_period_s=0.3)
        sim.create(pod("before"))
        sim.wait_for(lambda: node_of(sim, "before"))
        proxy.down()
        for name in ("during-1", "during-2"):
            sim.create(pod(name))
        elector = bg.scheduler.elector
        sim.wait_for(lambda: not elector.is_leader(), timeout=5)  # stepped down: its renewals fail
        time.sleep(2.5)  # several rounds of retries of the lease and of both informers
        proxy.up()
        for name in ("during-1", "during-2"):
            assert sim.wait_for(lambda n=name: node_of(sim, n), timeout=20) == "a"
        sim.wait_for(lambda: any("informer: the API server answers again" in r.getMessage() for r in caplog.records
                                 if r.name.endswith("informer")), timeout=10)
        # the pods made during the outage are bound after it; the first one's answer may have been lost as the
        # connections dropped: its retry's 409 names our node (not a conflict), or the informer saw it bound
        # first. The counter moves after the binding's answer, which the API server may show before: wait for it.
        bindings = bg.scheduler.metrics.bindings._value
        assert sim.wait_for(lambda: bindings.get() >= 2, timeout=10), bindings.get()
    assert bg.scheduler.metrics.conflicts._value.get() == 0
    lines = [(r.name.rsplit(".", 1)[-1], r.levelname, r.getMessage()) for r in caplog.records
             if r.levelno >= logging.WARNING or "answers again" in r.getMessage()]
    lease = [m for who, level, m in lines if who == "leader" and level == "WARNING"]
    assert len(lease) == 1, lease  # before: one a round, every 0.15 s
    assert f"the API server at https://127.0.0.1:{proxy.port} did not answer: NewConnectionError: " in lease[0]
    assert "Connection refused" in lease[0] and "object at 0x" not in lease[0] and "Max retries" not in lease[0]
    for kind in ("pods", "nodes"):
        said = [m for who, level, m in lines if who == "informer" and m.startswith(f"{kind} informer") and
                level == "WARNING"]
        assert 1 <= len(said) <= 2, said  # the broken stream, then the refusal; not one a retry
    assert [m for who, _, m in lines if who == "leader" and "answers again" in m] == [
        "lease default/benchmark-scheduler: the API server answers again"]
    assert all(len(m) < 300 for _, _, m in lines), lines
    assert not [m for who, _, m in lines if who == "connectionpool"]  # urllib3's 'Retrying ...', three a call
