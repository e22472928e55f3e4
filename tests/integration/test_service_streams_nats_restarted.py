"""nats-server killed and started again (its store kept) while a service checks its streams. The check's request
went to the server that died; nats-py reconnected within 2 s and then timed the request out on the new, live
connection. service_streams took "no answer on a live connection" for a server that does not answer and let the
TimeoutError through: the analyzer ended in a traceback, exit 1 (fault sweep: every service SIGKILLed in turn
while a campaign ran, nats-server 1 s after the analyzer's restart; the campaign then finished with nothing stored
until the analyzer was started by hand). A check whose connection was lost and made again meanwhile is now made
again, as when NATS is still gone."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from podtax import natsserver

from tests.integration.secured import secured_fixture  # noqa: F401 - fixture
from tests.integration.test_service_stop_waiting import _waiting
from tests.paused import pause, restart_nats


def _until(log: Path, proc: object, text: str) -> str:
    for _ in range(600):
        got = log.read_text(errors="replace")
        if text in got or proc.poll() is not None:  # type: ignore[attr-defined]
            return got
        time.sleep(0.1)
    return log.read_text(errors="replace")


def test_a_service_checking_its_streams_outlives_a_nats_restart(
        secured: tuple[natsserver.NatsServer, dict[str, str]], tmp_path: Path) -> None:
    server, _ = secured
    log = tmp_path / "analyzer.log"
    proc = _waiting(secured, log, "analyzer", PODTAX_ANALYZER_DB=str(tmp_path / "podtax.duckdb"),
                    PODTAX_ANALYZER_PORT=str(natsserver.free_port()))
    try:
        pause(server.proc.pid)  # its next poll for the stream is sent and never answered
        time.sleep(2)
        restart_nats(server, tmp_path / "nats2.log")
        text = _until(log, proc, "checking again")
        assert proc.poll() is None, text
        assert "Traceback" not in text, text
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        text = log.read_text(errors="replace")
        assert proc.returncode == 0 and "Traceback" not in text, text
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
