"""Raw exports of a campaign as CSV or Parquet files, written by DuckDB's own COPY.

Tables: runs, metrics (of the campaign's runs), phases (when the database has per-object phase
latencies) and comparisons (the comparison table, as the API returns it). Served as one zip at
/api/campaigns/{c}/export.zip?format=csv|parquet (made in a temporary file and streamed: zip_file);
`podtax export` unpacks it into a folder.
"""

from __future__ import annotations

import contextlib
import errno
import io
import math
import re
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, Literal

import duckdb
from duckdb.sqltypes import VARCHAR
from podtax.event_payloads import ESCAPED, printable

from podtax_analyzer.report_data import table_exists
from podtax_analyzer.report_models import CampaignReport

Format = Literal["csv", "parquet"]
FORMATS: tuple[str, ...] = ("csv", "parquet")
COMPARISON_COLUMNS = {
    "id": "VARCHAR", "campaign": "VARCHAR", "node": "VARCHAR", "test": "VARCHAR", "params": "VARCHAR",
    "metric": "VARCHAR", "unit": "VARCHAR", "higher_is_better": "BOOLEAN", "primary": "BOOLEAN",
    "n_host": "INTEGER", "n_pod": "INTEGER", "host_median": "DOUBLE", "pod_median": "DOUBLE",
    "host_modes": "VARCHAR", "pod_modes": "VARCHAR", "host_lower_bound": "BOOLEAN", "pod_lower_bound": "BOOLEAN",
    "host_tool_version": "VARCHAR", "pod_tool_version": "VARCHAR", "ratio": "DOUBLE", "ci_low": "DOUBLE",
    "ci_high": "DOUBLE", "ci_method": "VARCHAR", "hl_ratio": "DOUBLE", "hl_ci_low": "DOUBLE",
    "hl_ci_high": "DOUBLE", "p_value": "DOUBLE", "p_adjusted": "DOUBLE", "verdict": "VARCHAR",
    "direction": "VARCHAR", "change_pct": "DOUBLE", "flags": "VARCHAR[]", "sentence": "VARCHAR",
    # columns added later go last, so a sheet or script reading the file by position keeps reading the same ones
    "host_upper_bound": "BOOLEAN", "pod_upper_bound": "BOOLEAN", "descriptive": "BOOLEAN",
    # the same node name in two clusters is two cells; host_/pod_ are the baseline's and the candidate's columns,
    # which are kubernetes and nomad in a control-plane campaign: without these a row said neither
    "cluster": "VARCHAR", "baseline": "VARCHAR", "candidate": "VARCHAR",
}
_OPTIONS = {"csv": "(FORMAT csv, HEADER true)", "parquet": "(FORMAT parquet)"}


# A spreadsheet opening a CSV file runs a cell that starts with = + - @ (or a tab or carriage return before
# one) as a formula: a tool build an import manifest named `hdparm 9.65 (=cmd|' /C calc'!A0)` reached runs.csv
# as `=cmd|' /C calc'!A0`. Such text cells get a leading apostrophe, which spreadsheets show as text (OWASP's
# "CSV Injection" advice; ASVS 1.2.10 adds a NUL first, which the CSV files and the workbook write as `\x00`).
# Numeric columns are left as they are.
FORMULA_FIRST = ("=", "+", "-", "@", "\t", "\r")
FORMULA_START = "^[" + "".join(re.escape(char) for char in FORMULA_FIRST) + "]"


def finite(v: Any) -> Any:
    """`v`, or None for a float that is not finite, as the API's JSON writes it (null): medians of values near
    the float maximum overflow to inf, which comparisons.csv wrote as `inf` beside the JSON's null."""
    return None if isinstance(v, float) and not math.isfinite(v) else v


def _re2(char: str) -> str:
    return f"\\x{{{ord(char):x}}}"


# A RE2 class finding a character event_payloads.printable writes as an escape (ESCAPED)
_ESCAPED_CLASS = "[" + "".join(f"{_re2(first)}-{_re2(last)}" for first, last in ESCAPED) + "]"
PRINTABLE_SQL = "podtax_printable"  # event_payloads.printable, as a SQL function of the database (_with_printable)


def _with_printable(con: duckdb.DuckDBPyConnection) -> None:
    """Make event_payloads.printable the SQL function PRINTABLE_SQL of `con`'s database: one escaper for every
    output. Registered once per database, seen by all its cursors (a second registration raises)."""
    with con.cursor() as own:  # its own: create_function refuses a connection holding an unfinished result
        if own.execute("SELECT 1 FROM duckdb_functions() WHERE function_name = $1", [PRINTABLE_SQL]).fetchone():
            return
        # a concurrent export's registration may come first (CatalogException, or NotImplementedException)
        with contextlib.suppress(duckdb.CatalogException, duckdb.NotImplementedException):
            # printable must stay a module-level function: the database keeps the registered callable past this
            # cursor, and a registered lambda or bound method whose owner is gone crashes the process when called
            # (duckdb-python issue #530)
            own.create_function(PRINTABLE_SQL, printable, [VARCHAR], VARCHAR, side_effects=False)


