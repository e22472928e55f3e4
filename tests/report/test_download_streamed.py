"""`podtax export` and `podtax report --html` stream the analyzer's answer into a file beside the target, renamed
over it only once whole (a 1,000,000-result campaign's page is ~180 MB, which the CLI held in memory): a download
cut mid-way leaves the previous file as it was and says so in one line, exit 1; a whole one writes the answer's
bytes. Through main(argv) against the real analyzer app (uvicorn), its page or zip replaced by known bytes or made
to fail mid-way; the workbook, which the app sends in one piece, from a real server that closes mid-body."""

from __future__ import annotations

import io
import os
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from podtax.cli import report_simulation
from podtax.cli.main import main
from podtax_analyzer import api_report, exports

from tests.unit.fake_http import Quiet, serving

PAGE = b"<!DOCTYPE html><html><body>" + os.urandom(300_000).hex().encode() + b"</body></html>\n"


def _zipped() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("runs.csv", "run_id\n" + "r\n" * 100_000)
        zf.writestr("comparisons.csv", "metric\nm\n")
    return out.getvalue()


@pytest.fixture
def answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The served app's page and zip are PAGE and _zipped(), sent in CHUNKs."""
    monkeypatch.setattr(api_report, "html_file", lambda data, change: (io.BytesIO(PAGE), len(PAGE)))
    monkeypatch.setattr(api_report, "zip_file", lambda con, report, fmt: (io.BytesIO(_zipped()), len(_zipped())))


@pytest.fixture
def cut(monkeypatch: pytest.MonkeyPatch, answers: None) -> None:
    """The app fails after sending its first chunk (the connection then closes before the body's length)."""
    def first_then_fail(file: io.BytesIO) -> Iterator[bytes]:
        yield file.read(exports.CHUNK)
        raise RuntimeError("the analyzer failed mid-way")

    monkeypatch.setattr(api_report, "chunks", first_then_fail)


def _one_error(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in captured.err + captured.out, captured.err
    return lines[0]


def test_a_whole_page_is_written_byte_for_byte(served, answers, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    out.write_text("old")
    assert main(["report", "synthetic", "--html", str(out), "--api", served.url]) == 0
    assert out.read_bytes() == PAGE and [p.name for p in tmp_path.iterdir()] == ["r.html"]


def test_a_whole_zip_is_unpacked(served, answers, tmp_path: Path) -> None:
    out = tmp_path / "tables"
    assert main(["export", "synthetic", "--csv", str(out), "--api", served.url]) == 0
    want = zipfile.ZipFile(io.BytesIO(_zipped()))
    assert sorted(p.name for p in out.iterdir()) == sorted(want.namelist())
    assert all((out / name).read_bytes() == want.read(name) for name in want.namelist())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tables"], "no spool left beside it"


def test_an_existing_folder_needs_no_room_in_its_parent(served, answers, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`--csv DIR` for a DIR the user may write in a parent they may not (`--csv /tmp`, `--csv ~`): the zip was
    spooled in the parent, 'cannot write DIR: Permission denied' (rAll, as uid 65534). The parent's refusal is
    stood in for by refusing a spool there (the tests run as root, who may write anywhere)."""
    real = tempfile.TemporaryFile
    out = tmp_path / "tables"
    out.mkdir()

    def no_room_in_the_parent(*args, dir=None, **kwargs):  # noqa: A002 - TemporaryFile's own keyword
        if dir is not None and Path(dir).resolve() == tmp_path.resolve():
            raise PermissionError(13, "Permission denied")
        return real(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "TemporaryFile", no_room_in_the_parent)
    assert main(["export", "synthetic", "--csv", str(out), "--api", served.url]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(zipfile.ZipFile(io.BytesIO(_zipped())).namelist())


def test_a_page_cut_mid_way_keeps_the_previous_file(served, cut, tmp_path: Path, capsys) -> None:
    out = tmp_path / "r.html"
    out.write_text("the previous report")
    capsys.readouterr()
    assert main(["report", "synthetic", "--html", str(out), "--api", served.url]) == 1
    line = _one_error(capsys)
    assert "stopped answering mid-request" in line and line.endswith(
        f"{out} is left as it was; run the command again once it answers"), line
    assert out.read_text() == "the previous report" and [p.name for p in tmp_path.iterdir()] == ["r.html"]


def test_a_zip_cut_mid_way_writes_no_table(served, cut, tmp_path: Path, capsys) -> None:
    out = tmp_path / "tables"
    out.mkdir()
    (out / "runs.csv").write_text("old")
    capsys.readouterr()
    assert main(["export", "synthetic", "--csv", str(out), "--api", served.url]) == 1
    assert _one_error(capsys).endswith(f"{out} is left as it was; run the command again once it answers")
    assert [p.name for p in out.iterdir()] == ["runs.csv"] and (out / "runs.csv").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["tables"]


class _HalfBody(Quiet):
    """Says 100,000 bytes, sends 1,000 and closes the connection."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("content-length", "100000")
        self.end_headers()
        self.wfile.write(b"x" * 1000)


def test_a_workbook_cut_mid_way_keeps_the_previous_file(tmp_path: Path, capsys) -> None:
    out = tmp_path / "book.xlsx"
    out.write_bytes(b"the previous book")
    with serving(_HalfBody) as url:
        capsys.readouterr()
        assert main(["export", "synthetic", "--xlsx", str(out), "--api", url]) == 1
    line = _one_error(capsys)
    assert "stopped answering mid-request" in line and f"{out} is left as it was" in line, line
    assert out.read_bytes() == b"the previous book" and [p.name for p in tmp_path.iterdir()] == ["book.xlsx"]


@pytest.mark.parametrize("page", [PAGE, b"<html>no end", b"</body>" + b"x" * 300, b"a</body>b</body>c"])
def test_the_simulation_goes_before_the_last_body_end(page: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    """insert_into, reading only the page's tail (TAIL: 64 here, past which it reads the whole page), puts the
    fragment where the whole page's last </body> is, or at its end."""
    monkeypatch.setattr(report_simulation, "TAIL", 64)
    at = page.rfind(b"</body>")
    want = page + b"<s>" if at < 0 else page[:at] + b"<s>" + page[at:]
    file = io.BytesIO(page)
    report_simulation.insert_into(file, "<s>")
    assert file.getvalue() == want
