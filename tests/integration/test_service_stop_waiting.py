"""A service started before its streams' owner waits for them (natsauth.CREATORS); SIGTERM must end that wait
cleanly: the wait ignored it, so a host agent or parser started before the runner could only be SIGKILLed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from podtax import natsserver

from tests.integration.secured import secured_fixture  # noqa: F401 - fixture

WAITING = "waiting until it does"


def _wait_for_line(log: Path, proc: subprocess.Popen[bytes], text: str) -> None:
    """Until the service's log has `text` (or it exited: the assertion after says so)."""
    for _ in range(300):
        if text in log.read_text(errors="replace") or proc.poll() is not None:
            return
        time.sleep(0.1)


def test_sigterm_ends_the_wait_for_the_runners_streams(
        secured: tuple[natsserver.NatsServer, dict[str, str]], tmp_path: Path) -> None:
    server, users = secured
    env = {**os.environ, "PODTAX_NATS_URL": server.url, "PODTAX_NATS_USER": "parser",
           "PODTAX_NATS_PASSWORD": users["parser"], "PODTAX_HEALTH_PORT": "0"}
    log = tmp_path / "parser.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "podtax_parser"], env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        _wait_for_line(log, proc, WAITING)
        assert WAITING in log.read_text(), log.read_text()
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)  # raises TimeoutExpired while it still waits
        text = log.read_text()
        assert proc.returncode == 0, text
        assert "stopped while waiting for stream PODTAX" in text and "podtax-parser stopped" in text, text
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