def _printable(column: str) -> str:
    """SQL: the text of `column` as _printable_of writes it."""
    return _printable_of(f'"{column}"')


def _printable_of(c: str) -> str:
    """SQL: the text of the expression `c` (a quoted column, a lambda's variable) as event_payloads.printable writes
    it: control characters but tab and newline as `\\xNN`, direction and zero-width characters as `\\uNNNN`. An ESC
    sequence in a node's name cleared the screen of whoever ran `cat runs.csv`, a NUL ends the text for many
    readers, a lone CR splits a row in some, and a U+202E made one node's name read as another's in a spreadsheet.
    Python runs only on the values holding one (the regular expression finds them), and most text, printable ASCII,
    skips the regular expression too (1.8x the old CSV's time when every value ran it): a value is ASCII when its
    bytes are as many as its characters (C1 and HIDDEN characters are not), and an ASCII value holds no control
    character but DEL when JSON writes it as it is, in quotes (it escapes a tab, a newline, a quote and a backslash
    too: such values take the regular expression)."""
    maybe = f"(strlen({c}) <> length({c}) OR strlen(to_json({c})) <> strlen({c}) + 2 OR contains({c}, chr(127)))"
    return f"CASE WHEN {maybe} AND regexp_matches({c}, '{_ESCAPED_CLASS}') THEN {PRINTABLE_SQL}({c}) ELSE {c} END"


def _as_text(con: duckdb.DuckDBPyConnection, query: str, params: list) -> str:
    """`query` with its VARCHAR columns made printable (_printable), then their formula-like values prefixed with an
    apostrophe (a CR first is by then `\\x0d`, text; a tab first stays, and is guarded); the elements of its VARCHAR[]
    columns (runs.flags) made printable too (the CSV writes a list as `[a, b]`: no formula's start)."""
    _with_printable(con)
    described = con.execute(f"SELECT * FROM ({query}) LIMIT 0", params).description
    names = [name for name, kind, *_ in described if str(kind) == "VARCHAR"]
    lists = [name for name, kind, *_ in described if str(kind) == "VARCHAR[]"]
    if not names and not lists:
        return query
    element = _printable_of("x")
    shown = ", ".join([*(f'{_printable(name)} AS "{name}"' for name in names),
                       *(f'list_transform("{name}", lambda x: {element}) AS "{name}"' for name in lists)])
    if not names:
        return f"SELECT * REPLACE ({shown}) FROM ({query})"
    first = ", ".join(f"chr({ord(char)})" for char in FORMULA_FIRST)  # half a regular expression's time
    guarded = ", ".join(f"""CASE WHEN left("{name}", 1) IN ({first}) THEN '''' || "{name}" """
                        f'ELSE "{name}" END AS "{name}"' for name in names)
    return f"SELECT * REPLACE ({guarded}) FROM (SELECT * REPLACE ({shown}) FROM ({query}))"


def _copy(con: duckdb.DuckDBPyConnection, query: str, params: list, path: Path, fmt: Format, order: str = "") -> None:
    """COPY `query`'s rows, by `order` (an ORDER BY list of its columns), to `path`. The order is the outermost
    clause: an ORDER BY inside _as_text's wrapping was lost past one row group (122,880 rows), in parallel. A CSV's
    rows are ordered by their position in `order` of the values as stored (__pos, not written): ordered by the
    written text, run id '+b' (written "'+b") came before '(a', which Parquet writes first."""
    if fmt == "csv" and order:
        query = f"SELECT *, row_number() OVER (ORDER BY {order}) AS __pos FROM ({query})"
    if fmt == "csv":  # Parquet keeps its types, and the text as it is
        query = _as_text(con, query, params)
    if fmt == "csv" and order:
        query = f"SELECT * EXCLUDE (__pos) FROM ({query}) ORDER BY __pos"
    elif order:
        query = f"SELECT * FROM ({query}) ORDER BY {order}"
    con.execute(f"COPY ({query}) TO '{path.as_posix()}' {_OPTIONS[fmt]}", params)


