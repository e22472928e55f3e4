"""A service's health port (/healthz, /readyz, /metrics) listened on every address (0.0.0.0) whatever was
asked: `podtax up` gives each of its services one and prints http://127.0.0.1:PORT/metrics, yet they were reachable
from the network (the metrics name campaigns and nodes), and so was the scheduler's metrics port (audit hS). It
now listens on PODTAX_HEALTH_HOST, loopback unless set (the images set 0.0.0.0 for the kubelet's probes). The
real `podtax-parser` entry point (a child process) and a real nats-server; the listening sockets are read from
/proc/net/tcp."""

from __future__ import annotations

import os
import socket
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


HOST_FIX = "set an address of this host (127.0.0.1, or 0.0.0.0 for all)"
PORT_FIX = "choose a free port, or stop what holds it"


def refusal(module: str, env: dict[str, str], held: int | None) -> str:
    """The last line of `python -m module` once it has exited 2 without a traceback; a socket listens on
    127.0.0.1:`held` meanwhile (a port in use), if given."""
    with socket.socket() as holder:
        if held:
            holder.bind(("127.0.0.1", held))
            holder.listen()
        done = subprocess.run([sys.executable, "-m", module], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(("host", "busy", "setting", "why", "fix"), [
    ("192.0.2.1", False, "PODTAX_HEALTH_HOST", "Cannot assign requested address", HOST_FIX),
    ("nosuch.invalid", False, "PODTAX_HEALTH_HOST", "", HOST_FIX),  # the resolver's words vary
    ("127.0.0.1", True, "PODTAX_HEALTH_PORT", "Address already in use", PORT_FIX)],
    ids=["not this host's address", "a name that does not resolve", "a port in use"])
def test_a_health_port_it_cannot_listen_on_is_one_line(host: str, busy: bool, setting: str, why: str, fix: str,
                                                        nats_url: str) -> None:
    """It was a traceback (OSError, socket.gaierror), exit 1."""
    port = natsserver.free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    env.update(PODTAX_NATS_URL=nats_url, PODTAX_HEALTH_PORT=str(port), PODTAX_HEALTH_HOST=host)
    last = refusal("podtax_parser", env, port if busy else None)
    assert last.startswith(f"podtax-parser: {setting}: cannot listen on {host}:{port} ({why}"), last
    assert last.endswith(f"): {fix}"), last
