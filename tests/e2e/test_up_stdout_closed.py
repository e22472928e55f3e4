"""`podtax up | head -1` (or a demo interrupted while piped): once its stdout's reader had gone, SIGTERM made
`podtax up` fail on printing "stopping ..." and exit without stopping a child; the services ran on as orphans.
Now the shutdown lines are best effort and every child is stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from podtax import natsserver

from tests.e2e.test_up import children_of
from tests.e2e.test_up_supervise import wait


def alive(pid: int) -> bool:
    """Running (a zombie has stopped: only its exit status is left)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _start_up(tmp_path: Path, ready: Path) -> subprocess.Popen[bytes]:
    """`podtax up` ready, or exited; a port free when picked but taken before up listened (another test's child
    grabbing it: up exits 2 'is in use') is picked again, at most 3 times."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    for _ in range(3):
        with open(tmp_path / "err.txt", "w") as err_out:
            proc = subprocess.Popen([sys.executable, "-m", "podtax.cli.main", "up", "--data-dir",
                                     str(tmp_path / "data"), "--api-port", str(natsserver.free_port()), "--node",
                                     "up-node", "--no-kubesim", "--ready-file", str(ready)],
                                    env=env, stdout=subprocess.PIPE, stderr=err_out)
        wait(lambda p=proc: ready.exists() or p.poll() is not None, 60, "podtax up to be ready")
        if proc.poll() != 2 or "is in use" not in (tmp_path / "err.txt").read_text():
            break
    return proc


def test_up_stops_its_children_when_its_stdout_is_closed(tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    proc = _start_up(tmp_path, ready)
    children: set[int] = set()
    try:
        assert proc.poll() is None, (proc.returncode, (tmp_path / "err.txt").read_text())
        children = children_of(proc.pid)
        assert len(children) >= 4, "nats-server and the services"
        assert proc.stdout is not None
        proc.stdout.close()  # the reader goes away, as `head -1` does
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        assert [pid for pid in children if alive(pid)] == [], (proc.returncode, (tmp_path / "err.txt").read_text())
    finally:
        for pid in children:
            if alive(pid):
                os.kill(pid, signal.SIGTERM)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
