"""`podtax up --nomadsim`: the SIMULATED Nomad API starts beside the services, with its CSI plugin,
the runner is pointed at it (up.json names it), and SIGTERM stops it with everything else."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from podtax import natsserver

from tests.conftest import wait_until_up


def test_up_starts_the_nomad_stand_in(tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    proc = subprocess.Popen([sys.executable, "-m", "podtax.cli.main", "up", "--data-dir", str(tmp_path / "data"),
                             "--api-port", str(natsserver.free_port()), "--node", "up-node", "--no-kubesim",
                             "--nomadsim", "--ready-file", str(ready)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until_up(proc, ready)
        addr = json.loads((tmp_path / "data" / "up.json").read_text())["nomad_addr"]
        assert addr.startswith("http://127.0.0.1:")
        for _ in range(100):
            try:
                resp = httpx.get(f"{addr}/v1/plugins", params={"type": "csi"}, timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        assert resp.status_code == 200 and resp.headers["X-Podtax-Simulated"] == "true"
        assert [p["ID"] for p in resp.json()] == ["hostpath"]
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert "nomad" in out and "SIMULATED by tools/nomadsim" in out
    with pytest.raises(httpx.HTTPError):  # stopped with everything else
        httpx.get(f"{addr}/v1/plugins", timeout=2)
