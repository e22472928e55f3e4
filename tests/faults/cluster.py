"""Three nats-server processes clustered on loopback (JetStream, one store directory each), for the fault suite."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import time
from pathlib import Path

import nats
from podtax import natsserver


class NatsCluster:
    def __init__(self, root: Path, size: int = 3, name: str = "podtax") -> None:
        self.root = root
        self.name = name
        self.ports = [natsserver.free_port() for _ in range(size)]
        self.routes = [natsserver.free_port() for _ in range(size)]
        self.procs: list[subprocess.Popen[bytes] | None] = [None] * size

    @property
    def url(self) -> str:
        return ",".join(f"nats://127.0.0.1:{p}" for p in self.ports)

    def argv(self, i: int) -> list[str]:
        routes = ",".join(f"nats://127.0.0.1:{p}" for j, p in enumerate(self.routes) if j != i)
        return [natsserver.binary(), "-js", "-a", "127.0.0.1", "-p", str(self.ports[i]), "-n", f"s{i + 1}",
                "-sd", str(self.root / f"s{i + 1}"), "--cluster_name", self.name,
                "--cluster", f"nats://127.0.0.1:{self.routes[i]}", "--routes", routes]

    def start(self, i: int | None = None) -> None:
        for j in ([i] if i is not None else range(len(self.ports))):
            (self.root / f"s{j + 1}").mkdir(parents=True, exist_ok=True)
            with open(self.root / f"s{j + 1}.log", "ab") as out:
                self.procs[j] = subprocess.Popen(self.argv(j), stdout=out, stderr=subprocess.STDOUT)

    def kill(self, i: int) -> None:
        proc = self.procs[i]
        if proc and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)

    def stop(self) -> None:
        for proc in self.procs:
            if proc and proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            if proc:
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()

    async def wait_ready(self, timeout: float = 30.0) -> None:
        """Until JetStream answers through every server (a meta leader is elected and all three are routed)."""
        deadline = time.monotonic() + timeout
        for port in self.ports:
            while True:
                with contextlib.suppress(Exception):
                    nc = await nats.connect(f"nats://127.0.0.1:{port}", connect_timeout=1, max_reconnect_attempts=0)
                    try:
                        info = await nc.jetstream().account_info()
                        if info is not None:
                            break
                    finally:
                        await nc.close()
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the NATS cluster was not ready within {timeout:.0f} s; see {self.root}")
                await asyncio.sleep(0.3)

    async def wait_in_sync(self, streams: list[str], timeout: float = 60.0) -> None:
        """Until every replica of `streams` is current: a restarted server has caught up with the others."""
        deadline = time.monotonic() + timeout
        nc = await nats.connect(servers=self.url.split(","))
        try:
            js = nc.jetstream()
            for name in streams:
                while True:
                    with contextlib.suppress(Exception):
                        info = await js.stream_info(name)
                        peers = info.cluster.replicas if info.cluster and info.cluster.replicas else []
                        if len(peers) == len(self.ports) - 1 and all(p.current and not p.lag for p in peers):
                            break
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"stream {name} did not catch up on every server within {timeout:.0f} s")
                    await asyncio.sleep(0.3)
        finally:
            await nc.close()
