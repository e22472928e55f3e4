"""`podtax up`: embedded nats-server and every service as child processes; SIGTERM stops them all."""

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

from tests.conftest import wait_until_up


def children_of(pid: int) -> set[int]:
    """Child pids, read from /proc (no dependency on procps)."""
    kids = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.add(int(stat.parent.name))
    return kids


def test_up_starts_everything_and_sigterm_stops_everything(tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    port = natsserver.free_port()
    proc = subprocess.Popen([sys.executable, "-m", "podtax.cli.main", "up", "--data-dir", str(tmp_path / "data"),
                             "--api-port", str(port), "--node", "up-node", "--ready-file", str(ready)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until_up(proc, ready)
        info = json.loads(ready.read_text())
        assert info["nats_url"].startswith("nats://127.0.0.1:")
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").json()["status"] == "ok"
        assert json.loads((tmp_path / "data" / "up.json").read_text())["api_url"] == info["api_url"]
        second = subprocess.run([sys.executable, "-m", "podtax.cli.main", "up", "--data-dir", str(tmp_path / "data"),
                                 "--api-port", str(natsserver.free_port())], env=env, capture_output=True, text=True,
                                timeout=30)
        assert second.returncode == 2 and second.stderr.strip().splitlines() == [
            f"error: the data dir {tmp_path / 'data'} is in use by podtax up (pid {proc.pid}); stop it or pass "
            f"another --data-dir"], second.stderr
        assert json.loads((tmp_path / "data" / "up.json").read_text())["api_url"] == info["api_url"]  # still there
        metrics = info["metrics"]  # every service serves /metrics, and podtax up says where
        assert set(metrics) >= {"analyzer", "parser", "runner", "host_agent", "scheduler"}
        for name, url in metrics.items():
            for _ in range(50):  # a service opens its health port once connected to NATS
                try:
                    body = httpx.get(url, timeout=2).text
                    break
                except httpx.HTTPError:
                    time.sleep(0.2)
            else:
                raise AssertionError(f"{name}: nothing at {url}")
            assert "# TYPE" in body, name
        kids = children_of(proc.pid)
        assert len(kids) >= 5, "nats-server, analyzer, parser, runner, host agent (and the emulator)"
        cmdlines = [Path(f"/proc/{k}/cmdline").read_bytes().replace(b"\0", b" ").decode() for k in kids]
        assert any("podtax_scheduler" in c for c in cmdlines), "podtax up runs the scheduler on the emulator"
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert "podtax is up" in out and "stopped" in out and "/metrics" in out
    assert "SIMULATED" in out
    for pid in kids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        raise AssertionError(f"child {pid} survived SIGTERM")
    assert not (tmp_path / "data" / "up.json").exists()
