"""A streamed answer (/api/runs, /api/results, the phases: rowstream) holds the store's reads lock from its
statement to its last row (reads.Cursor.stream). A client that went mid-answer (disconnected, or read one chunk and
closed like `curl | head`) left it held: Starlette cancels the streaming task and never closed the sync generator,
so the lock went only when the garbage collector freed it (15-20 s, review r3), and a flush skipped its eviction
meanwhile. A client that stops reading with its socket open held it as long as it stayed; the reopen after a
storage fault then waited for it without bound, and the lock, preferring its writer, held every new read back
behind that wait: /healthz hung and storing results stopped. A real DuckDB file (100,000 runs, more than the
sockets buffer), the real app served by uvicorn, real sockets."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from podtax_analyzer import rowstream
from podtax_analyzer import store as store_module
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import serve

RUNS = 100_000
DEADLINE_S = 30.0  # a bound on waiting for a condition, never an expected time


@dataclass
class Served:
    store: Store
    url: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    store = Store(tmp_path_factory.mktemp("release") / "podtax.duckdb")
    store.cursor().execute("""
        INSERT INTO runs (run_id, event_id, campaign, cluster, node, env, test, params, params_key, attempt, sequence,
                          status, flags, started_at, stored_at, failure_detail)
        SELECT 'r' || i, 'e' || i, 'c1', 'k', 'n1', 'pod', 't', '{}', 'p', 1, i, 'failed', [], now(), now(),
               repeat('x', 400) FROM range(?) t(i)""", [RUNS])
    try:
        with serve(create_app(store)) as url:
            yield Served(store, url)
    finally:
        store.close()


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {DEADLINE_S} s"
        time.sleep(0.02)


def _writer_gets_it(store: Store) -> bool:
    with store._reads.writing(timeout=0.05) as free:
        return free


def _stalled_client(url: str) -> socket.socket:
    """A client that asks for every run, takes the answer's first bytes and reads no more; once the answer
    holds the reads lock (a writer no longer gets it)."""
    where = urlsplit(url)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((where.hostname, where.port))
    sock.sendall(f"GET /api/runs?limit={RUNS} HTTP/1.1\r\nHost: {where.hostname}\r\n\r\n".encode())
    assert sock.recv(64).startswith(b"HTTP/1.1 200")
    return sock


@pytest.fixture
def no_stall_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rowstream, "SEND_WAIT_S", 3600.0)


def test_a_client_gone_mid_answer_releases_the_reads_lock(served: Served, no_stall_cap: None) -> None:
    with httpx.stream("GET", f"{served.url}/api/runs", params={"limit": RUNS}, timeout=60) as resp:
        assert resp.status_code == 200
        chunks = resp.iter_bytes()  # kept: a generator dropped closes the response
        assert next(chunks).startswith(b"[")
        _until(lambda: not _writer_gets_it(served.store), "the answer holding the reads lock")
    _until(lambda: _writer_gets_it(served.store), "a writer getting the lock after the client closed mid-answer")


def test_a_stalled_client_that_disconnects_releases_the_reads_lock(served: Served, no_stall_cap: None) -> None:
    sock = _stalled_client(served.url)
    try:
        _until(lambda: not _writer_gets_it(served.store), "the answer holding the reads lock")
    finally:
        sock.close()
    _until(lambda: _writer_gets_it(served.store), "a writer getting the lock after the client disconnected")
    assert httpx.get(f"{served.url}/api/runs", params={"limit": 1}, timeout=60).status_code == 200


def test_a_client_that_stops_reading_is_dropped(served: Served, monkeypatch: pytest.MonkeyPatch,
                                                caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(rowstream, "SEND_WAIT_S", 0.5)
    sock = _stalled_client(served.url)
    try:
        _until(lambda: _writer_gets_it(served.store), "a writer getting the lock, the client still connected")
        sock.settimeout(DEADLINE_S)
        answered = b""
        while part := sock.recv(1 << 20):
            answered = answered[-16:] + part
        assert not answered.endswith(b"0\r\n\r\n"), "the answer was ended as if whole"
    finally:
        sock.close()
    assert "took no chunk of a streamed answer" in caplog.text


SLOW_RUNS = 2_000  # two batches of ~640 KB (400-char details)
SLOW_RATE = 256 * 1024  # bytes/s: a batch took the reader ~2.4 s to drain, a slice (rowstream.SLICE) ~0.3 s
SLOW_SEND_BUFFER = 16 * 1024  # a link's kernel send buffer, not loopback's MBs (a send waits for a third to drain)


def _read_steadily(url: str, rate: int) -> bytes:
    """Every run's answer, read steadily at no more than `rate` bytes/s, never pausing longer than that needs."""
    where = urlsplit(url)
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: the window it offers
        sock.connect((where.hostname, where.port))
        sock.sendall(f"GET /api/runs?limit={SLOW_RUNS} HTTP/1.1\r\nHost: {where.hostname}\r\n"
                     "Connection: close\r\n\r\n".encode())
        sock.settimeout(DEADLINE_S)
        answered, start = bytearray(), time.monotonic()
        while part := sock.recv(4096):
            answered += part
            ahead = len(answered) / rate - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(ahead)
    return bytes(answered)


