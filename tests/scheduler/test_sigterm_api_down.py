"""`podtax-scheduler` (the real entry point, a child process) sent SIGTERM while it starts and its Kubernetes API
server does not answer: its informers' first lists wait for the server (Scheduler.start, up to its sync timeout of
60 s) in a thread the service awaited, so the SIGTERM went unseen (hF, session 56): the scheduler ran on until the
timeout, then ended with 'did not list ...' and a failure status (in Kubernetes, SIGKILLed at the end of the grace
period first). Now the start stops: a clean stop, exit 0."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from podtax import natsserver

from tests.scheduler.test_health_port import NODE


def test_a_sigterm_while_the_api_server_does_not_answer_stops_the_scheduler(
        sim_factory: Any, nats_server: natsserver.NatsServer, tmp_path: Path) -> None:
    sim = sim_factory({"nodes": [NODE]})
    kubeconfig = tmp_path / "kubeconfig.yaml"
    kubeconfig.write_bytes(Path(sim.kubeconfig).read_bytes())
    sim.stop()  # the kubeconfig now names a server that refuses connections
    env = dict(os.environ, PODTAX_NATS_URL=nats_server.url, PODTAX_SCHEDULER_KUBECONFIG=str(kubeconfig),
               PODTAX_SCHEDULER_METRICS_PORT="0", PODTAX_SCHEDULER_LEADER_ELECT="false", PODTAX_LOG_FORMAT="text")
    log = tmp_path / "scheduler.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "podtax_scheduler"], env=env, stderr=out)
    try:
        deadline = time.monotonic() + 60  # a hang guard
        while "did not answer" not in log.read_text():  # the informers are retrying: the start waits for them
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)  # a hang guard, past the start's own 60 s
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    said = log.read_text()
    assert proc.returncode == 0, said
    assert "stopping while the informers wait for the API server" in said and "Traceback" not in said, said
