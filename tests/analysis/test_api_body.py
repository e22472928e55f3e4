"""POST /api/reparse takes no body, and says so (422): but it read the whole body into memory first, so one
request with the token and a 200 MB body held 200 MB more in the analyzer (audit hS: 124 -> 253 MB resident).
It now stops at the body's first chunk. A real uvicorn server over a real socket, the real app."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import tracemalloc
from pathlib import Path

import uvicorn
from podtax import natsserver
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

TOKEN = "t0ken-for-tests-0123456789"


def _post(port: int, size: int) -> bytes:
    """POST /api/reparse with the token and a body of `size` bytes, sent in 1 MiB pieces; the answer's head."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(f"POST /api/reparse HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                     f"Content-Length: {size}\r\n\r\n".encode())
        piece = b"x" * (1 << 20)
        with contextlib.suppress(OSError):  # the server may answer and close before the body is all sent
            for _ in range(size // len(piece)):
                conn.sendall(piece)
        return conn.recv(200)


def test_a_body_sent_to_reparse_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    store = Store(tmp_path / "api.duckdb")
    port = natsserver.free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(store, TOKEN), host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            assert thread.is_alive(), "the server did not start"
            time.sleep(0.05)
        tracemalloc.start()
        try:
            head = _post(port, 64 << 20)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    finally:
        server.should_exit = True
        thread.join(30)
        store.close()
    assert head.startswith(b"HTTP/1.1 422"), head
    assert peak < 16 << 20, f"{peak / 2**20:.0f} MiB held for a 64 MiB body"
