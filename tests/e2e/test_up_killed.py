"""`podtax up` killed (SIGKILL, the OOM killer): its children run in sessions of their own, and every one of them ran
on (hF, session 56): nats-server holding the port and the JetStream store, the analyzer the DuckDB file; `podtax up`
started again on the data dir was refused, '--nats-port N: 127.0.0.1:N is in use (by another program or another
podtax up); choose another port'. Now each child is sent SIGTERM when `up` dies (parentdeath.py; all at once,
nats-server included), and `up` starts again on the same data dir and ports."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from podtax import natsserver

from tests.conftest import wait_until_up
from tests.e2e.test_up import children_of
from tests.e2e.test_up_stdout_closed import alive


def test_the_children_of_a_killed_up_stop_and_up_starts_again(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    ports = ["--nats-port", str(natsserver.free_port()), "--api-port", str(natsserver.free_port())]

    def up(ready: Path) -> subprocess.Popen[str]:
        proc = subprocess.Popen([sys.executable, "-m", "podtax.cli.main", "up", "--data-dir", str(tmp_path / "data"),
                                 *ports, "--node", "up-node", "--ready-file", str(ready)],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        wait_until_up(proc, ready)
        return proc

    first = up(tmp_path / "ready1.json")
    logs = tmp_path / "data" / "logs"
    deadline = time.monotonic() + 60  # the services past their start: a runner whose reading of its state NATS
    while ("started: schedulerName" not in (logs / "scheduler.log").read_text()  # leaves unanswered (it stops with
           or "resumed " not in (logs / "runner.log").read_text()):  # up) ends in a traceback: another matter
        assert time.monotonic() < deadline, "the scheduler and the runner did not start"
        time.sleep(0.2)
    kids = children_of(first.pid)
    first.kill()
    first.communicate(timeout=60)
    try:
        assert len(kids) >= 6, "nats-server, analyzer, parser, runner, host agent, scheduler, the emulator"
        deadline = time.monotonic() + 60  # a hang guard: each stops as on up's SIGTERM
        while (left := [pid for pid in kids if alive(pid)]) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not left, [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in left]
        second = up(tmp_path / "ready2.json")
        second.send_signal(signal.SIGTERM)
        out, _ = second.communicate(timeout=60)
        assert second.returncode == 0, out
    finally:
        for pid in kids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    said = {log.name: log.read_text() for log in logs.glob("*.log")}
    assert not [name for name, text in said.items() if "Traceback" in text], said
