"""Ctrl-C in the terminal of `podtax up` sends SIGINT to its whole foreground process group. The embedded
nats-server was in that group (the services have sessions of their own), so it stopped at once, before `up`
stopped the services using it: the analyzer, parser and runner then ended with a traceback in their logs
(ConnectionResetError: Connection lost, closing their NATS connection). Now nats-server has a session of its
own too and is stopped last, by `up`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from podtax import natsserver

from tests.e2e.test_up_supervise import wait


def test_ctrl_c_stops_the_services_before_nats(tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    with open(tmp_path / "out.txt", "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "podtax.cli.main", "up", "--data-dir", str(data),
                                 "--api-port", str(natsserver.free_port()), "--no-kubesim", "--node", "ctrl-c",
                                 "--ready-file", str(ready)], env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # its own process group, as a terminal's foreground job
    try:
        wait(lambda: ready.exists() or proc.poll() is not None, 60, "podtax up to be ready")
        assert ready.exists(), (tmp_path / "out.txt").read_text()
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        assert proc.wait(120) == 0, (tmp_path / "out.txt").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for name in ("analyzer", "parser", "runner", "host_agent"):
        log = (data / "logs" / f"{name}.log").read_text()
        assert "Traceback" not in log, f"{name}: {log[-3000:]}"
