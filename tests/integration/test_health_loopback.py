"""A service's health port (/healthz, /readyz, /metrics) listened on every address (0.0.0.0) whatever was
asked: `podtax up` gives each of its services one and prints http://127.0.0.1:PORT/metrics, yet they were reachable
from the network (the metrics name campaigns and nodes), and so was the scheduler's metrics port (audit hS). It
now listens on PODTAX_HEALTH_HOST, loopback unless set (the images set 0.0.0.0 for the kubelet's probes). The
real `podtax-parser` entry point (a child process) and a real nats-server; the listening sockets are read from
/proc/net/tcp."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from podtax import natsserver

from tests.conftest import wait_answering


def listening(port: int) -> set[str]:
    """The IPv4 addresses a socket listens on at `port` (state 0A, LISTEN), from /proc/net/tcp."""
    out = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        addr, _, hex_port = local.partition(":")
        if state == "0A" and int(hex_port, 16) == port:
            out.add(".".join(str(int(addr[i:i + 2], 16)) for i in (6, 4, 2, 0)))
    return out


@pytest.mark.parametrize(("given", "bound"), [(None, "127.0.0.1"), ("0.0.0.0", "0.0.0.0")])
def test_the_health_port_listens_on_loopback_unless_asked(given: str | None, bound: str, nats_url: str,
                                                          tmp_path: Path) -> None:
    port = natsserver.free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    env.update(PODTAX_NATS_URL=nats_url, PODTAX_HEALTH_PORT=str(port), PODTAX_LOG_FORMAT="text")
    if given:
        env["PODTAX_HEALTH_HOST"] = given
    with open(tmp_path / "parser.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "podtax_parser"], env=env, stderr=log)
    try:
        wait_answering(f"http://127.0.0.1:{port}/healthz", proc, tmp_path / "parser.log")
        assert listening(port) == {bound}
    finally:
        proc.terminate()
        proc.wait(30)
