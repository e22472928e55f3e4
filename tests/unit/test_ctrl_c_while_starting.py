"""Ctrl-C while a command is still importing its modules (1-2 s on a busy machine, before any handler of its own
runs) says `<command>: interrupted` and exits 130, as a Ctrl-C once it runs does: it ended in a KeyboardInterrupt
traceback from the import machinery (helper hU, session 54).

The real console scripts run with PYTHONVERBOSE on a pipe of one page: once the import of podtax.cli (or of the
service's config) is written, the test stops reading, so the script blocks writing the next imports' lines, still
importing, when the SIGINT comes. No timing is involved."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
SCRIPTS = [  # console script, argv, a module it imports before its own handlers run
    ("podtax", ["campaign", "status", "x", "--follow"], "podtax.cli.campaign"),
    ("podtax-runner", [], "podtax.service"),
    ("podtax-analyzer", [], "podtax.service"),
]


def _interrupt_while_importing(script: str, argv: list[str], marker: str) -> tuple[int, str]:
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
    env = {**os.environ, "PYTHONVERBOSE": "1", "PODTAX_NATS_URL": "nats://127.0.0.1:9", "PODTAX_CLI_TIMEOUT": "5"}
    proc = subprocess.Popen([str(BIN / script), *argv], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=write_end, env=env, start_new_session=True)
    os.close(write_end)
    seen = b""
    with os.fdopen(read_end, "rb", buffering=0) as err:
        while f"import '{marker}'".encode() not in seen:
            chunk = err.read(4096)
            assert chunk, seen[-2000:].decode(errors="replace")
            seen += chunk
        os.killpg(proc.pid, signal.SIGINT)  # the script is blocked writing its import lines to the full pipe
        rest = err.read()
    status = proc.wait(timeout=60)
    return status, (seen + rest).decode(errors="replace")


@pytest.mark.parametrize(("script", "argv", "marker"), SCRIPTS, ids=[s[0] for s in SCRIPTS])
def test_ctrl_c_while_the_command_imports_is_one_line_and_status_130(script: str, argv: list[str],
                                                                     marker: str) -> None:
    status, err = _interrupt_while_importing(script, argv, marker)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    assert status == 130 and f"{script}: interrupted\n" in err, (status, err[-3000:])  # among the import lines
