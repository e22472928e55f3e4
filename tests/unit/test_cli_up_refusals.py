"""`podtax up` refuses at once, before starting anything, what would otherwise crash-loop its children: a
data dir another `podtax up` holds (a second nats-server on the same JetStream store, two analyzers on one
DuckDB file, and the running one's up.json deleted on exit), and a port already in use (the analyzer was
restarted for 43 s, nats-server for 22 s, without a word about the port). Run as `podtax`."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

PODTAX = str(Path(sys.executable).with_name("podtax"))
HOLD = """import fcntl, os, sys, time
f = open(sys.argv[1], "a+"); fcntl.flock(f, fcntl.LOCK_EX); f.truncate(0); f.write(f"{os.getpid()}\\n"); f.flush()
print("held", flush=True); time.sleep(120)
"""


def _up(tmp_path: Path, *args: str) -> tuple[int, str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}  # embedded nats-server
    start = time.monotonic()
    proc = subprocess.run([PODTAX, "up", "--data-dir", str(tmp_path / "data"), *args], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path, env=env)
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr + proc.stdout
    return proc.returncode, lines[0], time.monotonic() - start


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def _holder(lock: Path) -> subprocess.Popen[str]:
    """Another process holding the data dir's lock as `podtax up` does (flock, its pid inside)."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(lock)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def test_a_data_dir_in_use_is_refused_at_once(tmp_path: Path, busy_port: int) -> None:
    holder = _holder(tmp_path / "data" / "up.lock")
    try:
        code, line, took = _up(tmp_path, "--api-port", str(busy_port))
    finally:
        holder.kill()
        holder.wait()
    assert code == 2 and took < 10
    assert line == (f"error: the data dir {tmp_path / 'data'} is in use by podtax up (pid {holder.pid}); stop it or "
                    f"pass another --data-dir")
    assert not (tmp_path / "data" / "jetstream").exists()  # nothing started on its store


def test_the_lock_of_a_killed_up_does_not_block(tmp_path: Path, busy_port: int) -> None:
    holder = _holder(tmp_path / "data" / "up.lock")
    holder.kill()  # as `kill -9` would leave it: the file, with a pid, but no lock
    holder.wait()
    code, line, _ = _up(tmp_path, "--api-port", str(busy_port))
    assert code == 2 and "is in use by podtax up" not in line
    assert f"--api-port {busy_port}: 127.0.0.1:{busy_port} is in use" in line  # got past the lock to the ports


@pytest.mark.parametrize("option", ["--api-port", "--nats-port"])
def test_a_port_in_use_is_refused_before_anything_starts(option: str, tmp_path: Path, busy_port: int) -> None:
    other = ["--api-port", "1"] if option == "--nats-port" else []  # never reached: the nats port comes first
    code, line, took = _up(tmp_path, option, str(busy_port), *other)
    assert code == 2 and took < 10
    assert line == (f"error: {option} {busy_port}: 127.0.0.1:{busy_port} is in use (by another program or another "
                    f"podtax up); choose another port")
    assert not (tmp_path / "data" / "jetstream").exists()


def test_the_same_port_for_both_is_refused(tmp_path: Path) -> None:
    code, line, _ = _up(tmp_path, "--nats-port", "23999", "--api-port", "23999")
    assert code == 2 and "--nats-port and --api-port are both 23999" in line


def test_a_bad_setting_that_podtax_up_passes_on_is_refused_before_starting(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    proc = subprocess.run([PODTAX, "up", "--data-dir", str(tmp_path / "data"), "--api-port", "1"], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path, env={**env, "PODTAX_NATS_URL": "nats://127.0.0.1:70000"})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == ["error: PODTAX_NATS_URL: 'nats://127.0.0.1:70000' needs a host and, "
                                                "if given, a port from 1 to 65535 (as in nats://127.0.0.1:4222) "
                                                "(got 'nats://127.0.0.1:70000')"]


@pytest.mark.parametrize("where", ["folder", "no-such-folder/ready.json"])
def test_a_ready_file_that_cannot_be_written_is_refused_before_starting(where: str, tmp_path: Path) -> None:
    """--ready-file is written once everything is up: a folder there (IsADirectoryError) or a missing folder
    failed only then, after nats-server and every service had started."""
    (tmp_path / "folder").mkdir()
    code, line, _ = _up(tmp_path, "--ready-file", str(tmp_path / where), "--no-kubesim")
    assert code == 2
    assert line == (f"error: {tmp_path / 'folder'} is a folder; give a file name" if where == "folder" else
                    f"error: cannot write {tmp_path / where}: the folder {tmp_path / 'no-such-folder'} does not "
                    f"exist; create it first or choose another path")
    assert not (tmp_path / "data" / "jetstream").exists()  # nothing started
