"""Ctrl-C once a command runs says one line, `interrupted: <what was done / what to do>`, and exits 130 (hN, session
55): typer turns a KeyboardInterrupt into exit 130 without a word, so only `podtax import` and `campaign status
--follow`, which caught it themselves, said anything; `podtax report`, `compare`, `scores`, `results`, `campaign
status` and `simulate` (the scheduler package's command, in a child process) ended silently. Now the app runner
(main.run_app) says it for every command. A terminal's Ctrl-C goes to the whole foreground process group:
`simulate`'s child got it twice (its own and the one `podtax` forwards), and the second cut its line short with a
traceback (7 runs of 12). `campaign status` hung in 1 run of 8: nats-py's connect dropped the cancel and retried for
ever (fxN: Bus.connect cancels it until it stops; tests/unit/test_bus_connect_cancel.py makes that race certain).

The real `podtax` console script in a process group of its own, its analyzer (PODTAX_API_URL) or NATS
(PODTAX_NATS_URL) a listener that accepts and never answers (a server that hangs): the SIGINT goes to the group once
the command has connected and, for HTTP, sent its request, so it is running and waiting; no timing involved."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

COMMANDS = {  # the command, and whether it sends its request first (HTTP) or waits for the server's (NATS's INFO)
    "report": (["report", "c1"], True),
    "compare": (["compare", "c1", "c2"], True),
    "scores": (["scores"], True),
    "results": (["results"], True),
    "campaign status": (["campaign", "status", "c1"], False),
    "simulate": (["simulate", "--campaign", "c1", "--workload", "w.yaml"], True),  # the scheduler's, in a child
}
WORKLOAD = 'duration_s: 60\nclasses:\n  - {test: sysbench-cpu, params: "threads=1", rate_per_s: 1, runtime_s: 10}\n'


@pytest.mark.parametrize("name", list(COMMANDS))
def test_ctrl_c_once_running_says_one_line_and_exits_130(name: str, tmp_path: Path) -> None:
    argv, sends_first = COMMANDS[name]
    (tmp_path / "w.yaml").write_text(WORKLOAD)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}, "PODTAX_DATA_DIR": str(tmp_path),
               "PODTAX_API_URL": f"http://127.0.0.1:{listener.getsockname()[1]}",
               "PODTAX_NATS_URL": f"nats://127.0.0.1:{listener.getsockname()[1]}"}
        proc = subprocess.Popen([str(Path(sys.executable).parent / "podtax"), *argv], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path, start_new_session=True)
        try:
            listener.settimeout(60)
            conn, _ = listener.accept()  # the command runs: it connects to its server
            with conn:
                if sends_first:
                    conn.settimeout(60)
                    assert conn.recv(4096), "the command sent no request"  # and waits for the answer
                os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C
                _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    # before: exit 130, stderr empty
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert err.strip().splitlines() == [f"interrupted: `podtax {name}` stopped before it finished; run it again to "
                                        "finish it"], err
