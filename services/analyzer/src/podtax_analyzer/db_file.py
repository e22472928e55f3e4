"""A DuckDB file that is not this analyzer's to use as it is: written by another DuckDB storage version, holding
tables of another shape (another podtax version's, another program's), or cut short (cut_short). Each said too
little (audit hH): DuckDB's storage-version refusal lost its line on who made the file ("fix it"), and tables without
the analyzer's columns let it start healthy, then fail every read and write in a traceback. The reasons here are
open_problem's form: what the file is and what to do."""

from __future__ import annotations

import os
import re
import struct
from functools import lru_cache
from importlib import resources
from pathlib import Path

import duckdb

HEADER = 4096  # DuckDB's main header, then its two database headers, each a block of this size
HEADERS_BYTES = 3 * HEADER  # a DuckDB file's main header and its two database headers, before its first block
DAMAGED = ("Could not read enough bytes from file", "Corrupt database file")  # DuckDB: a file cut short, a bad block
RESTORE = "restore it from a backup, or move it away for a new one"  # at start; service.storage_advice says so too
COLUMNS = ("SELECT table_name, column_name, is_nullable, column_default FROM duckdb_columns() "
           "WHERE database_name = current_database() AND schema_name = 'main'")


def version_why(text: str) -> str | None:
    """The reason and fix when DuckDB refused `text`'s file for its storage version; None for another error."""
    found = re.search(r"storage version number (\d+), but we can only read storage versions between (\d+) and (\d+)",
                      text)
    if not found:
        return None
    made = re.search(r"created with (a newer version of DuckDB|DuckDB version [^\n]*?)\.?$", text, re.MULTILINE)
    who = made[1] if made else "another version of DuckDB"
    said = (f"the file was written by {who} (storage version {found[1]}; this analyzer's DuckDB {duckdb.__version__} "
            f"reads {found[2]} to {found[3]}), and is left as it is: ")
    if int(found[1]) > int(found[3]):
        return said + "use it with the podtax version that wrote it (its DuckDB is newer)"
    return said + ("export it with that DuckDB (EXPORT DATABASE) and import the export into a new file with this "
                   "one (IMPORT DATABASE)")


def wal_why(text: str) -> str | None:
    """The reason and fix when DuckDB could not replay the WAL beside the file (what it commits before a checkpoint
    moves it into the file); None for another error. Said 'fix it' (hF, session 56): a WAL damaged on disk, and one
    that is not the file's, left beside a file put back from a backup or copied without its own WAL."""
    found = re.search(r'Failure while replaying (?:checkpoint )?WAL file "([^"]+)": (.*)', text)
    if not found:
        return None
    wal, cause = found[1], found[2].split(". ")[0].strip().rstrip(".")[:200]  # DuckDB's first sentence
    if "WAL does not match database file" in cause or "checkpoint iteration does not match" in cause:
        return (f"its WAL {wal} is not this file's ({cause}): a file put back from a backup, or copied without "
                f"its own WAL, beside the WAL of the one it replaced; move {wal} away (keep it: with the file it "
                "belongs to, it holds what was stored after that file's last checkpoint) and the file opens as it is")
    return (f"its WAL {wal} is damaged ({cause}): restore the file and its WAL from a backup; or move {wal} away "
            "(keep it) and the file opens as at its last checkpoint, without what was stored after it")


@lru_cache(maxsize=1)
def _schema() -> dict[str, list[str]]:
    """The columns of each table schema.sql makes, in its order."""
    con = duckdb.connect(":memory:")
    try:
        con.execute(resources.files("podtax_analyzer").joinpath("schema.sql").read_text())
        tables: dict[str, list[str]] = {}
        for table, column, *_ in con.execute(COLUMNS + " ORDER BY table_name, column_index").fetchall():
            tables.setdefault(table, []).append(column)
        return tables
    finally:
        con.close()


