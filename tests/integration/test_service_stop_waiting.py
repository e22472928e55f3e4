"""A service started before its streams' owner waits for them (natsauth.CREATORS); SIGTERM must end that wait
cleanly: the wait ignored it, so a host agent or parser started before the runner could only be SIGKILLed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
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


def _waiting(secured: tuple[natsserver.NatsServer, dict[str, str]], log: Path, role: str,
             **env: str) -> subprocess.Popen[bytes]:
    """podtax-<role> started as that NATS user before the runner, once it says it waits for the streams."""
    server, users = secured
    env = {**os.environ, "PODTAX_NATS_URL": server.url, "PODTAX_NATS_USER": role,
           "PODTAX_NATS_PASSWORD": users[role], "PODTAX_HEALTH_PORT": "0", **env}
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", f"podtax_{role}"], env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    _wait_for_line(log, proc, WAITING)
    return proc


def _get(url: str) -> object:
    """The JSON document at url, waiting while nothing listens there yet (the server may still be binding)."""
    for _ in range(50):
        try:
            with urllib.request.urlopen(url, timeout=10) as reply:
                return json.loads(reply.read())
        except urllib.error.URLError as exc:
            if not isinstance(exc.reason, ConnectionRefusedError):
                raise
            time.sleep(0.1)
    raise AssertionError(f"nothing listens at {url}")


def _stops_on_sigterm(proc: subprocess.Popen[bytes], log: Path, role: str) -> None:
    try:
        assert WAITING in log.read_text(), log.read_text()
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)  # raises TimeoutExpired while it still waits
        text = log.read_text()
        assert proc.returncode == 0, text
        assert "stopped while waiting for stream PODTAX" in text and f"podtax-{role} stopped" in text, text
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_sigterm_ends_the_wait_for_the_runners_streams(
        secured: tuple[natsserver.NatsServer, dict[str, str]], tmp_path: Path) -> None:
    log = tmp_path / "parser.log"
    _stops_on_sigterm(_waiting(secured, log, "parser"), log, "parser")


def test_the_analyzer_serves_its_api_while_it_waits(
        secured: tuple[natsserver.NatsServer, dict[str, str]], tmp_path: Path) -> None:
    """It served its HTTP API only once the runner had made the streams: with no runner on that NATS (an
    analysis-only deployment, a runner scaled to 0) stored data was not served at all."""
    log, port = tmp_path / "analyzer.log", natsserver.free_port()
    proc = _waiting(secured, log, "analyzer", PODTAX_ANALYZER_DB=str(tmp_path / "podtax.duckdb"),
                    PODTAX_ANALYZER_PORT=str(port))
    try:
        assert _get(f"http://127.0.0.1:{port}/api/campaigns") == []
    finally:
        _stops_on_sigterm(proc, log, "analyzer")
