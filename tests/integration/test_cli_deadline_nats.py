"""Every CLI command that talks to NATS has a deadline (issue 12, item 10): a server that accepts the
connection but never answers (SIGSTOPped: the worst case, where nats-py would wait for ever) ends
each command with one line and exit 1."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from podtax import natsserver
from podtax.cli.main import main

from tests.paused import pause

CAMPAIGN = "name: frozen\nnodes: [a]\ntests:\n  - test: sysbench-cpu\n"


@pytest.mark.parametrize("argv", [["campaign", "status", "frozen"], ["campaign", "submit", "{file}"],
                                  ["campaign", "cancel", "frozen", "--wait", "0"]])
def test_a_frozen_server_ends_the_command_at_its_deadline(nats_server: natsserver.NatsServer, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    (tmp_path / "c.yaml").write_text(CAMPAIGN)
    monkeypatch.setenv("PODTAX_NATS_URL", nats_server.url)
    monkeypatch.setenv("PODTAX_CLI_TIMEOUT", "2")
    pause(nats_server.proc.pid)  # every thread stopped: it can answer nothing more (kill() only queues the signal)
    try:
        code = main([a.format(file=tmp_path / "c.yaml") for a in argv])
    finally:
        nats_server.proc.send_signal(signal.SIGCONT)
    err = capsys.readouterr().err.strip()
    assert code == 1, err
    # the connection gives up first (it is bounded below the deadline), else the deadline names the step
    assert f"cannot reach NATS at {nats_server.url}" in err or ("frozen" in err and "within 2 s" in err), err
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
