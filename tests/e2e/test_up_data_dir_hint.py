"""`podtax up --data-dir X` tells the user to set PODTAX_DATA_DIR=X for the CLI (its banner), and a CLI command
without it, which falls back to NATS's default address, says PODTAX_DATA_DIR in its one error line: it said only
"cannot reach NATS at ...:4222 ... start one with `podtax up`" while one was running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from podtax import natsserver

CLI = [sys.executable, "-m", "podtax.cli.main"]


def test_up_names_its_data_dir_and_the_cli_error_mentions_it(tmp_path: Path) -> None:
    data, ready, elsewhere = tmp_path / "data", tmp_path / "ready.json", tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    env["PODTAX_CLI_TIMEOUT"] = "6"
    proc = subprocess.Popen([*CLI, "up", "--data-dir", str(data), "--api-port", str(natsserver.free_port()),
                             "--node", "hint-node", "--ready-file", str(ready)], cwd=elsewhere, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "podtax up did not become ready"
            time.sleep(0.2)
        lost = subprocess.run([*CLI, "campaign", "status", "quick"], cwd=elsewhere, env=env, capture_output=True,
                              text=True, timeout=60)
        assert lost.returncode == 1
        [line] = lost.stderr.strip().splitlines()
        assert line.startswith("error: cannot reach NATS at") and "set PODTAX_DATA_DIR to the --data-dir" in line
        found = subprocess.run([*CLI, "campaign", "status", "quick"], cwd=elsewhere, capture_output=True, text=True,
                               env={**env, "PODTAX_DATA_DIR": str(data)}, timeout=90)
        assert "cannot reach NATS" not in found.stderr and "quick" in found.stderr, found.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert f"  CLI        export PODTAX_DATA_DIR={data}  (podtax commands find this one with it)\n" in out, out
