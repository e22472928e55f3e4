"""The WAL beside the analyzer's DuckDB file (what DuckDB commits before a checkpoint moves it into the file) that
DuckDB cannot replay, through the real analyzer process on a real nats-server and `podtax report --db`: a WAL
damaged on disk, another database's WAL, and the WAL of a later state of the same file (the file put back from a
backup beside the WAL of the one it replaced). Each was refused '... Failure while replaying WAL file ...: fix it'
(hF, session 56), naming no fix; now the line says what the WAL is and what to do, the files are left as they were,
and doing it opens the file."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest
from podtax import natsserver
from podtax.cli.main import main
from podtax_analyzer.store import Store

from tests.e2e.test_analyzer_empty_file import analyzer, serves, stop
from tests.faults.scenario_poison_batch import result
from tests.faults.test_analyzer_db_file import start_analyzer

DAMAGED = "is damaged (Corrupt WAL file: "
NOT_ITS = "is not this file's ("


def written(folder: Path) -> tuple[Path, Path]:
    """A file of 150 runs as a kill leaves it: 100 in the file (two checkpoints), the last 50 in its WAL only; and a
    backup of the file taken at its first checkpoint (50 runs)."""
    work, kept = folder / "work", folder / "kept"
    work.mkdir(parents=True)
    kept.mkdir()
    store = Store(work / "podtax.duckdb", None)
    try:
        store.write_batch([result(f"a-{i}") for i in range(50)])
        store.checkpoint()
        shutil.copy(work / "podtax.duckdb", folder / "backup.duckdb")
        store.write_batch([result(f"b-{i}") for i in range(50)])
        store.checkpoint()
        store.con.execute("SET checkpoint_threshold = '1GB'")
        store.write_batch([result(f"c-{i}") for i in range(50)])
        for name in ("podtax.duckdb", "podtax.duckdb.wal"):  # as they are on disk now
            shutil.copy(work / name, kept / name)
    finally:
        store.close()
    return kept / "podtax.duckdb", folder / "backup.duckdb"


def runs_served(db: Path, nats_url: str) -> int:
    """The runs the analyzer started on `db` says it holds."""
    port = natsserver.free_port()
    proc = analyzer(db, nats_url, port)
    try:
        assert serves(proc, port), stop(proc)
        return int(httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).json()["runs"])
    finally:
        assert "Traceback" not in stop(proc)


def test_an_intact_wal_is_replayed(tmp_path: Path, nats_url: str) -> None:
    db, _ = written(tmp_path)
    assert runs_served(db, nats_url) == 150


@pytest.mark.parametrize(("case", "said", "runs"), [
    ("damaged", DAMAGED, 100), ("another database's", NOT_ITS, 100), ("backup beside a later WAL", NOT_ITS, 50)])
def test_a_wal_duckdb_cannot_replay_is_named_with_its_fix(tmp_path: Path, nats_url: str,
                                                          capsys: pytest.CaptureFixture[str], case: str, said: str,
                                                          runs: int) -> None:
    db, backup = written(tmp_path / "one")
    wal = Path(f"{db}.wal")
    if case == "damaged":
        with wal.open("r+b") as f:
            f.seek(wal.stat().st_size // 2)
            f.write(b"\xff" * 100)
    elif case == "another database's":
        shutil.copy(Path(f"{written(tmp_path / 'two')[0]}.wal"), wal)
    else:
        shutil.copy(backup, db)
    before = (db.read_bytes(), wal.read_bytes())

    done = start_analyzer(db, nats_url, tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert f"cannot open {db}: its WAL {wal} {said}" in last and f"move {wal} away (keep it" in last, last
    assert "fix it" not in last, last
    assert main(["report", "c", "--db", str(db)]) == 1
    err = capsys.readouterr().err.strip()
    assert f"its WAL {wal} {said}" in err and f"move {wal} away" in err and len(err.splitlines()) == 1, err
    assert (db.read_bytes(), wal.read_bytes()) == before

    wal.rename(tmp_path / "moved.wal")  # what the line says
    assert runs_served(db, nats_url) == runs
