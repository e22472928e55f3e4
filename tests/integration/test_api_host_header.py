"""An analyzer listening on loopback (its default) answered any Host header: a web page the user opens can point
its own name at 127.0.0.1 (DNS rebinding) and read every result, report and export from the user's browser (reads
are open on loopback). It now answers only to a loopback Host (127.0.0.1, localhost, ::1, any port) when it
listens on loopback; bound beyond it (0.0.0.0 in the images) it answers to any name (Services, ingresses). The real
`podtax-analyzer` entry point (a child process), a real nats-server and DuckDB file (audit hS)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from podtax import natsserver

from tests.conftest import wait_answering


def _answers(port: int, host: str) -> int:
    return httpx.get(f"http://127.0.0.1:{port}/api/campaigns", headers={"Host": host}, timeout=10).status_code


@pytest.mark.parametrize(("bind", "evil"), [("127.0.0.1", 400), ("0.0.0.0", 200)])
def test_a_loopback_analyzer_answers_only_to_loopback_names(bind: str, evil: int, nats_url: str,
                                                            tmp_path: Path) -> None:
    port = natsserver.free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    env.update(PODTAX_NATS_URL=nats_url, PODTAX_ANALYZER_DB=str(tmp_path / "podtax.duckdb"), PODTAX_LOG_FORMAT="text",
               PODTAX_ANALYZER_PORT=str(port), PODTAX_ANALYZER_HOST=bind)
    with open(tmp_path / "analyzer.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "podtax_analyzer"], env=env, stderr=log)
    try:
        wait_answering(f"http://127.0.0.1:{port}/healthz", proc, tmp_path / "analyzer.log")
        for name in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", f"[::1]:{port}"):
            assert _answers(port, name) == 200, name
        assert _answers(port, f"evil.example:{port}") == evil
        assert _answers(port, "127.0.0.1.evil.example") == evil
    finally:
        proc.terminate()
        proc.wait(30)
