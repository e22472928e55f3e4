"""A NATS server started without JetStream (`nats-server` with no `-js`, or a configuration without a
`jetstream` block): podtax keeps its streams, consumers and state there. Every CLI command that talks to NATS and
every service ended in a traceback (`nats.js.errors.ServiceUnavailableError: ... description='None'`, audit hH);
now it is one line that names the fix (exit 1 for the CLI, 3 for a service, as for an unreachable NATS)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from podtax import natsserver
from podtax.bus import Bus, BusError
from podtax.cli.main import main

EXAMPLE = Path(__file__).parents[2] / "examples/campaigns/quick.yaml"
SAID = "has no JetStream"


@pytest.fixture
def plain_nats(tmp_path: Path) -> Iterator[str]:
    """A real nats-server on a free port, without JetStream; its URL."""
    port = natsserver.free_port()
    with open(tmp_path / "nats.log", "wb") as out:
        proc = subprocess.Popen([natsserver.binary(), "-a", "127.0.0.1", "-p", str(port)], stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "nats.log").read_text()
                time.sleep(0.05)
        yield f"nats://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(30)


async def test_connecting_says_jetstream_is_off(plain_nats: str) -> None:
    with pytest.raises(BusError, match=rf"NATS at {plain_nats} {SAID}.*-js"):
        await Bus.connect(plain_nats, "test/no-js")


@pytest.mark.parametrize("argv", [["campaign", "status", "quick"], ["campaign", "submit", str(EXAMPLE)],
                                  ["campaign", "cancel", "quick", "--wait", "0"]])
def test_a_command_says_it_in_one_line(plain_nats: str, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", plain_nats)
    monkeypatch.setenv("PODTAX_API_URL", "http://127.0.0.1:9")  # nothing there: submit's analyzer check says so
    code = main([*argv, *(["--skip-analyzer-check"] if "submit" in argv else [])])
    err = capsys.readouterr().err.strip()
    assert code == 1, err
    assert SAID in err and "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err


def test_a_service_stops_with_one_line(plain_nats: str, tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}, "PODTAX_NATS_URL": plain_nats,
           "PODTAX_LOG_FORMAT": "text"}
    done = subprocess.run([sys.executable, "-m", "podtax_parser"], env=env, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert SAID in done.stderr and "Traceback" not in done.stderr, done.stderr
