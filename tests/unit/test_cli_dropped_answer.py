"""An analyzer that stops answering mid-request (audit: SIGKILLed during `podtax reparse`) was reported as one that
cannot be reached, 'start it with podtax up', though it ran. Now the CLI says it stopped answering mid-request and
that the command (the reparse, which derives the same results again) may be run again; a closed port keeps the
old line. Real sockets: one that reads the request and closes without an answer, and a port nobody listens on."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from podtax import natsserver

CLI = [sys.executable, "-m", "podtax.cli.main"]


@pytest.fixture
def dropping() -> Iterator[str]:
    """A server that accepts, reads the request and closes the connection without answering."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            conn, _ = listener.accept()
            with conn:
                data = b""
                while b"\r\n\r\n" not in data and (chunk := conn.recv(4096)):
                    data += chunk

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    with socket.create_connection(listener.getsockname()):  # wakes accept() up
        pass
    thread.join()
    listener.close()


def _run(args: list[str], url: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}, "PODTAX_API_URL": url,
           "PODTAX_API_TOKEN": "t", "PODTAX_DATA_DIR": str(tmp_path)}
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=60)


def test_a_reparse_whose_analyzer_drops_the_connection_says_so(dropping: str, tmp_path: Path) -> None:
    done = _run(["reparse"], dropping, tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"error: the analyzer at {dropping} stopped answering mid-request (Server disconnected without sending a "
        "response.): it may have stopped or restarted (see its log), or the connection to it stalled or was too "
        "slow (it then ends the answer and its log says so); the reparse may not have finished: run podtax "
        "reparse again once it answers (it derives the same results from the stored logs again: nothing is lost or "
        "doubled)"], done.stderr


def test_other_commands_say_it_too(dropping: str, tmp_path: Path) -> None:
    done = _run(["results"], dropping, tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().endswith("stopped answering mid-request (Server disconnected without sending a "
                                        "response.): it may have stopped or restarted (see its log), or the "
                                        "connection to it stalled or was too slow (it then ends the answer and its "
                                        "log says so); run the command again once it answers"), done.stderr


def test_a_closed_port_is_still_an_analyzer_to_start(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{natsserver.free_port()}"
    done = _run(["reparse"], url, tmp_path)
    assert done.returncode == 1, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: cannot reach the analyzer at {url} (") and line.endswith(
        "); start it with `podtax up` or set PODTAX_API_URL"), line
