"""`podtax up` waits for the analyzer's /healthz (up_children.wait_started). An analyzer that answered 503 because
its storage failed (audit: a real analyzer file cut to 300 KB: the API answers, every write fails) was reported
30 s later as 'the analyzer did not answer'. Now up says at once what /healthz said. The analyzer here is the real
one in-process: its API (create_app) on a real DuckDB file cut short, whose first batch fails in
Analyzer.handle_batch, served by uvicorn; only the process around it is the test's (under `podtax up` the first
write, the host agent's facts, may come after a first 200, so the real entry point cannot show it every time)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import uvicorn
from podtax import events, natsserver
from podtax.bus import Unavailable
from podtax.cli.up_children import Child, wait_started
from podtax.config import AnalyzerSettings
from podtax_analyzer.api import create_app
from podtax_analyzer.service import Analyzer
from podtax_analyzer.store import Store


def _failure(i: int) -> events.RunFailedV1:
    run = events.RunSpec(run_id=f"r{i}", campaign="c", node="n", env="host", test="sysbench-cpu", params={},
                         sequence=0)
    now = datetime.now(UTC)
    return events.run_failed(events.RunFailed(run=run, stage="agent", reason="timeout", detail="x",
                                              started_at=now, ended_at=now), "tests")


@contextlib.contextmanager
def _serve(store: Store, analyzer: Analyzer, connected: bool) -> Iterator[str]:
    app = create_app(store, None)
    app.state.storage_problem = lambda: analyzer.storage_problem  # as service.serve wires them
    app.state.nats_connected = lambda: connected
    port = natsserver.free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join()


@pytest.fixture
def damaged(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The analyzer on a file cut short after its first 300 KB: it opens and answers, its writes fail."""
    path = tmp_path / "podtax.duckdb"
    store = Store(path)
    store.write_batch([_failure(i) for i in range(200)])
    store.close()
    os.truncate(path, 300_000)
    store = Store(path)
    analyzer = Analyzer(AnalyzerSettings(analyzer_db=path), bus=None, store=store)  # type: ignore[arg-type] - handle_batch needs no bus
    with pytest.raises(Unavailable, match="the file is damaged"):
        asyncio.run(analyzer.handle_batch([_failure(1000)]))
    try:
        with _serve(store, analyzer, connected=True) as url:
            yield url, path
    finally:
        store.close()


def test_up_says_at_once_what_the_analyzers_healthz_said(damaged: tuple[str, Path], tmp_path: Path) -> None:
    url, path = damaged
    log = tmp_path / "analyzer.log"
    failed = wait_started(url, [Child("analyzer", [], {}, log)], 20)
    assert failed is not None
    message, code = failed
    assert code == 1
    assert message.startswith(f"the analyzer answers on {url}, but its /healthz says storage unavailable: storing to "
                              f"{path.name} failed (IOException: "), message  # /healthz names no folder
    assert "the file is damaged (cut short or overwritten)" in message and message.endswith(f"; see {log}"), message


def test_a_lasting_nats_disconnection_is_said_at_the_end(tmp_path: Path) -> None:
    store = Store(tmp_path / "podtax.duckdb")
    settings = AnalyzerSettings(analyzer_db=tmp_path / "podtax.duckdb")
    analyzer = Analyzer(settings, bus=None, store=store)  # type: ignore[arg-type] - no batch here
    try:
        with _serve(store, analyzer, connected=False) as url:
            assert wait_started(url, [], 1) == (
                f"the analyzer answers on {url}, but its /healthz says nats disconnected; see its log", 1)
    finally:
        store.close()
