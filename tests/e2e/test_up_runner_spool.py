"""`podtax up` gives its runner a spool (PODTAX_RUNNER_SPOOL_DIR, services/runner/src/podtax_runner/spool.py) under
its data dir: without one, a report NATS refused while JetStream's storage was used up (the embedded server's store
on the same disk) lived in memory only and a runner restart ran its run again, the measurement made lost. A spool the
user set is kept. The real `podtax up`; what its runner child was given is read from /proc."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from podtax import natsserver

from tests.conftest import wait_until_up


def runner_env(up_pid: int) -> dict[str, str]:
    """The environment of the runner `podtax up` (pid `up_pid`) started, waited for (it starts with the others)."""
    deadline = time.monotonic() + 30
    while True:
        for entry in Path("/proc").iterdir():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                if ppid == up_pid and b"podtax_runner" in argv:
                    raw = (entry / "environ").read_bytes()
                    return dict(v.decode().partition("=")[::2] for v in raw.split(b"\0") if v)
            except (OSError, ValueError, IndexError):
                continue
        assert time.monotonic() < deadline, "no runner child of podtax up"
        time.sleep(0.2)


@pytest.mark.parametrize("spool", [None, "mine"])
def test_up_gives_its_runner_a_spool(tmp_path: Path, spool: str | None) -> None:
    data, ready = tmp_path / "data", tmp_path / "ready.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    if spool:
        env["PODTAX_RUNNER_SPOOL_DIR"] = str(tmp_path / spool)
    proc = subprocess.Popen([sys.executable, "-m", "podtax.cli.main", "up", "--data-dir", str(data), "--no-kubesim",
                             "--api-port", str(natsserver.free_port()), "--node", "up-node", "--ready-file",
                             str(ready)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until_up(proc, ready)
        got = runner_env(proc.pid).get("PODTAX_RUNNER_SPOOL_DIR")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert got == str(tmp_path / spool if spool else data.resolve() / "runner-spool"), got
