"""The analyzer's /healthz reflects NATS (issue 12 item 8): 503 while NATS is unreachable, 200 again
once the server is back (the analyzer reconnects by itself)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
from podtax import natsserver

from tests.integration.harness import services


async def wait_health(port: int, want: tuple[int, str], timeout: float = 30) -> None:
    """Poll /healthz from a thread: the analyzer serves HTTP on this test's event loop."""
    deadline = asyncio.get_running_loop().time() + timeout
    while (got := await asyncio.to_thread(health, port)) != want:
        assert asyncio.get_running_loop().time() < deadline, f"/healthz is {got}, expected {want}"
        await asyncio.sleep(0.2)


def health(port: int) -> tuple[int, str] | None:
    try:
        r = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
        return r.status_code, r.json()["nats"]
    except (httpx.HTTPError, ValueError, KeyError):
        return None


async def test_healthz_says_503_while_nats_is_down(tmp_path: Path) -> None:
    server = natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log")
    port = natsserver.free_port()
    try:
        async with services(server.url, tmp_path) as s:
            await s.analyzer(port=port)
            await wait_health(port, (200, "connected"))
            server.stop()
            await wait_health(port, (503, "disconnected"))
            server = natsserver.start(tmp_path / "js", server.port, log_file=tmp_path / "nats.log")
            await wait_health(port, (200, "connected"))
    finally:
        server.stop()
