"""Shared fixtures: a real nats-server on a free port with a temporary JetStream directory."""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from podtax import natsserver

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "corpus"


def absolute_pythonpath(value: str) -> str:
    """PYTHONPATH with each folder made absolute (from the current folder); an empty entry, which Python reads as the
    current folder, is that folder."""
    return os.pathsep.join(str(Path(p).resolve()) for p in value.split(os.pathsep))


# a child started in another folder (cwd=tmp_path) read a relative PYTHONPATH from there: another copy of the sources,
# or none. Made absolute once here, for every test that hands os.environ (or its PYTHONPATH) to a child.
if os.environ.get("PYTHONPATH"):
    os.environ["PYTHONPATH"] = absolute_pythonpath(os.environ["PYTHONPATH"])


@pytest.fixture(autouse=True)
def _isolated_logging() -> Iterator[None]:
    """A test that configures logging in-process (telemetry.setup binds the root handler to the stderr
    pytest captures for that test) leaves no handler behind: by the next test that stream is closed, and
    any log record then prints "--- Logging error ---" with a traceback into that test's output."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[natsserver.NatsServer]:
    server = natsserver.start(tmp_path / "jetstream", log_file=tmp_path / "nats.log")
    yield server
    if server.proc.poll() is None:  # paused by a test (tests.paused.pause) that failed before killing it
        server.proc.send_signal(signal.SIGCONT)
    server.stop()


@pytest.fixture
def nats_url(nats_server: natsserver.NatsServer) -> str:
    return nats_server.url


@pytest.fixture
def kubeconfig_sets(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the kubernetes client set its configuration from the kubeconfig (loading it, then each
    credential refresh: KubeConfigLoader._set_config), counted in [0], with podtax.kubeclient.REFRESH_S an hour:
    a client that loads its kubeconfig and runs the refresh at most once every REFRESH_S counts 2."""
    from kubernetes.config.kube_config import KubeConfigLoader
    from podtax import kubeclient

    sets, real = [0], KubeConfigLoader._set_config

    def counted(self: Any, cfg: Any) -> None:
        sets[0] += 1
        real(self, cfg)

    monkeypatch.setattr(KubeConfigLoader, "_set_config", counted)
    monkeypatch.setattr(kubeclient, "REFRESH_S", 3600.0)
    return sets


def wait_until_up(proc: Any, ready: Path, timeout: float = 60) -> None:
    """Wait for a `podtax up` started with --ready-file `ready`; its output is the message if it exits first."""
    deadline = time.monotonic() + timeout
    while not ready.exists():
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        assert time.monotonic() < deadline, "podtax up did not become ready"
        time.sleep(0.2)


def wait_answering(url: str, proc: Any, log: Path, timeout: float = 60) -> None:
    """Wait until `url` answers HTTP (any status), served by the child `proc` that writes `log`: its log is the
    message if it exits first."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.HTTPError:
            assert proc.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, f"nothing answered at {url}"
            time.sleep(0.1)
