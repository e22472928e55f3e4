"""Imported runs that are not one capture stay two runs, and a database holding a capture twice is found so.

The analyzer drops an imported raw log that is the same capture as a stored one (store_imports.py; the same log
imported again under another file name). A manifest's started_at can be a bare date, and a failed run's log can be a
single line, so the capture names the test and its params too (imports_twice.CAPTURE): a failed sysbench-cpu and a
failed sysbench-memory run printing 'FATAL: Cannot allocate memory' on one node, env and day are two runs (review r8:
the memory run was dropped silently). `imports_twice.find` groups by the same key: a database that stored the same
logs under two file names before the analyzer dropped them is listed (it grouped by file name: none found). The
importer's events, the parser's derivation and the analyzer's store on a real DuckDB file."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fastapi import FastAPI
from podtax.cli import importer
from podtax.cli.main import main
from podtax.cli.manifest import read_manifest
from podtax_analyzer import imports_twice
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.integration.importing import CORPUS, HEADER
from tests.integration.test_import_old_node_case import _store
from tests.integration.test_imports_twice import _beside
from tests.report.conftest import serve

CPU = "sysbench-cpu,threads=1 max_prime=100000 events=200 time=0"
FATAL = b"FATAL: Cannot allocate memory\n"


def _events(folder: Path, name: str, logs: dict[str, bytes], rows: list[str]) -> list:
    """The raw-log events `podtax import` builds from manifest `name` in `folder` listing `rows` over `logs`."""
    folder.mkdir(exist_ok=True)
    for file, text in logs.items():
        (folder / file).write_bytes(text)
    (folder / name).write_text(HEADER + "".join(f"{row}\n" for row in rows))
    return [importer.build_event(row, "c", i) for i, row in enumerate(read_manifest(folder / name))]


def _held(db: Path) -> list[tuple[str, str, str]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT r.imported_from, r.test, u.status FROM raw_logs r LEFT JOIN runs u USING (run_id) "
                           "ORDER BY 1").fetchall()
    finally:
        con.close()


def _twice(db: Path, other: Path) -> tuple[list[dict[str, Any]], str | None]:
    """imports_twice's find and report warning for campaign c once `other`'s rows are stored beside `db`'s."""
    con = duckdb.connect(str(_beside(db, [other])))
    try:
        return imports_twice.find(con, "c"), imports_twice.warning(con, "c")
    finally:
        con.close()


