"""Pause a process with SIGSTOP and wait until it is paused: kill() only queues the signal, and each thread of the
process (nats-server's Go threads, a Python server's) stops when it next runs, so a server told to stop can still
answer for a moment on a loaded machine. Tests that need a server that no longer answers wait for this."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def thread_states(pid: int) -> list[str]:
    """The state letter of each thread of `pid` (from /proc/<pid>/task/*/stat; 'T' is stopped)."""
    states = []
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        try:
            states.append(stat.read_text().rsplit(")", 1)[1].split()[0])
        except (OSError, IndexError):  # a thread that ended meanwhile
            continue
    return states


def pause(pid: int, timeout: float = 10.0) -> None:
    """SIGSTOP `pid` and return once every thread of it is stopped; AssertionError after `timeout` seconds."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + timeout
    while True:
        states = thread_states(pid)
        if states and all(s in "tT" for s in states):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"process {pid} not stopped {timeout:g} s after SIGSTOP: its threads are {states}")
        time.sleep(0.01)