def write_exports(con: duckdb.DuckDBPyConnection, report: CampaignReport, folder: Path, fmt: Format) -> list[Path]:
    """Write runs, metrics, phases (if stored) and comparisons of ``report.campaign`` into ``folder``."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; use csv or parquet")
    folder.mkdir(parents=True, exist_ok=True)
    if "'" in folder.as_posix():
        raise ValueError("the export folder's path must not contain a quote")
    campaign = report.campaign
    out = []
    tables = [("runs", "SELECT * FROM runs WHERE campaign = $1", "started_at NULLS LAST, run_id"),
              ("metrics", "SELECT m.* FROM metrics m JOIN runs r ON r.run_id = m.run_id WHERE r.campaign = $1",
               "run_id, name")]
    if table_exists(con, "phases"):
        tables.append(("phases", "SELECT p.* FROM phases p JOIN runs r ON r.run_id = p.run_id "
                                 "WHERE r.campaign = $1", ""))
    for name, query, order in tables:
        path = folder / f"{name}.{fmt}"
        _copy(con, query, [campaign], path, fmt, order)
        out.append(path)
    mem = duckdb.connect()
    try:
        cols = ", ".join(f'"{c}" {t}' for c, t in COMPARISON_COLUMNS.items())
        mem.execute(f"CREATE TABLE comparisons ({cols})")
        rows = [[finite(getattr(c, k)) for k in COMPARISON_COLUMNS] for c in report.cells]
        if rows:
            mem.executemany(f"INSERT INTO comparisons VALUES ({', '.join('?' * len(COMPARISON_COLUMNS))})", rows)
        path = folder / f"comparisons.{fmt}"
        _copy(mem, "SELECT * FROM comparisons", [], path, fmt)
        out.append(path)
    finally:
        mem.close()
    return out


SPOOL = 1 << 20  # a zip up to this size stays in memory; a larger one goes to a temporary file on disk
CHUNK = 1 << 16  # the pieces the API sends a zip in


def write_zip(con: duckdb.DuckDBPyConnection, report: CampaignReport, fmt: Format, out: IO[bytes]) -> None:
    """The files of write_exports in one zip (flat: no folders inside), written into `out`."""
    with tempfile.TemporaryDirectory(prefix="podtax-export-") as tmp:
        paths = write_exports(con, report, Path(tmp), fmt)
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
            for p in paths:
                zf.write(p, arcname=p.name)


def export_zip(con: duckdb.DuckDBPyConnection, report: CampaignReport, fmt: Format) -> bytes:
    """The zip of write_zip as bytes (all of it in memory: the API streams zip_file instead)."""
    buf = io.BytesIO()
    write_zip(con, report, fmt, buf)
    return buf.getvalue()


def zip_file(con: duckdb.DuckDBPyConnection, report: CampaignReport, fmt: Format) -> tuple[IO[bytes], int]:
    """The zip of write_zip in a temporary file (spooled) and its size. The API sends it in CHUNKs: a 1M-result
    campaign's zip is 27 MB, which the response body held whole."""
    return spooled(lambda out: write_zip(con, report, fmt, out))


class NoRoom(Exception):
    """The filesystem of the temporary files (TMPDIR) is full: the API answers 507 with this text."""


_FULL = (errno.ENOSPC, errno.EDQUOT)
_FULL_SAID = ("no space left", "quota exceeded")  # DuckDB's IOException carries strerror's text, not the errno


def no_room(exc: BaseException) -> NoRoom | None:
    """A NoRoom naming TMPDIR if `exc` says the disk (or the user's quota) is full, else None."""
    said = " ".join(str(exc).split())
    if (isinstance(exc, OSError) and exc.errno in _FULL) or (
            isinstance(exc, duckdb.IOException) and any(full in said.lower() for full in _FULL_SAID)):
        return NoRoom(f"no room for the export's temporary file in {tempfile.gettempdir()}: {said}; "
                      "free space there or set TMPDIR to a folder with room")
    return None


def spooled(write: Callable[[IO[bytes]], None]) -> tuple[IO[bytes], int]:
    """What `write` writes, in a temporary file (in memory up to SPOOL bytes, then on disk in TMPDIR) read from its
    start, and its size. The caller closes it, which deletes it. A full disk raises NoRoom (it was a bare 500)."""
    out = tempfile.SpooledTemporaryFile(max_size=SPOOL, prefix="podtax-export-")  # noqa: SIM115
    try:
        write(out)
        size = out.tell()
        out.seek(0)
    except BaseException as exc:
        out.close()
        full = no_room(exc)
        if full is not None:
            raise full from exc
        raise
    return out, size


def chunks(file: IO[bytes]) -> Iterator[bytes]:
    """`file`'s bytes from where it is, CHUNK at a time."""
    yield from iter(lambda: file.read(CHUNK), b"")