def _dechunk(body: bytes) -> bytes:
    """An HTTP/1.1 chunked body's data; fails on a body cut before its last (empty) chunk."""
    data, at = bytearray(), 0
    while True:
        end = body.index(b"\r\n", at)
        size = int(body[at:end], 16)
        if size == 0:
            return bytes(data)
        data += body[end + 2:end + 2 + size]
        at = end + 2 + size + 2


def test_a_client_reading_slowly_but_steadily_gets_the_whole_answer(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The cap is on a client taking nothing, not on its rate: before, a whole batch was one send, which waited
    for it to drain, so a reader slower than a batch per SEND_WAIT_S was cut (30 s: ~23 KB/s, review r4)."""
    monkeypatch.setattr(rowstream, "SEND_WAIT_S", 1.5)
    store = Store(tmp_path / "podtax.duckdb")
    try:
        store.cursor().execute("""
            INSERT INTO runs (run_id, event_id, campaign, cluster, node, env, test, params, params_key, attempt,
                              sequence, status, flags, started_at, stored_at, failure_detail)
            SELECT 'r' || i, 'e' || i, 'c1', 'k', 'n1', 'pod', 't', '{}', 'p', 1, i, 'failed', [], now(), now(),
                   repeat('x', 400) FROM range(?) t(i)""", [SLOW_RUNS])
        with serve(create_app(store), send_buffer=SLOW_SEND_BUFFER) as url:
            answered = _read_steadily(url, SLOW_RATE)
    finally:
        store.close()
    head, _, body = answered.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and body.endswith(b"0\r\n\r\n"), "the answer was cut"
    assert sorted(r["run_id"] for r in json.loads(_dechunk(body))) == sorted(f"r{i}" for i in range(SLOW_RUNS))


def test_a_reopen_waits_for_a_stalled_answer_only_so_long(served: Served, no_stall_cap: None,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    """The reopen after DuckDB invalidated the file (Analyzer.handle_batch) gives up after REOPEN_WAIT_S, says
    so, and reopens at a later call; /healthz answers meanwhile."""
    store, lock = served.store, served.store._reads
    monkeypatch.setattr(store_module, "REOPEN_WAIT_S", 0.5)
    monkeypatch.setattr(store, "invalidated", lambda: True)
    caplog.set_level(logging.WARNING, logger="podtax.analyzer.store")
    sock = _stalled_client(served.url)
    reopened: list[bool] = []
    try:
        _until(lambda: not _writer_gets_it(store), "the answer holding the reads lock")
        reopen = threading.Thread(target=lambda: reopened.append(store.reopen_if_invalidated()), daemon=True)
        reopen.start()
        _until(lambda: lock._writer or not reopen.is_alive(), "the reopen waiting for the reads lock")
        health = httpx.get(f"{served.url}/healthz", timeout=DEADLINE_S)
        assert health.status_code == 200 and health.json()["status"] == "ok"
        _until(lambda: not reopen.is_alive(), "the reopen giving up")
    finally:
        sock.close()
    assert reopened == [False]
    assert "not opened again yet: a read still held it" in caplog.text
    _until(lambda: _writer_gets_it(store), "a writer getting the lock after the client disconnected")
    assert store.reopen_if_invalidated() is True
    assert httpx.get(f"{served.url}/api/runs", params={"limit": 1}, timeout=60).json()[0]["run_id"] == "r0"
