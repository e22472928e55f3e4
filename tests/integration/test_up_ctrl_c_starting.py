"""Ctrl-C while `podtax up` waits for its embedded nats-server to listen stops that nats-server too (fxN, session 55;
review rN, item 2). It runs in a session of its own (a terminal's Ctrl-C must not stop it before the services it
serves), so `up` exited 130 ('interrupted: `podtax up` stopped before it finished; ...') and left it running: `up`
run again started a second nats-server on the same JetStream store.

The real `podtax` console script in a process group of its own. nats-server's log (<data>/logs/nats-server.log) is a
FIFO the test fills first, so nats-server blocks on its first log line, before it listens: `up` waits in
natsserver.start's loop (its main thread asleep there, /proc/<pid>/wchan) when the SIGINT comes. No timing."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from podtax.natsserver import free_port


def _nats_server_of(parent: int) -> int | None:
    """The pid of `parent`'s nats-server child, if it has exec'd."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)
            if fields[0].endswith("(nats-server") and int(fields[1].split()[1]) == parent:
                return int(stat.parent.name)
    return None


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_ctrl_c_while_up_starts_nats_server_stops_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "logs").mkdir(parents=True)
    fifo = data / "logs" / "nats-server.log"
    os.mkfifo(fifo)
    full = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # a reader, so `up` opens it; then filled: nats-server blocks
    with contextlib.suppress(BlockingIOError):
        while True:
            os.write(full, b"x" * 4096)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    proc = subprocess.Popen([str(Path(sys.executable).parent / "podtax"), "up", "--data-dir", str(data), "--api-port",
                             str(free_port()), "--no-kubesim", "--node", "n1"], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    server = None
    try:
        while server is None and proc.poll() is None:
            server = _nats_server_of(proc.pid)
            time.sleep(0.01)
        assert server is not None, proc.communicate()
        while Path(f"/proc/{proc.pid}/wchan").read_text() != "hrtimer_nanosleep":  # in start's loop, asleep
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C (nats-server, in its own session, gets none)
        _, err = proc.communicate(timeout=60)
        left = _alive(server)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if server is not None and _alive(server):
            os.kill(server, signal.SIGKILL)
        os.close(full)
    assert not left, "nats-server left running"  # before: it was
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["interrupted: `podtax up` stopped before it finished; run it again to "
                                        "finish it"], err


def test_an_error_after_up_started_nats_server_stops_it(tmp_path: Path) -> None:
    """The same for an error between nats-server's start and `up`'s own handling of the rest: the API token file
    (PODTAX_API_TOKEN given) cannot be written, a folder in its place. (What `up` says then is not this test's: a
    traceback, reported apart.)"""
    data = tmp_path / "data"
    (data / "api-token").mkdir(parents=True)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}, "PODTAX_API_TOKEN": "t0ken"}
    proc = subprocess.Popen([str(Path(sys.executable).parent / "podtax"), "up", "--data-dir", str(data), "--api-port",
                             str(free_port()), "--no-kubesim", "--node", "n1"], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    servers: list[int] = []
    try:
        while proc.poll() is None:  # its nats-server, once exec'd
            servers += [pid for pid in [_nats_server_of(proc.pid)] if pid and pid not in servers]
            time.sleep(0.01)
        err = proc.communicate()[1]
        left = [pid for pid in servers if _alive(pid)]
    finally:
        for pid in servers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert servers, err  # it started one
    assert proc.returncode != 0 and left == [], (left, err)  # before: left running
