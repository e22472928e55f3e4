"""`podtax export CAMPAIGN --xlsx FILE | --csv DIR | --parquet DIR`, and the HTTP fetch that
`podtax report --html` and `podtax compare` share.

The files are made by the analyzer (its /api/campaigns/{c}/export.* routes) and fetched over HTTP:
the CLI is part of `shared/`, which must not import a service, and the analyzer is the one place
statistics are computed.
"""

from __future__ import annotations

import shutil
import stat
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import IO, Annotated, Any
from urllib.parse import quote

import httpx
import typer

from podtax.cli.common import (
    API_HELP,
    THRESHOLD_HELP,
    a_path,
    api_headers,
    api_option,
    api_url,
    campaign_name,
    fail,
    practical_threshold,
    unreachable,
)
from podtax.cli.waiting import waiting

TIMEOUT = 600.0


def fetch(path: str, params: dict[str, Any] | None = None, *, api: str | None = None) -> httpx.Response:
    """GET ``path`` from the analyzer's API; errors become one clear line and exit 1."""
    base = api_url(api).rstrip("/")
    try:
        with waiting("waiting for the analyzer"):  # short: a wrapped line is not rewritten in place
            resp = httpx.get(f"{base}{path}", params=params, headers=api_headers(base), timeout=TIMEOUT)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise unreachable(base, exc) from None
    _refuse(resp, base)
    return resp


def _refuse(resp: httpx.Response, base: str) -> None:
    """Exit 1 with one line for an answer that is an error (404: the analyzer's detail, such as no campaign; 507:
    its detail, the full folder of its temporary files)."""
    if resp.status_code < 400:
        return
    try:
        detail = resp.json().get("detail")
    except (ValueError, AttributeError):
        detail = None
    if resp.status_code == 404:
        raise fail(f"{detail or 'not found'} (asked the analyzer at {base})")
    if isinstance(detail, str):
        raise fail(f"the analyzer answered {resp.status_code}: {detail}")
    raise fail(f"the analyzer answered {resp.status_code}: {resp.text[:500]}")


def fetch_into(out: IO[bytes], path: str, params: dict[str, Any], *, api: str | None, kept: Path) -> None:
    """GET ``path`` as `fetch`, its body written to ``out`` chunk by chunk as it comes (a 1,000,000-result
    campaign's page is ~180 MB: never held whole). An answer cut short (the analyzer stopped or failed mid-way)
    is one line saying ``kept`` was not touched, exit 1."""
    base = api_url(api).rstrip("/")
    try:
        with waiting("waiting for the analyzer"), httpx.stream(
                "GET", f"{base}{path}", params=params, headers=api_headers(base), timeout=TIMEOUT) as resp:
            if resp.status_code >= 400:
                resp.read()
                _refuse(resp, base)
            for chunk in resp.iter_bytes():
                out.write(chunk)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise unreachable(base, exc, again=f"{kept} is left as it was; run the command again once it answers"
                          ) from None


