"""Pause a process with SIGSTOP and wait until it is paused: kill() only queues the signal, and each thread of the
process (nats-server's Go threads, a Python server's) stops when it next runs, so a server told to stop can still
answer for a moment on a loaded machine. Tests that need a server that no longer answers wait for this.
Then kill_nats / start_nats_again / restart_nats: nats-server killed (paused or not) and started again in its place,
the same port, store and configuration, as a pod restarted; asked_during_restart: a request that went to the server
that died."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from podtax import natsserver

T = TypeVar("T")


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


def kill_nats(server: natsserver.NatsServer) -> None:
    """SIGKILL `server`'s nats-server (a paused one too) and wait until it is gone: its port is free, its store kept."""
    server.proc.kill()
    server.proc.wait()


def start_nats_again(server: natsserver.NatsServer, log_file: Path) -> None:
    """Start nats-server again in the place of `server`'s killed one (its port, store and configuration), logging to
    `log_file`. `server.proc` is then the new process, so whoever stops `server` (its fixture) stops that one."""
    again = natsserver.start(server.store_dir, server.port, log_file=log_file, config=server.config,
                             own_session=server.own_session)
    server.proc = again.proc


def restart_nats(server: natsserver.NatsServer, log_file: Path, delay_s: float = 0.0) -> None:
    """kill_nats, `delay_s` seconds more (a pod restarted is slower than a process), start_nats_again."""
    kill_nats(server)
    time.sleep(delay_s)
    start_nats_again(server, log_file)


async def asked_during_restart(server: natsserver.NatsServer, log_file: Path, ask: Callable[[], Coroutine[Any, Any, T]],
                               delay_s: float = 0.0) -> asyncio.Task[T]:
    """ask() sent to `server`'s nats-server paused (so never answered), the server killed 1 s later and started again
    (restart_nats, `delay_s`): the task of ask(), whose await gives what it returns or raises."""
    await asyncio.to_thread(pause, server.proc.pid)
    asking = asyncio.create_task(ask())
    await asyncio.sleep(1)
    await asyncio.to_thread(restart_nats, server, log_file, delay_s)
    return asking
