"""The analyzer's DuckDB file removed while a batch is being written (review r5 M1, real DuckDB, in-process). Its
one checkpoint ran from /healthz's thread while the batch's transaction was open: that commit went to the WAL after
it, so the copy made as /healthz says lacked it (closing emptied the WAL into the removed file). And a reparse's
write (Store.replace_results) went into the removed file unchecked."""

from __future__ import annotations

import re
import shutil
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest
from podtax import config
from podtax.bus import Unavailable
from podtax_analyzer.service import Analyzer
from podtax_analyzer.store import Store

from tests.faults.test_analyzer_file_removed import failed


def _settings(db: Path) -> config.AnalyzerSettings:
    """The analyzer's settings for `db` (Analyzer makes its score cache from them since 1ea39eee)."""
    return config.load(config.AnalyzerSettings, analyzer_db=db)


class Spy:
    """The store's write lock, telling when a thread other than `owner` asks for it."""

    def __init__(self, lock: Any) -> None:
        self.lock, self.owner, self.asked = lock, 0, threading.Event()

    def __enter__(self) -> Any:
        if threading.get_ident() != self.owner:
            self.asked.set()
        return self.lock.__enter__()

    def __exit__(self, *exc: object) -> Any:
        return self.lock.__exit__(*exc)


def until(what: str, check: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_a_batch_open_at_the_checkpoint_is_in_the_copy(tmp_path: Path) -> None:
    db = tmp_path / "podtax.duckdb"
    store = Store(db)
    store.write_batch([failed("before")])
    analyzer = Analyzer(_settings(db), None, store)  # type: ignore[arg-type] - only its file check is used
    spy = store._writing = Spy(getattr(store, "_writing", threading.RLock()))  # type: ignore[attr-defined]
    opened, release = threading.Event(), threading.Event()

    def batch() -> None:  # a batch's transaction, open when the file is removed and /healthz looks
        spy.owner = threading.get_ident()
        with store.transaction() as con:
            con.execute("INSERT INTO campaigns VALUES ('during', ?, '{}')", [datetime.now(UTC)])
            opened.set()
            release.wait(30)

    writer = threading.Thread(target=batch)
    writer.start()
    until("the batch's transaction open", opened.is_set)
    db.unlink()
    said: list[str | None] = []
    health = threading.Thread(target=lambda: said.append(analyzer.file_moved()))
    health.start()
    until("the check done, or waiting for the batch", lambda: not health.is_alive() or spy.asked.is_set())
    release.set()
    writer.join(30)
    health.join(30)
    assert said and said[0] and "was removed" in said[0], said
    source = re.search(r"cp (/proc/\d+/fd/\d+) ", said[0])
    assert source, said[0]
    shutil.copyfile(source[1], db)  # what /healthz says to do
    store.close()
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT campaign FROM campaigns").fetchall() == [("during",)]
        assert con.execute("SELECT run_id FROM runs").fetchall() == [("before",)]
    finally:
        con.close()


def test_a_reparse_does_not_write_into_a_removed_file(tmp_path: Path) -> None:
    db = tmp_path / "podtax.duckdb"
    store = Store(db)
    try:
        store.write_batch([failed("before")])
        analyzer = Analyzer(_settings(db), None, store)  # type: ignore[arg-type] - no bus used
        db.unlink()
        with pytest.raises(Unavailable, match="was removed"):
            store.replace_results([failed("before")])
        assert analyzer.file_moved()
    finally:
        store.close()
