"""The emulator: store, API semantics, HTTP server and controllers wired together on one event loop."""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import os
import random
import secrets
import socket
from pathlib import Path
from typing import Any

from aiohttp import web

from podtax_kubesim import cluster as clusterfile
from podtax_kubesim import faults, tlscert
from podtax_kubesim import resources as R
from podtax_kubesim.api import Api
from podtax_kubesim.dist import sampler
from podtax_kubesim.jobs import JobController
from podtax_kubesim.kubelet import Kubelet
from podtax_kubesim.logs import Logs
from podtax_kubesim.namespaces import NamespaceController
from podtax_kubesim.provisioner import Provisioner
from podtax_kubesim.scheduler import DefaultScheduler
from podtax_kubesim.server import Server
from podtax_kubesim.store import Store
from podtax_kubesim.util import Obj


class Emulator:
    """Options (keyword arguments of testing.start and the CLI):
    host/port (127.0.0.1, 0 = free port), history (watch events kept for resumption, default 100000),
    bookmark_interval (seconds, default 5), sim_duration (default duration of simulated containers:
    seconds or a distribution, default 1.0), start_delay (seconds before a bound pod runs, default 0),
    isolation (exec mode: use cgroups/namespaces when available, default True), scheduler (run the
    built-in default-scheduler, default True), seed (random seed), token (the bearer token every API
    request but /healthz and /version needs, served over HTTPS with a fresh CA that goes into the
    kubeconfig (kubectl sends tokens over TLS only); default: a random one; "" serves plain HTTP without
    authentication, never with the exec kubelet), allow_privileged (admit pods with hostPath, privileged
    or host namespaces, default False), pod_network (exec kubelet: each pod gets its own network namespace,
    a veth pair into a per-node bridge and an address from 198.18.0.0/15, see podnet.py; root only;
    default False), restart_backoff (exec kubelet: seconds of a container restart's first back-off, doubled
    per restart of a failing init container up to a kubelet's 300, default 1; a kubelet's is 10). The exec
    kubelet runs pods as local processes, so it listens on loopback only."""

    def __init__(self, cluster: Obj | Path | str | None = None, kubelet: str = "simulated",
                 workdir: Path | None = None, *, host: str = "127.0.0.1", port: int = 0, history: int = 100_000,
                 bookmark_interval: float = 5.0, sim_duration: Any = None, start_delay: float | None = None,
                 isolation: bool = True, scheduler: bool = True, seed: int | None = None,
                 token: str | None = None, allow_privileged: bool = False, pod_network: bool = False,
                 restart_backoff: float = 1.0) -> None:
        if kubelet == "exec" and not is_loopback(host):
            raise ValueError(f"the exec kubelet runs pods as processes on this machine: it listens on loopback "
                             f"only (127.0.0.1 or ::1), not {host}")
        if kubelet == "exec" and token == "":
            raise ValueError("the exec kubelet needs API authentication: give a token or none (a random one)")
        self.token = secrets.token_urlsafe(32) if token is None else token
        self.tls = tlscert.generate(host) if self.token else None
        self.cluster = clusterfile.load(cluster)
        sim = self.cluster.get("simulation") or {}
        self.rng = random.Random(seed if seed is not None else sim.get("seed"))
        self.host, self.port = host, port
        self.store = Store(history=history)
        self.api = Api(self.store, allow_privileged)
        self.logs = Logs()
        self.server = Server(self.store, self.api, self.logs, bookmark_interval, self.token,
                             faults.parse(self.cluster,
                                          extra=(faults.DROP, faults.HANG_LISTS, faults.FAIL, faults.FORBID,
                                                 faults.FAIL_DELETES)))
        duration = sampler(sim_duration if sim_duration is not None else sim.get("defaultDurationSeconds", 1.0),
                           self.rng, 1.0)
        delay = start_delay if start_delay is not None else float(sim.get("startDelaySeconds", 0.0))
        self.kubelet = Kubelet(self.api, self.logs, kubelet, duration, delay, workdir, isolation, pod_network,
                               restart_backoff)
        self.jobs = JobController(self.api)
        self.namespaces = NamespaceController(self.api)
        self.provisioner = Provisioner(self.api, self.cluster.get("provisioner"))
        self.scheduler = DefaultScheduler(self.api, bind=self.server.bind) if scheduler else None
        self._runner: web.AppRunner | None = None
        self.url = ""

    def load(self) -> None:
        for ns in clusterfile.SYSTEM_NAMESPACES + list(self.cluster.get("namespaces") or []):
            if self.store.get(R.NAMESPACES, "", ns) is None:
                self.api.create(R.NAMESPACE, "", {"metadata": {"name": ns}})
        for i, spec in enumerate(clusterfile.expand_nodes(self.cluster)):
            self.add_node(spec, i)
        for sc in clusterfile.storage_classes(self.cluster):
            self.api.create(R.STORAGECLASS, "", sc)

    def add_node(self, spec: Obj, index: int | None = None) -> Obj:
        index = len(self.store.objects.get(R.NODES, {})) if index is None else index
        return self.store.create(R.NODES, clusterfile.node_object(spec, index))

    async def start(self) -> str:
        self.load()
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        self._runner = web.AppRunner(self.server.app(), access_log=None, handle_signals=False,
                                     shutdown_timeout=1.0)
        await self._runner.setup()
        await web.SockSite(self._runner, sock, backlog=1024,
                           ssl_context=self.tls.context() if self.tls else None).start()
        self.provisioner.start()
        if self.scheduler:
            self.scheduler.start()
        scheme = "https" if self.tls else "http"
        self.url = f"{scheme}://{f'[{self.host}]' if ':' in self.host else self.host}:{self.port}"
        return self.url

    async def stop(self) -> None:
        self.server.stopping.set()
        for handle in list(self.kubelet.handles.values()):
            if isinstance(handle, asyncio.Task):
                handle.cancel()
        tasks = [h for h in self.kubelet.handles.values() if isinstance(h, asyncio.Task)]
        if tasks:
            await asyncio.wait(tasks, timeout=5)
        for watchers in list(self.store.watchers.values()):
            for watcher in list(watchers):
                watcher.close()
        if self.kubelet.network is not None:
            self.kubelet.network.close()
        if self._runner is not None:
            await self._runner.cleanup()


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def kubeconfig_text(url: str, namespace: str = "default", token: str = "", ca_pem: bytes = b"") -> str:
    """A kubeconfig for the emulator; with its bearer token and CA (keep the file private: mode 0600)."""
    user = f'{{token: "{token}"}}' if token else "{}"
    ca = f"    certificate-authority-data: {base64.b64encode(ca_pem).decode()}\n" if ca_pem else ""
    return (
        "# podtax kubesim: a SIMULATED Kubernetes API (not a real cluster)\n"
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: kubesim\n  cluster:\n    server: {url}\n{ca}"
        f"users:\n- name: kubesim\n  user: {user}\n"
        f"contexts:\n- name: kubesim\n  context:\n    cluster: kubesim\n    user: kubesim\n    namespace: {namespace}\n"
        "current-context: kubesim\npreferences: {}\n"
    )


def write_kubeconfig(path: Path, url: str, token: str, ca_pem: bytes = b"") -> None:
    """Write the kubeconfig readable by its owner only (it holds the token)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(kubeconfig_text(url, token=token, ca_pem=ca_pem))
    os.replace(tmp, path)


def write_emulator_kubeconfig(path: Path, emulator: Emulator) -> None:
    write_kubeconfig(path, emulator.url, emulator.token, emulator.tls.ca_pem if emulator.tls else b"")