def download(path: str, params: dict[str, Any], target: Path, *, api: str | None,
             then: Callable[[IO[bytes]], None] | None = None) -> None:
    """Stream the analyzer's answer to ``path`` into a file beside ``target``, renamed over it only once whole:
    a download that fails or is cut short leaves ``target`` as it was (a file there before is kept). ``then``:
    called with that file, whole, before the rename (it may rewrite it)."""
    writable(target)
    tmp = _part(target)
    try:
        with tmp.open("w+b") as out:
            fetch_into(out, path, params, api=api, kept=target)
            if then is not None:
                then(out)
        tmp.replace(target)
    except OSError as exc:
        raise fail(f"cannot write {target}: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


def campaign_path(campaign: str, suffix: str) -> str:
    return f"/api/campaigns/{quote(campaign, safe='')}/{suffix}"


def _part(path: Path) -> Path:
    return path.with_name(f".{path.name}.part")


def _folder_exists(folder: Path, target: Path) -> None:
    """Exit 2 unless `folder` is an existing folder: nothing is created outside it (a typo in a path)."""
    if folder.is_dir():
        return
    blocker = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise fail(f"cannot write {target}: {blocker} is a file, not a folder; choose another path", code=2)
    raise fail(f"cannot write {target}: the folder {folder} does not exist; create it first or choose another path",
               code=2)


def writable(path: Path, folder: bool = False) -> None:
    """Refuse a target that cannot or must not be written (exit 2), before the analyzer spends minutes making
    its content. A file target is a new name or a regular file (then replaced); a folder, symbolic link,
    device or FIFO there is refused. A folder target (--csv, --parquet) is a folder, or a new name that is
    made. Either way its folder must exist: nothing is made elsewhere. A read-only or pseudo file system is
    found by writing a probe."""
    try:
        mode = path.lstat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        _folder_exists(path.parent, path)
        mode = None
    except OSError as exc:
        raise fail(f"cannot write {path}: {exc.strerror or exc}; choose another path", code=2) from None
    if folder and mode is not None and not path.is_dir():
        raise fail(f"{path} exists and is not a folder; give a folder", code=2)
    if not folder and mode is not None and stat.S_ISDIR(mode):
        raise fail(f"{path} is a folder; give a file name", code=2)
    if not folder and mode is not None and not stat.S_ISREG(mode):
        raise fail(f"{path} exists and is not a regular file (a symbolic link, device, FIFO or socket); give "
                   f"another file name", code=2)
    probe = _part(path / "probe" if folder and mode is not None else path)
    try:
        probe.unlink(missing_ok=True)
        probe.touch(exist_ok=False)
        probe.unlink()
    except OSError as exc:
        raise fail(f"cannot write {path}: {exc.strerror or exc}; choose another path", code=2) from None


def write_file(path: Path, content: bytes | IO[bytes]) -> None:
    """Write next to the target, then rename, so a failure never leaves half a file. `content`: bytes, or a
    stream copied in chunks (a zip member: never decompressed whole into memory)."""
    writable(path)
    tmp = _part(path)
    try:
        if isinstance(content, bytes):
            tmp.write_bytes(content)
        else:
            with tmp.open("wb") as out:
                shutil.copyfileobj(content, out)
        tmp.replace(path)
    except OSError as exc:
        raise fail(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


def unpack(content: IO[bytes], folder: Path) -> list[Path]:
    """Unpack the analyzer's flat zip into ``folder`` (made if missing, in an existing folder); names with a
    folder part are refused, and so is any name that is already there as something else than a regular file
    (before anything is written)."""
    writable(folder, folder=True)
    try:
        zf = zipfile.ZipFile(content)
    except zipfile.BadZipFile:  # a web server there that is not the analyzer
        raise fail("the analyzer's answer is not a zip file; is PODTAX_API_URL (or --api) the analyzer?") from None
    with zf:
        names = zf.namelist()
        for name in names:
            if PurePosixPath(name).name != name or name.startswith("."):
                raise fail(f"the analyzer's export holds an unexpected name {name!r}; nothing written")
        folder.mkdir(exist_ok=True)
        for name in names:
            writable(folder / name)
        try:
            for name in names:
                with zf.open(name) as member:
                    write_file(folder / name, member)
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise fail(f"the analyzer's export is damaged ({exc}); its files written before are kept") from None
    return [folder / name for name in names]


def export(
    campaign: Annotated[str, typer.Argument(help="Campaign name.", callback=campaign_name)],
    # parser=a_path: an empty path is refused, where typer made it ".", the current folder
    xlsx: Annotated[Path | None, typer.Option("--xlsx", parser=a_path, metavar="<path>",
                                              help="Write the Excel workbook to this file, in an existing folder (a "
                                                   "regular file there is replaced).")] = None,
    csv: Annotated[Path | None, typer.Option("--csv", parser=a_path, metavar="<path>",
                                             help="Write runs, metrics, phases and comparisons as CSV files into this "
                                                  "folder (made if missing, in an existing folder; files of the same "
                                                  "names are replaced).")] = None,
    parquet: Annotated[Path | None, typer.Option("--parquet", parser=a_path, metavar="<path>",
                                                 help="The same tables as Parquet files (as --csv).")] = None,
    api: Annotated[str | None, typer.Option("--api", help=API_HELP, callback=api_option)] = None,
    threshold: Annotated[float, typer.Option(help=THRESHOLD_HELP, callback=practical_threshold)] = 0.01,
    correction: Annotated[str, typer.Option(help="Multiple-comparison correction: holm or bh.")] = "holm",
) -> int:
    """Export a campaign: a workbook (--xlsx FILE) or raw tables (--csv DIR / --parquet DIR)."""
    chosen = [x for x in (xlsx, csv, parquet) if x is not None]
    if len(chosen) != 1:
        raise fail("give exactly one of --xlsx FILE, --csv DIR or --parquet DIR", code=2)
    if correction not in ("holm", "bh"):
        raise fail(f"unknown correction {correction!r}; use holm or bh", code=2)
    params = {"threshold": threshold, "correction": correction}
    writable(chosen[0], folder=xlsx is None)  # before the analyzer makes the export
    if xlsx is not None:
        download(campaign_path(campaign, "export.xlsx"), params, xlsx, api=api)
        typer.echo(f"wrote {xlsx}")
        return 0
    fmt, folder = ("csv", csv) if csv is not None else ("parquet", parquet)
    assert folder is not None
    # the zip is spooled to an unnamed file in the folder (or beside it, when it is still to be made; gone however this
    # ends), then unpacked from it: the folder is writable (writable() above), its parent need not be
    try:
        with tempfile.TemporaryFile(dir=folder if folder.is_dir() else folder.resolve().parent) as spool:
            fetch_into(spool, campaign_path(campaign, "export.zip"), {**params, "format": fmt}, api=api,
                       kept=folder)
            spool.seek(0)
            paths = unpack(spool, folder)
    except OSError as exc:  # the spool: a full disk
        raise fail(f"cannot write {folder}: {exc.strerror or exc}") from None
    for path in paths:
        typer.echo(f"wrote {path}")
    return 0


def register(app: typer.Typer) -> None:
    app.command()(export)
