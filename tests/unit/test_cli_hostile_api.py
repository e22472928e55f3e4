"""Commands that ask the analyzer's HTTP API, given an address that is not a URL or a server that is not
the analyzer: one line naming the setting to fix, never a traceback (through `main`, the real entry point)."""

from __future__ import annotations

import http.server
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from podtax.cli.main import main

from tests.unit.fake_http import serving


class _NotTheAnalyzer(http.server.BaseHTTPRequestHandler):
    """A web server that answers every GET with 200 and a page, every POST with 500 and a page."""

    def _answer(self, status: int) -> None:
        body = b"<html>some other service</html>"
        self.send_response(status)
        self.send_header("content-type", "application/json")  # even claiming JSON: the body decides
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._answer(200)

    def do_POST(self) -> None:  # noqa: N802
        self._answer(500)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def other_server() -> Iterator[str]:
    with serving(_NotTheAnalyzer) as url:
        yield url


COMMANDS = [
    ["results"],
    ["reparse"],
    ["scores"],
    ["report", "demo"],
    ["compare", "a", "b"],
    ["export", "demo", "--xlsx", "{tmp}/x.xlsx"],
    ["report", "demo", "--html", "{tmp}/x.html"],
]


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(a[:2]) for a in COMMANDS])
def test_an_address_that_is_not_a_url_is_one_line_and_exit_2(argv: list[str], tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_API_URL", "http://[::1")  # httpx.InvalidURL, which is no httpx.HTTPError
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    line = _one_line(capsys)
    assert "PODTAX_API_URL 'http://[::1' is not an http(s) URL with a valid port" in line


@pytest.mark.parametrize("argv", [["report", "demo"], ["compare", "a", "b"], ["results"], ["scores"]],
                         ids=["report", "compare", "results", "scores"])
def test_a_server_that_is_not_the_analyzer_is_named(argv: list[str], other_server: str,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_API_URL", other_server)
    assert main(argv) == 1
    line = _one_line(capsys)
    assert f"the server at {other_server} answered HTTP 200 without JSON; is it the analyzer?" in line


def test_an_error_page_instead_of_json_is_quoted(other_server: str, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_API_URL", other_server)
    assert main(["reparse"]) == 1
    assert "POST /api/reparse: 500 <html>some other service</html>" in _one_line(capsys)


NOT_REGULAR = "exists and is not a regular file (a symbolic link, device, FIFO or socket); give another file name"
WRITES = [  # argv (the target last), a fragment of the one line
    (["export", "demo", "--xlsx", "{tmp}/afile/x.xlsx"], "afile is a file, not a folder"),
    (["export", "demo", "--xlsx", "/proc/podtax-x.xlsx"], "cannot write /proc/podtax-x.xlsx"),
    (["export", "demo", "--xlsx", "{tmp}"], "is a folder; give a file name"),
    (["export", "demo", "--xlsx", "{tmp}/fifo"], "fifo " + NOT_REGULAR),
    (["export", "demo", "--xlsx", "{tmp}/link"], "link " + NOT_REGULAR),
    (["export", "demo", "--xlsx", "{tmp}/missing/x.xlsx"], "the folder {tmp}/missing does not exist; create it"),
    (["export", "demo", "--csv", "{tmp}/afile"], "afile exists and is not a folder; give a folder"),
    (["export", "demo", "--csv", "{tmp}/fifo"], "fifo exists and is not a folder; give a folder"),
    (["export", "demo", "--parquet", "{tmp}/afile/sub"], "afile is a file, not a folder"),
    (["export", "demo", "--parquet", "{tmp}/missing/sub"], "the folder {tmp}/missing does not exist; create it"),
    (["export", "demo", "--csv", "/proc/podtax-out"], "cannot write /proc/podtax-out"),
    (["report", "demo", "--html", "{tmp}/afile/x.html"], "afile is a file, not a folder"),
    (["report", "demo", "--html", "/proc/podtax-x.html"], "cannot write /proc/podtax-x.html"),
    (["report", "demo", "--html", "{tmp}/fifo"], "fifo " + NOT_REGULAR),
    (["report", "demo", "--html", "{tmp}/link"], "link " + NOT_REGULAR),
    (["report", "demo", "--html", "{tmp}/missing/x.html"], "the folder {tmp}/missing does not exist; create it"),
]


@pytest.mark.parametrize(("argv", "fragment"), WRITES, ids=[" ".join(a[2:]) for a, _ in WRITES])
def test_a_target_that_cannot_be_written_is_refused_before_asking_the_analyzer(
        argv: list[str], fragment: str, other_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "afile").write_text("x")
    os.mkfifo(tmp_path / "fifo")  # not a regular file, safe to name (a device would be written to)
    (tmp_path / "link").symlink_to(tmp_path / "afile")  # the rename used to replace the link itself
    before = sorted(p.name for p in tmp_path.iterdir())
    monkeypatch.setenv("PODTAX_API_URL", other_server)  # answers anything: only the target can be wrong
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    line = _one_line(capsys)
    assert fragment.format(tmp=tmp_path) in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing made, nothing replaced
    assert (tmp_path / "link").is_symlink() and (tmp_path / "afile").read_text() == "x"


def test_a_regular_file_is_replaced_as_the_help_says(other_server: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "x.html"
    target.write_text("old")
    monkeypatch.setenv("PODTAX_API_URL", other_server)
    assert main(["report", "demo", "--html", str(target)]) == 0
    assert target.read_text() == "<html>some other service</html>"
    assert main(["report", "--help"]) == 0
    assert "a regular file there is replaced" in " ".join(capsys.readouterr().out.replace("│", " ").split())


@pytest.mark.parametrize("data_dir", ["{tmp}/afile", "{tmp}/afile/sub", "/proc/podtax-data"])
def test_up_with_a_data_dir_it_cannot_create_is_one_line(data_dir: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "afile").write_text("x")
    assert main(["up", "--data-dir", data_dir.format(tmp=tmp_path)]) == 2
    line = _one_line(capsys)
    assert f"--data-dir {data_dir.format(tmp=tmp_path)}: cannot create" in line and "PODTAX_DATA_DIR" in line
