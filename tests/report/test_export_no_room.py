"""A full TMPDIR while the analyzer makes an export: /report/{c} (a page over exports.SPOOL goes to a temporary file)
and export.zip (DuckDB writes its CSV/Parquet files into a temporary folder, the zip goes to a temporary file)
answered a bare 500 'Internal Server Error'. Now 507 naming the folder and the fix, which `podtax report --html` and
`podtax export` print as one line, exit 1, the previous file kept. Tests cannot mount a tiny filesystem: _FullDisk and
_copy_on_full_disk below stand in for it."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import duckdb
import httpx
import pytest
from podtax.cli.main import main
from podtax_analyzer import exports

from tests.report.test_download_streamed import _one_error

_Spooled = tempfile.SpooledTemporaryFile


class _FullDisk(_Spooled):
    """A faithful stand-in for a spooled file in a TMPDIR whose disk is full: in memory up to max_size as ever, then
    moving its bytes to the file on disk fails as a write on a full disk does (OSError ENOSPC)."""

    def rollover(self) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _copy_on_full_disk(*args: object, **kwargs: object) -> None:
    """A faithful stand-in for DuckDB's COPY into a full TMPDIR: the IOException it raises there (its text)."""
    raise duckdb.IOException('IO Error: Could not write file "podtax-export-x/runs.csv": No space left on device')


def _said(error: str) -> str:
    return (f"no room for the export's temporary file in {tempfile.gettempdir()}: {error}; "
            "free space there or set TMPDIR to a folder with room")


ENOSPC = f"[Errno {errno.ENOSPC}] {os.strerror(errno.ENOSPC)}"
COPY = 'IO Error: Could not write file "podtax-export-x/runs.csv": No space left on device'


@pytest.fixture
def full(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exports, "SPOOL", 1)  # the synthetic campaign's page and zip are far under 1 MiB
    monkeypatch.setattr(tempfile, "SpooledTemporaryFile", _FullDisk)


@pytest.mark.parametrize("path", ["/report/synthetic", "/api/campaigns/synthetic/export.zip"])
def test_a_full_tmpdir_is_507_naming_it(served, full, path: str) -> None:
    resp = httpx.get(f"{served.url}{path}", timeout=120)
    assert resp.status_code == 507, resp.text  # before: 500 'Internal Server Error'
    assert resp.json() == {"detail": _said(ENOSPC)}


def test_duckdb_finding_tmpdir_full_is_507(served, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exports, "_copy", _copy_on_full_disk)
    resp = httpx.get(f"{served.url}/api/campaigns/synthetic/export.zip", params={"format": "parquet"}, timeout=120)
    assert resp.status_code == 507, resp.text  # before: 500 'Internal Server Error'
    assert resp.json() == {"detail": _said(COPY)}


def test_other_failures_stay_500(served, monkeypatch: pytest.MonkeyPatch) -> None:
    def locked(*args: object, **kwargs: object) -> None:
        raise duckdb.IOException("IO Error: Could not set lock on file")

    monkeypatch.setattr(exports, "_copy", locked)
    assert httpx.get(f"{served.url}/api/campaigns/synthetic/export.zip", timeout=120).status_code == 500


@pytest.mark.parametrize("command", [["report", "synthetic", "--html", "{out}"],
                                     ["export", "synthetic", "--csv", "{out}"]])
def test_the_cli_says_it_in_one_line(served, full, command: list[str], tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "old"
    argv = [arg.format(out=out) for arg in command]
    if "--html" in argv:
        out.write_text("old")
    assert main([*argv, "--api", served.url]) == 1
    assert _one_error(capsys) == f"error: the analyzer answered 507: {_said(ENOSPC)}"  # before: ... 500: Internal
    assert not out.exists() or out.read_text() == "old"
