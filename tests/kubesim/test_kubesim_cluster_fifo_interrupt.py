"""`podtax kubesim --cluster FILE` where FILE is a FIFO no one writes to waits for its writer as `cat` would (a
process substitution <(...) is read so); Ctrl-C there printed a KeyboardInterrupt traceback, the file being read
before kubesim's own Ctrl-C handling. Now it ends as Ctrl-C later does: status 130, no traceback. Run as `podtax`."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

PODTAX = str(Path(sys.executable).with_name("podtax"))


def _as_from_a_shell() -> None:
    """Ctrl-C reaches the command as from an interactive shell: SIGINT at its default, not blocked. A child inherits
    an ignored or blocked SIGINT from the test process, and a shell without job control starts a background job
    (`make test &`, as a CI may run it) with SIGINT ignored: then the SIGINT never came and the test timed out (final
    CI of 08d4304; reproduced with the test run from a process ignoring, or blocking, SIGINT)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_ctrl_c_while_the_cluster_file_is_read_is_no_traceback(tmp_path: Path) -> None:
    fifo = tmp_path / "cluster.yaml"
    os.mkfifo(fifo)
    proc = subprocess.Popen([PODTAX, "kubesim", "--cluster", str(fifo), "--port", "0"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_as_from_a_shell)
    writer = None
    try:
        deadline = time.monotonic() + 60
        while writer is None:  # a FIFO opens for writing without waiting only once its reader has it open
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            try:
                writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                assert exc.errno == errno.ENXIO, exc
                time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if writer is not None:
            os.close(writer)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert proc.returncode == 130, (proc.returncode, err)


@pytest.mark.parametrize(("command", "sig", "status"), [
    ([PODTAX, "kubesim"], signal.SIGINT, 130), ([sys.executable, "-m", "podtax_kubesim"], signal.SIGINT, 130),
    ([PODTAX, "kubesim"], signal.SIGTERM, 0)])
def test_ctrl_c_while_serving_is_status_130(tmp_path: Path, command: list[str], sig: int, status: int) -> None:
    """tools/kubesim/README: 'Ctrl-C stops it with status 130, nothing printed'. Once serving, Ctrl-C ended it with
    status 0, as SIGTERM does (session 53: `podtax-kubesim`, then SIGINT: exit 0); 130 only while --cluster was
    read. Now Ctrl-C is 130 there too; SIGTERM (a supervisor's stop) stays 0."""
    proc = subprocess.Popen([*command, "--port", "0", "--kubeconfig", str(tmp_path / "k.yaml")], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_as_from_a_shell)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # it prints its address once it serves
        assert "SIMULATED Kubernetes API at" in line, (line, proc.poll())
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (proc.returncode, out, err) == (status, "", "")


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_a_signal_to_the_whole_process_group_stops_podtax_kubesim_once(tmp_path: Path, sig: int, status: int) -> None:
    """A supervisor stopping the whole group (systemd KillMode=control-group, `kill -- -PGID`) signals kubesim twice:
    directly and forwarded by `podtax kubesim`. A second SIGTERM while it stopped found SIGTERM back at its default
    (asyncio.run's loop gives its handlers back) and killed it: status 143 in 3 of 10 runs (review r9). Now a second
    one while it stops is ignored. Several runs: when the second signal comes varies."""
    results = []
    for run in range(8):
        proc = subprocess.Popen([PODTAX, "kubesim", "--port", "0", "--kubeconfig", str(tmp_path / f"k{run}.yaml")],
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True, preexec_fn=_as_from_a_shell)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert "SIMULATED Kubernetes API at" in line, (line, proc.poll())
            os.killpg(proc.pid, sig)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        results.append((proc.returncode, out, err))
    assert Counter(results) == {(status, "", ""): len(results)}  # (status, stdout, stderr): runs