def schema_why(con: duckdb.DuckDBPyConnection) -> str | None:
    """Why the file's tables are not the analyzer's (a column it reads and writes missing, or one it does not write
    that the file requires: NOT NULL without a default), and what to do; None when they are. Column types and extra
    columns that may stay empty are not checked (files of earlier versions keep theirs)."""
    have: dict[str, dict[str, tuple[bool, object]]] = {}
    for table, column, nullable, default in con.execute(COLUMNS).fetchall():
        have.setdefault(table, {})[column] = (nullable, default)
    for table, wanted in sorted(_schema().items()):
        got = have.get(table, {})
        if missing := [c for c in wanted if c not in got]:
            return (f"its table {table} lacks {', '.join(missing)}, which this analyzer reads and writes (a file of "
                    "another podtax version, or of another program); left as it is: move it away for a new one")
        if required := sorted(c for c, (nullable, default) in got.items()
                              if c not in wanted and not nullable and default is None):
            return (f"its table {table} requires {', '.join(required)}, which this analyzer does not write (a file of "
                    "a newer podtax version?); left as it is: use it with the version that made it")
    return None


_ADDED = re.compile(r"ALTER TABLE (\w+) ADD COLUMN IF NOT EXISTS (\w+)", re.IGNORECASE)


@lru_cache(maxsize=1)
def _added() -> set[tuple[str, str]]:
    """(table, column) of each column schema.sql adds to a file made before it (ALTER TABLE ... ADD COLUMN)."""
    return {(t.lower(), c.lower()) for t, c in
            _ADDED.findall(resources.files("podtax_analyzer").joinpath("schema.sql").read_text())}


def older_lacks(con: duckdb.DuckDBPyConnection) -> list[str]:
    """What a file of an older podtax version lacks that this analyzer adds when it opens it (schema.sql: the tables
    it creates, the columns it adds), when that is all it lacks: [] for a file whose runs table is not the analyzer's
    or that lacks a column schema.sql does not add (another program's file), and for one that lacks nothing."""
    have: dict[str, set[str]] = {}
    for table, column, *_ in con.execute(COLUMNS).fetchall():
        have.setdefault(table, set()).add(column)
    if "runs" not in have:
        return []
    lacks = []
    for table, wanted in sorted(_schema().items()):
        if table not in have:
            lacks.append(f"the table {table}")
            continue
        missing = [c for c in wanted if c not in have[table]]
        if any((table, c) not in _added() for c in missing):
            return []
        lacks += [f"{table}.{c}" for c in missing]
    return lacks


def foreign_why(exc: duckdb.Error, con: duckdb.DuckDBPyConnection) -> tuple[str, int] | None:
    """Why a read of a DuckDB file failed (a table or column missing), with the fix and the exit status; None for
    another error. A file of an older podtax version (older_lacks): this analyzer adds what it lacks when it opens it,
    read-only here (1). Another program's file, or none the analyzer made: a usage mistake (2). `podtax report --db`
    and `podtax simulate --db` on such a file ended in a traceback, the CLI showing its last line ('error:    ^^^^')."""
    if not isinstance(exc, duckdb.CatalogException | duckdb.BinderException):
        return None
    if lacks := older_lacks(con):
        return (f"a file of an older podtax version, read as it is (it lacks {', '.join(lacks)}): start this "
                f"version's analyzer on it once (PODTAX_ANALYZER_DB), which adds them, then run this again", 1)
    first = (str(exc).splitlines() or [type(exc).__name__])[0][:300]
    return f"its tables are not the analyzer's ({first}): give the analyzer's DuckDB file (PODTAX_ANALYZER_DB)", 2


def never_written(path: Path) -> bool:
    """Whether `path` is what DuckDB leaves when it stops part-way through creating a file (a full disk, a file size
    limit: audit hH): shorter than its three headers, its main header DuckDB's, and each database header present
    naming no checkpoint (meta block -1, no block). No block of data can lie in such a file: it holds no database."""
    with path.open("rb") as f:
        data = f.read(3 * HEADER)
    if len(data) >= 3 * HEADER or data[8:12] != b"DUCK":
        return False
    for start in (HEADER, 2 * HEADER):
        if len(data) >= start + 40:  # checksum, iteration, meta block, free list, block count
            _, meta_block, _, block_count = struct.unpack_from("<QqqQ", data, start + 8)
            if meta_block != -1 or block_count != 0:
                return False
    return True


