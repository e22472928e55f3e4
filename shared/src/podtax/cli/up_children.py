"""The children of `podtax up` (nats-server, the services, the emulators): starting, stopping and restarting
them, and waiting until the system answers."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from podtax import natsserver
from podtax.cli.common import fail, warn
from podtax.event_payloads import printable, printable_cut
from podtax.parentdeath import sigterm_with
from podtax.supervise import RestartPolicy

if TYPE_CHECKING:
    import httpx


@dataclass
class Child:
    name: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    started: float = field(default=0.0)
    policy: RestartPolicy = field(default_factory=RestartPolicy)
    due: float | None = None  # when a crashed child is started again (after its backoff)
    log_start: int = 0  # the log's size when this run of the child started (logs are appended to across runs)

    def start(self) -> None:
        self.log_start = log_size(self.log)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.argv, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True, preexec_fn=sigterm_with(os.getpid()))  # noqa: PLW1509
        self.started = time.monotonic()

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@dataclass
class NatsChild(Child):
    """The embedded nats-server, supervised like the services: restarted on the same port and store."""

    server: natsserver.NatsServer | None = None

    def start(self) -> None:
        assert self.server is not None
        self.log_start = log_size(self.log)
        self.server = natsserver.start(self.server.store_dir, self.server.port, log_file=self.log,
                                       config=self.server.config, own_session=self.server.own_session)
        self.proc = self.server.proc
        self.started = time.monotonic()


def supervise(children: list[Child], now: float) -> str | None:
    """Restart crashed children after their backoff; a message when one crashed too often (stop everything)."""
    for child in children:
        if child.due is not None:
            if now >= child.due:
                child.due = None
                try:
                    child.start()
                except SystemExit as exc:  # nats-server could not start again: try again after the backoff
                    warn(f"{child.name} did not start: {exc}")
                    child.proc = None
                    delay = child.policy.on_exit(now, child.started)
                    if delay is None:
                        return f"{child.name} failed {child.policy.describe()}; see {child.log}. Stopping."
                    child.due = now + delay
            continue
        if child.proc and child.proc.poll() is not None:
            code = child.proc.returncode
            # a child that refuses to go on says why last (a DuckDB file another process holds): the warning only
            # said to see its log (hF, session 56); not for a stop (0) or a signal, after which the last line is older
            said = f" ({why})" if code > 0 and (why := last_line(child.log, child.log_start)) else ""
            delay = child.policy.on_exit(now, child.started)
            if delay is None:
                return (f"{child.name} exited with {code}{said}: more than {child.policy.describe()}; "
                        f"see {child.log}. Stopping.")
            warn(f"{child.name} exited with {code}{said}; restarting in {delay:g} s (see {child.log})")
            child.due = now + delay
    return None


def check_port(option: str, port: int, host: str = "127.0.0.1") -> None:
    """Exit 2 naming `option` when `port` cannot be listened on (in use, or not allowed), before anything
    starts: the child that needs it would otherwise crash and be restarted for tens of seconds."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers do: TIME_WAIT is no owner
        try:
            probe.bind((host, port))
        except OSError as exc:
            why = "is in use (by another program or another podtax up)" if exc.errno == errno.EADDRINUSE \
                else f"cannot be listened on ({exc.strerror})"
            raise fail(f"{option} {port}: {host}:{port} {why}; choose another port", 2) from None


REASON_CHARS = 300  # a child's last line quoted as a reason is cut to this, with '…' (as offline.cannot_read cuts)


def log_size(log: Path) -> int:
    try:
        return log.stat().st_size
    except OSError:
        return 0


def last_line(log: Path, since: int = 0) -> str:
    """The last non-empty line of a child's log written after byte `since` (where its present run began: the log
    is appended to, and a run that said nothing was given the previous run's line, rF session 56), made printable
    and cut to REASON_CHARS with '…' (a 4,178-character warning was printed whole)."""
    try:
        with open(log, "rb") as f:
            f.seek(max(since, f.seek(0, os.SEEK_END) - 65536))
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return ""
    line = next((line.strip() for line in reversed(lines) if line.strip()), "")
    if line.startswith("{"):  # a JSON log record (PODTAX_LOG_FORMAT=json): its message
        with contextlib.suppress(ValueError, TypeError, KeyError):
            line = str(json.loads(line)["msg"])
    return printable(line) if len(printable(line)) <= REASON_CHARS else printable_cut(line, REASON_CHARS) + "…"


def wait_started(api_url: str, children: list[Child], timeout: float) -> tuple[str, int] | None:
    """Wait for the analyzer's API to answer; else what went wrong and the exit status. A child that exits with status 2
    (its settings or its files are wrong) is named with the reason it gave at once: restarting it cannot help, and
    `up` said only that the analyzer did not answer, 30 s later (audit). So is an analyzer whose /healthz says its
    storage is unavailable (a damaged DuckDB file), with that reason; another 503 (NATS disconnected) is waited
    out, and said at the end if it lasts."""
    import httpx

    logs = [c.log for c in children if c.name == "analyzer"]
    see = f"see {logs[0] if logs else 'its log'}"
    unhealthy = None  # what the analyzer's last 503 said (it answers, but is not healthy)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for child in children:
            if child.proc and child.proc.poll() == 2:
                return f"{child.name} did not start: {last_line(child.log, child.log_start)} (see {child.log})", 2
            if child.name == "analyzer" and child.proc and (code := child.proc.poll()) is not None:
                # nothing restarts it here (an unreachable PODTAX_NATS_URL: exit 3), so its API will not answer
                said = last_line(child.log, child.log_start)
                return f"the analyzer exited with {code} while starting: {said} ({see})", 1
        try:
            resp = httpx.get(f"{api_url}/healthz", timeout=1)
            if resp.status_code == 200:
                return None
            unhealthy = health_problem(resp)
        except httpx.HTTPError:
            pass
        if unhealthy and unhealthy.startswith("storage unavailable"):  # said at once: was 'did not answer', 30 s
            break  # later (audit: a damaged DuckDB file, which waiting cannot mend)
        time.sleep(0.2)
    if unhealthy:
        return f"the analyzer answers on {api_url}, but its /healthz says {unhealthy}; {see}", 1
    return f"the analyzer did not answer on {api_url}; {see}", 1


def health_problem(resp: httpx.Response) -> str | None:
    """What an answer of the analyzer's /healthz other than 200 says: its status and reason ('storage
    unavailable: storing to ... failed ...: the file is damaged ...'), else None (no /healthz body)."""
    try:
        body = resp.json()
        status = str(body["status"])
    except (ValueError, KeyError, TypeError):
        return None
    reason = body.get("storage") if status == "storage unavailable" else None
    return f"{status}: {reason}" if reason else status
