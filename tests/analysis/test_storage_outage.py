"""The analyzer turns a storage fault into bus.Unavailable (the batch is held, never dead-lettered) with
what to fix. Real DuckDB store and exception classes; the failing disk of the second test is a stand-in
(labelled) for the real full disk of tests/faults/test_full_disk.py."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from fastapi.testclient import TestClient
from podtax import events
from podtax.bus import Unavailable
from podtax.config import AnalyzerSettings
from podtax_analyzer.api import create_app
from podtax_analyzer.service import Analyzer, storage_advice
from podtax_analyzer.store import Store


@pytest.mark.parametrize(("exc", "says"), [
    (duckdb.OutOfMemoryException("Out of Memory Error: failed to allocate data of size 64.0 KiB"),
     "raise PODTAX_ANALYZER_MEMORY_MB"),
    (duckdb.IOException("IO Error: Could not write file: No space left on device"), "free space on its disk"),
    (OSError(28, "No space left on device"), "free space on its disk"),
    (duckdb.FatalException("FATAL Error: database has been invalidated"), "the analyzer opens it again itself"),
    (duckdb.TransactionException('TransactionContext Error: Failed to commit: Could not write file "a.duckdb.wal": '
                                 "Read-only file system"), "its file system is read-only: remount it read-write"),
    (duckdb.IOException('IO Error: Could not read enough bytes from file "a.duckdb": attempted to read 262144 bytes '
                        'from location 1060864'), "the file is damaged"),  # a file cut short: was "free space"
    (duckdb.IOException("IO Error: Corrupt database file: computed checksum 1 does not match stored checksum 2 in "
                        "block at location 1060864"), "restore the file from a backup"),
])
def test_storage_advice_names_the_fix(exc: BaseException, says: str, tmp_path: Path) -> None:
    settings = AnalyzerSettings(analyzer_db=tmp_path / "a.duckdb", analyzer_memory_mb=256)
    advice = storage_advice(exc, settings)
    assert says in advice and str(tmp_path / "a.duckdb") in advice and type(exc).__name__ in advice
    if isinstance(exc, duckdb.OutOfMemoryException):
        assert "256 MB" in advice


def _failure(run_id: str) -> events.RunFailedV1:
    run = events.RunSpec(run_id=run_id, campaign="c", node="n", env="host", test="sysbench-cpu", params={},
                         sequence=0)
    now = datetime.now(UTC)
    return events.run_failed(events.RunFailed(run=run, stage="agent", reason="timeout", detail="x",
                                              started_at=now, ended_at=now), "tests")


def test_a_failing_disk_makes_the_batch_unavailable_and_it_is_stored_once_space_is_back(tmp_path: Path) -> None:
    settings = AnalyzerSettings(analyzer_db=tmp_path / "a.duckdb")
    store = Store(settings.analyzer_db)
    analyzer = Analyzer(settings, bus=None, store=store)  # type: ignore[arg-type] - handle_batch needs no bus
    batch = [_failure("r1"), _failure("r2")]
    original = store.write_batch

    def disk_full(part: list[events.Envelope]) -> set[str]:
        raise duckdb.IOException("IO Error: Could not write file: No space left on device")

    store.write_batch = disk_full  # type: ignore[method-assign] - the disk, not the events, fails
    app = create_app(store, None)
    app.state.storage_problem = lambda: analyzer.storage_problem
    http = TestClient(app)
    with pytest.raises(Unavailable, match="free space on its disk"):
        asyncio.run(analyzer.handle_batch(batch))
    health = http.get("/healthz")
    assert health.status_code == 503 and health.json()["status"] == "storage unavailable"
    assert "No space left" in health.json()["storage"]
    store.write_batch = original  # type: ignore[method-assign] - space is back
    assert asyncio.run(analyzer.handle_batch(batch)) == {}
    health = http.get("/healthz")
    assert health.status_code == 200 and health.json()["storage"] == "ok" and health.json()["runs"] == 2
    stored = store.cursor().execute("SELECT count(*) FROM runs").fetchone()
    assert stored == (2,)
    store.close()


def test_healthz_names_the_file_not_its_folder(tmp_path: Path) -> None:
    """/healthz answers anyone who reaches the API, with no token even when reads need one (probes): it named the
    DuckDB file's full path, and its storage problem the folder again (DuckDB's own message too), saying where the
    analyzer's data lives on the machine (a home folder, a user's name). Now the file's name only; the log keeps
    the whole text (storage_advice, logged where the batch is held)."""
    settings = AnalyzerSettings(analyzer_db=tmp_path / "a.duckdb")
    store = Store(settings.analyzer_db)
    analyzer = Analyzer(settings, bus=None, store=store)  # type: ignore[arg-type] - handle_batch needs no bus

    def disk_full(part: list[events.Envelope]) -> set[str]:
        raise duckdb.IOException(f'IO Error: Could not write file "{tmp_path}/a.duckdb.wal": No space left on device')

    store.write_batch = disk_full  # type: ignore[method-assign] - the disk, not the events, fails
    app = create_app(store, "a-token-of-16-chars", reads_need_token=True)
    app.state.storage_problem = lambda: analyzer.storage_problem
    with pytest.raises(Unavailable, match=str(tmp_path)):  # the log's text names the folder
        asyncio.run(analyzer.handle_batch([_failure("r1")]))
    health = TestClient(app).get("/healthz")
    assert health.status_code == 503 and health.json()["db"] == "a.duckdb", health.text
    assert health.json()["storage"].startswith("storing to a.duckdb failed (IOException: IO Error: Could not write "
                                               'file "a.duckdb.wal": No space left on device)'), health.text
    assert str(tmp_path) not in health.text and tmp_path.name not in health.text, health.text
    store.close()
