"""`podtax export --csv/--parquet` unpacks the zip the analyzer's address answers (audit hS). A server there that
is not the analyzer (an HTML page with 200) ended the command in a BadZipFile traceback; and each file was
decompressed whole into memory first, so a small answer that expands a thousandfold (300 KB -> 300 MB: 666 MB
resident) could take all of it. Now: one line, exit 1; each file is streamed to disk; a damaged member leaves no
part file behind. A real HTTP server, the real CLI entry point."""

from __future__ import annotations

import io
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from podtax.cli.main import main

from tests.unit.fake_http import answering
from tests.unit.test_cli_hostile_api import _one_line


def _zip(name: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(name, data)
    return buf.getvalue()


def _export(body: bytes, folder: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    with answering(body) as url:
        monkeypatch.setenv("PODTAX_API_URL", url)
        return main(["export", "demo", "--csv", str(folder)])


def test_an_answer_that_is_not_a_zip_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert _export(b"<html>some other service</html>", tmp_path / "out", monkeypatch) == 1
    assert "is not a zip file" in _one_line(capsys)
    assert not (tmp_path / "out").exists()  # nothing made


def test_a_large_file_is_streamed_to_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    size = 64 << 20
    body = _zip("runs.csv", b"\0" * size)  # ~64 KB on the wire
    tracemalloc.start()
    try:
        assert _export(body, tmp_path / "out", monkeypatch) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (tmp_path / "out" / "runs.csv").stat().st_size == size
    assert peak < 16 << 20, f"{peak / 2**20:.0f} MiB held for a {size >> 20} MiB file"


def test_a_damaged_member_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    good = _zip("runs.csv", b"run_id,value\n" * 1000)
    start = good.index(b"PK\x01\x02")  # flip a byte of the compressed data, before the directory
    damaged = good[:start // 2] + bytes([good[start // 2] ^ 0xFF]) + good[start // 2 + 1:]
    assert _export(damaged, tmp_path / "out", monkeypatch) == 1
    assert "damaged" in _one_line(capsys)
    assert list((tmp_path / "out").iterdir()) == []
