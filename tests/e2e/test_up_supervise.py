"""`podtax up` supervises nats-server like the other children (issue 12 item 8): after a SIGKILL it is
restarted on its port, with a message, and the services carry on; the restart limit is a rate (item 9)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from podtax import natsserver

from tests.e2e.test_up import children_of


def child_named(parent: int, word: str) -> int | None:
    for pid in children_of(parent):
        try:
            if word in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                return pid
        except OSError:
            continue
    return None


def wait(predicate, timeout: float, what: str):  # noqa: ANN001, ANN201 - a tiny poll helper
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def health(port: int) -> dict | None:
    try:
        r = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
        return {"code": r.status_code, **r.json()}
    except (httpx.HTTPError, ValueError):
        return None


def test_up_restarts_a_killed_nats_server_and_services_reconnect(tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    out_file = tmp_path / "up.out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    port = natsserver.free_port()
    with open(out_file, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "podtax.cli.main", "up", "--data-dir", str(tmp_path / "data"),
                                 "--api-port", str(port), "--node", "up-node", "--no-kubesim",
                                 "--ready-file", str(ready)], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait(lambda: ready.exists() or proc.poll() is not None, 60, "podtax up to be ready")
        assert proc.poll() is None, out_file.read_text()
        nats_url = json.loads(ready.read_text())["nats_url"]
        first = child_named(proc.pid, "nats-server")
        assert first is not None
        os.kill(first, signal.SIGKILL)
        second = wait(lambda: (pid := child_named(proc.pid, "nats-server")) not in (None, first) and pid,
                      30, "a new nats-server")
        assert "nats-server exited with -9; restarting" in out_file.read_text()
        assert f"-p {nats_url.rsplit(':', 1)[1]}" in Path(f"/proc/{second}/cmdline").read_bytes().replace(
            b"\0", b" ").decode(), "restarted on the same port: clients reconnect to the URL they know"
        wait(lambda: (h := health(port)) and h["code"] == 200 and h["nats"] == "connected", 30,
             "the analyzer reconnected to NATS")
        runner = child_named(proc.pid, "podtax_runner")
        assert runner is not None
        os.kill(runner, signal.SIGKILL)
        wait(lambda: child_named(proc.pid, "podtax_runner") not in (None, runner), 30, "a new runner")
        assert proc.poll() is None, "two crashes of different children stop nothing"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    assert proc.returncode == 0, out_file.read_text()
