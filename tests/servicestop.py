"""A service's real entry point run as a subprocess beside a real nats-server, then stopped with SIGTERM: service
starts it with its log in a file (killed on the way out if a test failed before its stop), until waits for a line of
that log, sigterm signals it and waits for its exit (Ended: exit code, log, the log from the signal on), or
sigterm_once_waiting once it waits for NATS; stopped_cleanly checks it exited 0 saying it stopped while waiting for
NATS, without a traceback. publish_undecodable (send_undecodable on a bus of one's own) sends messages no service can
decode: each is dead-lettered one by one, so a dead letter is under way when a test pauses nats-server; until_made
waits until a consumer or stream a service makes is there."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from podtax.bus import Bus


def until(log: Path, proc: subprocess.Popen[bytes], text: str, tries: int = 300, every_s: float = 0.1) -> str:
    """`log`'s text once it holds `text` or `proc` has ended, else after `tries` looks `every_s` seconds apart."""
    for _ in range(tries):
        got = log.read_text(errors="replace")
        if text in got or proc.poll() is not None:
            return got
        time.sleep(every_s)
    return log.read_text(errors="replace")


@contextmanager
def service(module: str, env: Mapping[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`python -m <module>` with `env`, its stdout and stderr to `log`; killed on the way out if still running."""
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", module], env=dict(env), stdout=out, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@dataclass
class Ended:
    name: str  # the service, as it names itself in its log: podtax-parser
    returncode: int
    seconds: float  # SIGTERM -> exit (a figure for a bench; no test asserts on it)
    after: str  # its log from the SIGTERM on
    log: str


def sigterm(proc: subprocess.Popen[bytes], log: Path, wait_s: float) -> Ended:
    """SIGTERM the service `proc` (started by service()) and wait for its exit; AssertionError with its log if it is
    still running `wait_s` seconds later."""
    name = str(proc.args[-1]).replace("_", "-")  # type: ignore[index]
    signalled = len(log.read_text(errors="replace"))
    proc.send_signal(signal.SIGTERM)
    began = time.monotonic()
    try:
        proc.wait(wait_s)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{name} still running {wait_s:g} s after SIGTERM: " + log.read_text()) from None
    seconds = time.monotonic() - began
    text = log.read_text(errors="replace")
    return Ended(name, proc.returncode, seconds, text[signalled:], text)


def sigterm_once_waiting(proc: subprocess.Popen[bytes], log: Path, wait_s: float, tries: int = 300) -> Ended:
    """sigterm() once the service says it is waiting for NATS (`tries` looks 0.1 s apart, 30 s by default);
    AssertionError if it never says so."""
    text = until(log, proc, "waiting for NATS at", tries)
    assert "waiting for NATS at" in text and proc.poll() is None, text
    return sigterm(proc, log, wait_s)


def stopped_cleanly(ended: Ended, shown: int = 0) -> None:
    """Exit 0, no traceback in the whole log, which says the service stopped while waiting for NATS. `shown`: how
    much of the log's end an assertion shows (0: all of it)."""
    text = ended.log[-shown:] if shown else ended.log
    assert ended.returncode == 0, text
    assert "Traceback" not in ended.log, text
    assert "stopped while waiting for NATS" in ended.log, text


async def send_undecodable(bus: Bus, subject: str, count: int) -> None:
    """`count` messages no service can decode, to `subject` (core NATS publishes, stored by its stream)."""
    for _ in range(count):
        await bus.nc.publish(subject, b"not an event")
    await bus.nc.flush()


async def publish_undecodable(url: str, subject: str, count: int) -> None:
    """send_undecodable on a connection of its own, the streams made first."""
    bus = await Bus.connect(url, "test/stop")
    try:
        await bus.ensure_streams()
        await send_undecodable(bus, subject, count)
    finally:
        await bus.close()


async def until_made(ask: Callable[[], Awaitable[object]], tries: int = 300) -> None:
    """Ask ask() every 0.1 s, at most `tries` times, until it answers (a consumer or stream made by a service)."""
    for _ in range(tries):
        try:
            await ask()
            return
        except Exception:  # noqa: BLE001 - not made yet
            await asyncio.sleep(0.1)
