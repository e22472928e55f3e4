"""The simulated Nomad server: state + HTTP front end on one event loop."""

from __future__ import annotations

import socket
from pathlib import Path

from aiohttp import web

from podtax_nomadsim import cluster as clusterfile
from podtax_nomadsim import tls
from podtax_nomadsim.cluster import Obj
from podtax_nomadsim.server import Server
from podtax_nomadsim.state import State
from podtax_nomadsim.tls import TlsFiles


class NomadSim:
    """Options: host/port (127.0.0.1, 0 = a free port), acl_token (ACLs on; overrides the cluster
    file's acl.token), refuse_creates_after (fault: creates fail after N volumes), seed, tls_dir
    (serve HTTPS with mutual TLS: a fresh CA, server and client certificates are written there;
    verify_client=False accepts clients without a certificate)."""

    def __init__(self, cluster: Obj | Path | str | None = None, *, host: str = "127.0.0.1", port: int = 0,
                 acl_token: str | None = None, refuse_creates_after: int | None = None,
                 seed: int | None = None, tls_dir: Path | None = None, verify_client: bool = True) -> None:
        self.cluster = clusterfile.load(cluster)
        self.host, self.port = host, port
        self.state = State(self.cluster, seed, refuse_creates_after)
        self.acl_token = acl_token if acl_token is not None else self.cluster["acl"].get("token")
        self.server = Server(self.state, self.acl_token, self.cluster["acl"].get("readToken"))
        self.tls: TlsFiles | None = tls.generate(Path(tls_dir), host) if tls_dir is not None else None
        self.verify_client = verify_client
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> str:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        self._runner = web.AppRunner(self.server.app(), access_log=None, handle_signals=False,
                                     shutdown_timeout=1.0)
        await self._runner.setup()
        context = self.tls.server_context(self.verify_client) if self.tls else None
        await web.SockSite(self._runner, sock, backlog=1024, ssl_context=context).start()
        self.url = f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
