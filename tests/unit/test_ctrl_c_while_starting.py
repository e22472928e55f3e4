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


def _volumes_interrupted(script: list[str], tmp_path: Path) -> tuple[int, str]:
    """`<script> cleanup` against a Kubernetes API that accepts the connection and never answers; SIGINT once the
    command has connected (the accept): it is running its own code by then."""
    import socket

    with socket.create_server(("127.0.0.1", 0)) as server:
        (tmp_path / "k.yaml").write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
            f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{server.getsockname()[1]}'}}}}]\n"
            "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n")
        argv = [*script, "cleanup", "--backend", "kubernetes", "--kubeconfig", str(tmp_path / "k.yaml")]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                                env={**os.environ, "PODTAX_DATA_DIR": str(tmp_path)})
        conn, _ = server.accept()
        with conn:
            proc.send_signal(signal.SIGINT)
            err = proc.communicate(timeout=120)[1]
    return proc.returncode, err


def test_a_whole_command_run_by_its_service_script_takes_ctrl_c_as_podtax_does(tmp_path: Path) -> None:
    """`podtax-runner volumes ...` runs the command `podtax volumes ...` runs, but install()'s handler stayed in place
    for all of it (`podtax-runner: interrupted` from wherever the signal landed, asyncio's and the command's own
    handling of Ctrl-C bypassed) where podtax's run() gives Python's back (fx4, session 54; review r4 of f5c2f18c)."""
    podtax = _volumes_interrupted([str(BIN / "podtax"), "volumes"], tmp_path)
    runner = _volumes_interrupted([str(BIN / "podtax-runner"), "volumes"], tmp_path)
    assert podtax[0] == 130 and "Traceback" not in podtax[1], podtax
    assert runner == podtax
