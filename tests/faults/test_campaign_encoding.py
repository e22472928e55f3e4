"""A campaign file that is not UTF-8 (audit hH), through `podtax campaign submit --dry-run`: a file saved as Latin-1
(`café` in a comment) was refused 'not UTF-8 text (invalid continuation byte at byte 5)', naming neither the line
nor the fix; a file saved by Windows PowerShell's `>` (UTF-16 with its byte-order mark, which YAML allows) was
refused the same way at byte 0. Now the first names its line and column and says to save the file as UTF-8, and
the second is read."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.cli.main import main

EXAMPLE = Path(__file__).parents[2] / "examples/campaigns/quick.yaml"


@pytest.fixture(autouse=True)
def _no_nats(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", "nats://127.0.0.1:9")  # nothing there: the dry run says nodes unchecked
    monkeypatch.setenv("PODTAX_CLI_TIMEOUT", "10")


def test_latin1_names_the_line_and_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = EXAMPLE.read_text().replace("timeout: 120", "timeout: 120  # caf\u00e9 au lait")
    path = tmp_path / "latin1.yaml"
    path.write_bytes(text.encode("latin-1"))
    line = text.splitlines().index("timeout: 120  # caf\u00e9 au lait") + 1
    assert main(["campaign", "submit", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{path}:{line}: not UTF-8 text (byte 0xE9 at column 20" in err, err
    assert "save the file as UTF-8" in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-8-sig", "utf-32", "utf-32-be"])
def test_a_byte_order_mark_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str], encoding: str) -> None:
    path = tmp_path / "bom.yaml"
    text = EXAMPLE.read_text()
    path.write_bytes(("\ufeff" + text).encode(encoding) if encoding.endswith("-be") else text.encode(encoding))
    assert main(["campaign", "submit", str(path), "--dry-run"]) == 0, capsys.readouterr().err
    assert "campaign quick is valid" in capsys.readouterr().out


def test_the_column_counts_characters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """UTF-8 letters before the bad byte on its line: the column counted their bytes (review r5 L6)."""
    text = EXAMPLE.read_text().replace("timeout: 120", "timeout: 120  # d\u00e9j\u00e0 \udce9")
    path = tmp_path / "mixed.yaml"
    path.write_bytes(text.encode("utf-8", errors="surrogateescape"))  # 'déjà' in UTF-8, then a Latin-1 é
    line = next(n for n, t in enumerate(text.splitlines(), 1) if t.startswith("timeout: 120  #"))
    assert main(["campaign", "submit", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{path}:{line}: not UTF-8 text (byte 0xE9 at column 22" in err, err


def test_a_bad_utf32_file_is_named_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """FF FE 00 00 starts UTF-32 little-endian: it was read as UTF-16 little-endian (review r5 L6)."""
    path = tmp_path / "bad32.yaml"
    path.write_bytes(b"\xff\xfe\x00\x00" + "name: x\n".encode("utf-32-le") + b"\x00\x00\x11\x00")
    assert main(["campaign", "submit", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert "not UTF-32 text after its UTF-32 byte-order mark" in err and "save the file as UTF-8" in err, err