def identity(path: Path) -> tuple[int, int] | None:
    """The (device, inode) of the database file the analyzer opened; None for an in-memory database (or none there)."""
    try:
        st = os.stat(path) if str(path) != ":memory:" else None
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if st else None


def moved_why(path: Path, opened: tuple[int, int] | None, removed: bool = False) -> str | None:
    """Why nothing more may be stored when the file at `path` is no longer the one opened (removed, or replaced:
    audit hH found /healthz 'ok' and every result acked into a removed file, all lost when the analyzer stopped),
    with how to get it back; None while it is. `removed`: the path was seen empty since, so a file there now was put
    back (as this says to do), not one to move away."""
    if opened is None:
        return None
    try:
        st = os.stat(path)
        now: tuple[int, int] | None = (st.st_dev, st.st_ino)
    except FileNotFoundError:
        now = None
    except OSError:  # a folder made unreadable: not this check's to judge
        return None
    if now == opened:
        return None
    if now is not None and removed:
        return (f"a file is back at {path} (removed while the analyzer ran): nothing more is stored until the "
                "analyzer restarts: restart it to use that file")
    fd = held_fd(opened)
    source = f"/proc/{os.getpid()}/fd/{fd}" if fd is not None else f"/proc/{os.getpid()}/fd (ls -l)"
    what, first = ("removed", "") if now is None else ("replaced by another file", "move the new file away, then ")
    return (f"{path} was {what} while the analyzer ran: what it stored is only in the file it still holds open, lost "
            f"if it is killed, so nothing more is stored (new events wait in NATS): {first}copy it back while the "
            f"analyzer runs (cp {source} {path}), then restart the analyzer (stopped, it also puts the file back "
            "itself)")


def held_fd(opened: tuple[int, int]) -> str | None:
    """This process's descriptor of the file it opened (device, inode), None if none."""
    return next((n for n in _fds() if _same(f"/proc/self/fd/{n}", opened)), None)


def _fds() -> list[str]:
    try:
        return os.listdir("/proc/self/fd")
    except OSError:
        return []


def _same(name: str, opened: tuple[int, int]) -> bool:
    try:
        st = os.stat(name)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == opened


TABLES = "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = current_database()"
LAST_DATA = "SELECT max(greatest(block_id, list_max(additional_block_ids))) FROM pragma_storage_info(?)"


def last_block(con: duckdb.DuckDBPyConnection) -> int:
    """The highest block number the file's metadata and tables' data use (-1: none). An index's blocks are not
    listed, so it may be below the last block in use, never above it (every block listed is in use)."""
    found = [con.execute("SELECT max(block_id) FROM pragma_metadata_info()").fetchone()[0]]
    for schema, table in con.execute(TABLES).fetchall():
        found.append(con.execute(LAST_DATA, [f'"{schema}"."{table}"']).fetchone()[0])
    return max((n for n in found if n is not None), default=-1)


def cut_short(con: duckdb.DuckDBPyConnection, path: Path) -> str | None:
    """Why the file is damaged and what to do, if it is shorter than its blocks in use need. DuckDB opens a file
    cut short whose catalog is whole and fails only at the first read or write of a missing block (audit: a real
    file cut to 300 KB: `podtax up` said it was up, /healthz answered 503 later). Each block in use has its place
    in the file, and blocks in use may lie after free ones (a table dropped): the need is the larger of the header's
    count in use and the last block the catalog lists. Not the header's total: free blocks at the end DuckDB cuts
    off itself, and after a reopen the total counts them again (DuckDB 2.0.1). It reads the catalog, not the data
    (some ms); a bad block inside is met at its first read."""
    if str(path) == ":memory:":
        return None
    try:
        _, _, block_size, _, used, *_ = con.execute("PRAGMA database_size").fetchone()
        need = HEADERS_BYTES + max(used, last_block(con) + 1) * block_size
    except duckdb.Error as exc:  # metadata beyond the end
        if not any(sign in str(exc) for sign in DAMAGED):
            raise
        return f"the file is damaged (cut short or overwritten): {RESTORE}"
    if (size := path.stat().st_size) >= need:
        return None
    return f"the file is damaged (cut short: {size:,} bytes, fewer than the {need:,} its blocks in use need): {RESTORE}"