@pytest.mark.parametrize(("first", "second"), [
    (CPU, "sysbench-memory,threads=1"),  # another test, the same failure line
    (CPU, "sysbench-cpu,threads=1 max_prime=20000 events=200 time=0"),  # the same test, other params
])
def test_same_failure_line_of_another_test_or_params_is_another_run(tmp_path: Path, first: str, second: str,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    db = tmp_path / "podtax.duckdb"
    caplog.set_level(logging.WARNING, "podtax.analyzer.store")
    _store(db, _events(tmp_path / "a", "m.csv", {"a.log": FATAL}, [f"a.log,node-1,host,{first},2024-03-01,"]))
    _store(db, _events(tmp_path / "b", "m.csv", {"b.log": FATAL}, [f"b.log,node-1,host,{second},2024-03-01,"]))
    assert _held(db) == [("a.log", first.split(",")[0], "failed"), ("b.log", second.split(",")[0], "failed")]
    assert "dropped as duplicates" not in caplog.text


def test_same_failure_line_of_two_tests_in_one_batch_is_two_runs(tmp_path: Path) -> None:
    db = tmp_path / "podtax.duckdb"
    _store(db, _events(tmp_path, "m.csv", {"cpu.log": FATAL, "mem.log": FATAL},
                       [f"cpu.log,node-1,host,{CPU},2024-03-01,", "mem.log,node-1,host,sysbench-memory,threads=1,"
                        "2024-03-01,"]))
    assert _held(db) == [("cpu.log", "sysbench-cpu", "failed"), ("mem.log", "sysbench-memory", "failed")]


def test_copy_of_a_log_under_another_name_is_still_dropped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = tmp_path / "podtax.duckdb"
    caplog.set_level(logging.WARNING, "podtax.analyzer.store")
    log = CORPUS.read_bytes()
    _store(db, _events(tmp_path, "m.csv", {"h.log": log}, [f"h.log,Node-1,host,{CPU},2024-03-01T10:00:00Z,"]))
    _store(db, _events(tmp_path, "c.csv", {"copy-h.log": log}, [f"copy-h.log,node-1,host,{CPU},2024-03-01T10:00:00Z,"]))
    assert _held(db) == [("h.log", "sysbench-cpu", "ok")]
    said = " ".join(caplog.text.split())  # the causes include two runs (review r10)
    assert "dropped as duplicates" in said and "or two rows of one manifest with the same text at one start" in said


def test_find_lists_a_log_stored_under_two_file_names(tmp_path: Path) -> None:
    """A database whose analyzer stored the same log under h.log and copy-h.log (before 287d2dc): find lists the copy
    (it grouped by file name and found none, so the report warned of nothing); the failures of two tests are not."""
    log = CORPUS.read_bytes()
    db, other = tmp_path / "podtax.duckdb", tmp_path / "other.duckdb"
    _store(db, _events(tmp_path / "a", "m.csv", {"h.log": log, "cpu.log": FATAL},
                       [f"h.log,node-1,host,{CPU},2024-03-01T10:00:00Z,", f"cpu.log,node-1,host,{CPU},2024-03-02,"]))
    _store(other, _events(tmp_path / "b", "m.csv", {"copy-h.log": log, "mem.log": FATAL},
                          [f"copy-h.log,node-1,host,{CPU},2024-03-01T10:00:00Z,",
                           "mem.log,node-1,host,sysbench-memory,threads=1,2024-03-02,"]))
    twice, warning = _twice(db, other)
    assert [(t["imported_from"], t["env"]) for t in twice] == [("copy-h.log", "host")]
    assert warning is not None and "1 imported run(s) of this campaign are stored twice" in warning


def test_two_runs_of_one_manifest_stored_apart_are_listed_with_both_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A database from before 287d2dc holds two rows of one manifest that logged the same text at one date-only
    start apart (two runs, maybe). find lists one as the other's copy, so `podtax imports-twice` (the real CLI against
    the real app) and the report's warning name both files and say to check them before --apply (review r10: only
    the copy's file was printed, and the warning called it a copy an older podtax stored)."""
    db, other = tmp_path / "podtax.duckdb", tmp_path / "other.duckdb"
    _store(db, _events(tmp_path / "a", "m.csv", {"r1.log": FATAL}, [f"r1.log,node-1,host,{CPU},2024-03-01,"]))
    _store(other, _events(tmp_path / "b", "m.csv", {"r2.log": FATAL}, [f"r2.log,node-1,host,{CPU},2024-03-01,"]))
    twice, warning = _twice(db, other)
    assert [(t["imported_from"], t["kept_imported_from"]) for t in twice] == [("r2.log", "r1.log")]
    assert warning is not None and "file r2.log, is" in warning and "file r1.log)" in warning, warning
    assert "or two runs of one manifest logged the same text at one start: check both files before --apply" in warning
    store = Store(db)
    try:
        said = _cli_twice(create_app(store), monkeypatch, capsys)
    finally:
        store.close()
    assert "(node node-1, file r2.log) is run" in said and "(node node-1, file r1.log), the same capture" in said, said
    assert "else the first stored" in said and "check both files before --apply" in said, said


def _cli_twice(app: FastAPI, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    """What `podtax imports-twice --campaign c` prints against `app`, served."""
    with serve(app) as url:
        monkeypatch.setenv("PODTAX_API_URL", url)
        capsys.readouterr()
        assert main(["imports-twice", "--campaign", "c"]) == 0
    return " ".join(capsys.readouterr().out.split())


def test_an_older_analyzer_without_the_kept_file_is_said_too_old(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """An analyzer before ce6e560d sends no kept_imported_from: the CLI says it cannot name the kept file (review
    r13: it printed 'file ?'). Faithful stand-in, labelled: no older analyzer runs from this tree, so a one-route app
    answers GET /api/imports/twice with the real find's rows less that field, as the older analyzer's did."""
    db, other = tmp_path / "podtax.duckdb", tmp_path / "other.duckdb"
    _store(db, _events(tmp_path / "a", "m.csv", {"r1.log": FATAL}, [f"r1.log,node-1,host,{CPU},2024-03-01,"]))
    _store(other, _events(tmp_path / "b", "m.csv", {"r2.log": FATAL}, [f"r2.log,node-1,host,{CPU},2024-03-01,"]))
    _beside(db, [other])
    older = FastAPI()

    @older.get("/api/imports/twice")
    def twice(campaign: str | None = None) -> list[dict[str, Any]]:
        con = duckdb.connect(str(db), read_only=True)
        try:
            return [{k: v for k, v in row.items() if k != "kept_imported_from"}
                    for row in imports_twice.find(con, campaign)]
        finally:
            con.close()

    said = _cli_twice(older, monkeypatch, capsys)
    assert "(node node-1, file r2.log) is run" in said, said
    assert "(node node-1, kept file: the analyzer is too old to say), the same capture" in said, said
    assert "file ?" not in said, said
