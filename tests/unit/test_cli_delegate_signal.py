"""A command run as a service package's own process (delegate.run_module: `podtax kubesim`, `simulate`, `volumes`)
whose process a signal ends: its status was the child's negative returncode passed to sys.exit, so a killed kubesim
made `podtax kubesim` exit 247 (256 - 9; session 53). Now 128 + the signal, as a shell says it (137)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

PODTAX = str(Path(sys.executable).with_name("podtax"))


def test_a_child_ended_by_a_signal_is_128_plus_the_signal(tmp_path: Path) -> None:
    proc = subprocess.Popen([PODTAX, "kubesim", "--port", "0", "--kubeconfig", str(tmp_path / "k.yaml")],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the child (python -m podtax_kubesim) serves
        assert "SIMULATED Kubernetes API at" in line, (line, proc.poll())
        [child] = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        os.kill(int(child), signal.SIGKILL)  # the OOM killer, or `kill -9` of the child alone
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (proc.returncode, out, err) == (128 + signal.SIGKILL, "", "")
