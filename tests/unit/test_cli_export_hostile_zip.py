"""`podtax export --csv/--parquet` unpacks the zip the analyzer's address answers (audit hS). A server there that
is not the analyzer (an HTML page with 200) ended the command in a BadZipFile traceback; and each file was
decompressed whole into memory first, so a small answer that expands a thousandfold (300 KB -> 300 MB: 666 MB
resident) could take all of it. Now: one line, exit 1; each file is streamed to disk; a damaged member leaves no
part file behind. A real HTTP server, the real CLI entry point."""

from __future__ import annotations

import http.server
import io
import threading
import tracemalloc
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from podtax.cli.main import main

ANSWER: dict[str, bytes] = {}


class _Server(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = ANSWER["body"]
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    monkeypatch.setenv("PODTAX_API_URL", f"http://127.0.0.1:{srv.server_address[1]}")
    try:
        yield
    finally:
        srv.shutdown()


def _zip(name: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(name, data)
    return buf.getvalue()


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


def test_an_answer_that_is_not_a_zip_is_one_line(server: None, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    ANSWER["body"] = b"<html>some other service</html>"
    assert main(["export", "demo", "--csv", str(tmp_path / "out")]) == 1
    assert "is not a zip file" in _one_line(capsys)
    assert not (tmp_path / "out").exists()  # nothing made


def test_a_large_file_is_streamed_to_disk(server: None, tmp_path: Path) -> None:
    size = 64 << 20
    ANSWER["body"] = _zip("runs.csv", b"\0" * size)  # ~64 KB on the wire
    tracemalloc.start()
    try:
        assert main(["export", "demo", "--csv", str(tmp_path / "out")]) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (tmp_path / "out" / "runs.csv").stat().st_size == size
    assert peak < 16 << 20, f"{peak / 2**20:.0f} MiB held for a {size >> 20} MiB file"


def test_a_damaged_member_leaves_nothing_behind(server: None, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    good = _zip("runs.csv", b"run_id,value\n" * 1000)
    start = good.index(b"PK\x01\x02")  # flip a byte of the compressed data, before the directory
    ANSWER["body"] = good[:start // 2] + bytes([good[start // 2] ^ 0xFF]) + good[start // 2 + 1:]
    assert main(["export", "demo", "--csv", str(tmp_path / "out")]) == 1
    assert "damaged" in _one_line(capsys)
    assert list((tmp_path / "out").iterdir()) == []
