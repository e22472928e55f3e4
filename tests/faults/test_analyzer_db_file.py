"""The analyzer's DuckDB file written by something else than this analyzer (audit hH), through the real analyzer
process on a real nats-server, and `podtax report --db`:

- a file of another DuckDB storage version (a newer DuckDB's; an old one's): the analyzer said "IO Error: Trying
  to read ... storage versions between 64 and 69.: fix it", dropping DuckDB's line on who made it, and `podtax report
  --db` printed DuckDB's last line only ("See the storage page ...); if the analyzer is running it holds the file");
- a file cut short: `podtax report --db` said the analyzer may hold it;
- a file whose tables are not this analyzer's (a column missing, a required column it does not write): the analyzer
  said it was up and healthy, then logged a traceback every few seconds (BinderException) and could store nothing.
Each is now one line that says what the file is and what to do, and the file is left as it was."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from podtax import natsserver
from podtax.cli.main import main
from podtax_analyzer.store import Store

MASK = (1 << 64) - 1


def made(tmp_path: Path) -> Path:
    """A database file the analyzer made (its schema, no runs)."""
    db = tmp_path / "made.duckdb"
    Store(db, None).close()
    return db


def with_storage_version(db: Path, version: int) -> bytes:
    """`db` as DuckDB writes it with another storage version in its main header (checksum made again: DuckDB's
    block checksum, 5381 xor-folded with each 64-bit word times 0xbf58476d1ce4e5b9)."""
    data = bytearray(db.read_bytes())
    data[12:20] = version.to_bytes(8, "little")
    checksum = 5381
    for (word,) in struct.iter_unpack("<Q", bytes(data[8:4096])):
        checksum ^= (word * 0xBF58476D1CE4E5B9) & MASK
    data[0:8] = checksum.to_bytes(8, "little")
    return bytes(data)


def start_analyzer(db: Path, nats_url: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The analyzer on `db`, expected to refuse it: its exit status and output."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}, "PODTAX_NATS_URL": nats_url,
           "PODTAX_ANALYZER_DB": str(db), "PODTAX_ANALYZER_PORT": str(natsserver.free_port()),
           "PODTAX_LOG_FORMAT": "text"}
    return subprocess.run([sys.executable, "-m", "podtax_analyzer"], env=env, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)


@pytest.mark.parametrize(("version", "said"), [(5000, "newer"), (39, "v0.6.0 or v0.6.1")])
def test_another_storage_version_is_named(tmp_path: Path, nats_url: str, capsys: pytest.CaptureFixture[str],
                                          version: int, said: str) -> None:
    db = tmp_path / "other.duckdb"
    db.write_bytes(with_storage_version(made(tmp_path), version))
    before = db.read_bytes()
    done = start_analyzer(db, nats_url, tmp_path)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert f"storage version {version}" in last and said in last and "fix it" not in last, done.stderr
    assert "Traceback" not in done.stderr
    assert db.read_bytes() == before

    assert main(["report", "c", "--db", str(db)]) == 1
    err = capsys.readouterr().err.strip()
    assert f"storage version {version}" in err and said in err and "holds the file" not in err, err
    assert len(err.splitlines()) == 1, err


def test_report_db_of_a_file_cut_short_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    con = duckdb.connect(str(tmp_path / "big.duckdb"))
    con.execute("CREATE TABLE t AS SELECT range AS x, repeat('y', 50) AS s FROM range(200000)")
    con.close()
    db = tmp_path / "cut.duckdb"
    db.write_bytes((tmp_path / "big.duckdb").read_bytes()[:300_000])
    assert main(["report", "c", "--db", str(db)]) == 1
    err = capsys.readouterr().err.strip()
    assert "damaged" in err and "holds the file" not in err, err
    assert len(err.splitlines()) == 1, err


@pytest.mark.parametrize(("change", "named"), [
    ("ALTER TABLE runs DROP COLUMN throttled_usec", "runs lacks throttled_usec"),
    ("DROP TABLE metrics; CREATE TABLE metrics (run_id INTEGER)", "metrics lacks name, value, unit"),
    ("ALTER TABLE runs ADD COLUMN shard INTEGER DEFAULT 1; ALTER TABLE runs ALTER COLUMN shard DROP DEFAULT; "
     "UPDATE runs SET shard = 1; ALTER TABLE runs ALTER COLUMN shard SET NOT NULL", "runs requires shard"),
])
def test_tables_not_the_analyzers_are_refused_at_start(tmp_path: Path, nats_url: str, change: str,
                                                       named: str) -> None:
    db = tmp_path / "other.duckdb"
    shutil.copy(made(tmp_path), db)
    con = duckdb.connect(str(db))
    con.execute(change)
    con.close()
    done = start_analyzer(db, nats_url, tmp_path)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert named in last and "PODTAX_ANALYZER_DB" in last, done.stderr
    assert "Traceback" not in done.stderr


def test_a_refused_file_is_left_as_it_was(tmp_path: Path, nats_url: str) -> None:
    """Another program's file (a table named as one of the analyzer's): refused, 'left as it is'. It was not:
    schema.sql had run first (review r5), adding the analyzer's tables and phases' columns to it."""
    db = tmp_path / "foreign.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE phases (x INTEGER); CREATE TABLE mine (y INTEGER)")
    con.close()
    done = start_analyzer(db, nats_url, tmp_path)
    assert done.returncode == 2 and "phases lacks" in done.stderr, done.stderr
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()
        columns = con.execute("SELECT column_name FROM duckdb_columns() WHERE table_name = 'phases'").fetchall()
    finally:
        con.close()
    assert (tables, columns) == ([("mine",), ("phases",)], [("x",)])
    assert not Path(f"{db}.wal").exists()
