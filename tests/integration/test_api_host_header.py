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


def _start(tmp_path: Path, nats_url: str, port: int, **settings: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    env.update(PODTAX_NATS_URL=nats_url, PODTAX_ANALYZER_DB=str(tmp_path / "podtax.duckdb"), PODTAX_LOG_FORMAT="text",
               PODTAX_ANALYZER_PORT=str(port), **settings)
    with open(tmp_path / "analyzer.log", "wb") as log:
        return subprocess.Popen([sys.executable, "-m", "podtax_analyzer"], env=env, stderr=log)


def test_an_analyzer_bound_wider_answers_only_to_its_allowed_hosts(nats_url: str, tmp_path: Path) -> None:
    """Bound to 0.0.0.0 (the compose file, the manifests) it answered any Host; PODTAX_ANALYZER_ALLOWED_HOSTS now
    lists the names it serves (loopback ones always), others get 400 saying which setting to change; /healthz
    answers any name (a cluster's probes name the pod's address)."""
    port = natsserver.free_port()
    proc = _start(tmp_path, nats_url, port, PODTAX_ANALYZER_HOST="0.0.0.0",
                  PODTAX_ANALYZER_ALLOWED_HOSTS="podtax.example.org, 10.0.0.5,[fd00::1]")
    try:
        wait_answering(f"http://127.0.0.1:{port}/healthz", proc, tmp_path / "analyzer.log")
        for name in (f"podtax.example.org:{port}", "PODTAX.example.org.", "10.0.0.5", f"[fd00::1]:{port}",
                     f"127.0.0.1:{port}", "localhost"):
            assert _answers(port, name) == 200, name
        for name in (f"evil.example:{port}", "podtax.example.org.evil.example", "10.0.0.6"):
            refused = httpx.get(f"http://127.0.0.1:{port}/api/campaigns", headers={"Host": name}, timeout=10)
            assert refused.status_code == 400, name
            assert "PODTAX_ANALYZER_ALLOWED_HOSTS" in refused.json()["detail"], refused.text
        probe = httpx.get(f"http://127.0.0.1:{port}/healthz", headers={"Host": f"10.1.2.3:{port}"}, timeout=10)
        assert probe.status_code == 200, probe.text
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.mark.parametrize("value", ["http://podtax.example.org", "podtax.example.org:8700", "a b", "x/api"])
def test_a_bad_allowed_host_stops_the_analyzer_at_start(value: str, nats_url: str, tmp_path: Path) -> None:
    proc = _start(tmp_path, nats_url, natsserver.free_port(), PODTAX_ANALYZER_ALLOWED_HOSTS=f"ok.example,{value}")
    assert proc.wait(60) == 2
    said = (tmp_path / "analyzer.log").read_text().strip().splitlines()
    assert len(said) == 1 and "Traceback" not in said[0], said
    assert said[0].startswith("podtax-analyzer: PODTAX_ANALYZER_ALLOWED_HOSTS: ") and repr(value) in said[0], said
    assert "without scheme, port or path" in said[0], said
