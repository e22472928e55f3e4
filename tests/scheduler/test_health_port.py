"""`podtax-scheduler` (the real entry point, a child process) serves PODTAX_HEALTH_PORT as every podtax service
does: /healthz, /readyz (NATS connected) and /metrics. Its image and podtax-config set the port, but nothing
served it: the Kubernetes probes could only use /metrics on the scheduler's own metrics port."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from podtax import natsserver

from tests.integration.test_health_loopback import refusal

NODE = {"name": "a", "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}


def get(url: str) -> tuple[int, str] | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return None


def test_the_scheduler_serves_its_health_port(sim_factory: Any, nats_server: natsserver.NatsServer,
                                              tmp_path: Path) -> None:
    sim = sim_factory({"nodes": [NODE]})
    port = natsserver.free_port()
    env = dict(os.environ, PODTAX_NATS_URL=nats_server.url, PODTAX_SCHEDULER_KUBECONFIG=str(sim.kubeconfig),
               PODTAX_SCHEDULER_METRICS_PORT="0", PODTAX_SCHEDULER_LEADER_ELECT="false",
               PODTAX_HEALTH_PORT=str(port), PODTAX_LOG_FORMAT="text")
    with open(tmp_path / "scheduler.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "podtax_scheduler"], env=env, stderr=log)
        try:
            deadline = time.monotonic() + 30
            while get(f"http://127.0.0.1:{port}/healthz") is None:
                assert proc.poll() is None, (tmp_path / "scheduler.log").read_text()
                assert time.monotonic() < deadline, "the health port never answered"
                time.sleep(0.2)
            assert get(f"http://127.0.0.1:{port}/healthz") == (200, "ok\n")
            assert get(f"http://127.0.0.1:{port}/readyz") == (200, "ok\n")
            metrics = get(f"http://127.0.0.1:{port}/metrics")
            assert metrics and metrics[0] == 200 and "# TYPE podtax_events_published_total counter" in metrics[1]
            nats_server.stop()  # NATS gone: not ready, still alive
            deadline = time.monotonic() + 30
            while get(f"http://127.0.0.1:{port}/readyz") != (503, "nats disconnected\n"):
                assert time.monotonic() < deadline, "/readyz never noticed NATS was gone"
                time.sleep(0.3)
            assert get(f"http://127.0.0.1:{port}/healthz") == (200, "ok\n")
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.mark.parametrize(("host", "busy", "said"), [
    ("127.0.0.1", True, "PODTAX_SCHEDULER_METRICS_PORT: cannot listen on 127.0.0.1:{port} (Address already in use): "
                        "choose a free port, or stop what holds it"),
    ("192.0.2.1", False, "PODTAX_HEALTH_HOST: cannot listen on 192.0.2.1:{port} (Cannot assign requested address): "
                         "set an address of this host (127.0.0.1, or 0.0.0.0 for all)")],
    ids=["a metrics port in use", "not this host's address"])
def test_a_metrics_port_it_cannot_listen_on_is_one_line(host: str, busy: bool, said: str, sim_factory: Any,
                                                        nats_server: natsserver.NatsServer) -> None:
    """It was prometheus_client's traceback (OSError), exit 1."""
    sim = sim_factory({"nodes": [NODE]})
    port = natsserver.free_port()
    env = dict(os.environ, PODTAX_NATS_URL=nats_server.url, PODTAX_SCHEDULER_KUBECONFIG=str(sim.kubeconfig),
               PODTAX_SCHEDULER_METRICS_PORT=str(port), PODTAX_SCHEDULER_LEADER_ELECT="false",
               PODTAX_HEALTH_HOST=host)
    last = refusal("podtax_scheduler", env, port if busy else None)
    assert last == "podtax-scheduler: " + said.format(port=port)
