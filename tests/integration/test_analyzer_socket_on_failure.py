"""The analyzer binds its API socket before it opens DuckDB (so a port in use is named at start); when the file could
not be opened (another process holds it, it is cut short) the bound socket was left open: the
port stayed held by a serve() that had ended until the socket was collected (review hR). So it was, with the store
open, when anything else failed before uvicorn took the socket (review hR2). Real nats-server, the real serve()."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import warnings
from pathlib import Path

import duckdb
import pytest
from podtax import config, natsserver
from podtax.bus import Bus
from podtax_analyzer import service
from podtax_analyzer.service import serve
from podtax_analyzer.store import Store

from tests.e2e.test_up_unhealthy_analyzer import _failure

HOLD = "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(300)"


async def _left_open(nats_url: str, db: Path, said: str) -> list[str]:
    """serve() on `db` fails saying `said`: the ResourceWarnings of sockets it left bound to its port."""
    port = natsserver.free_port()
    settings = config.load(config.AnalyzerSettings, nats_url=nats_url, analyzer_db=db, analyzer_port=port)
    bus = await Bus.connect(nats_url, "test/analyzer")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            with pytest.raises((config.ConfigError, RuntimeError), match=said):
                await serve(settings, bus, asyncio.Event())
            gc.collect()
    finally:
        await bus.close()
    # a socket left open is closed when collected, with this warning (a process that goes on holds the port till then)
    return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning) and f", {port})" in
            str(w.message)]


async def test_a_database_that_cannot_be_opened_leaves_the_api_port_free(nats_url: str, tmp_path: Path) -> None:
    db = tmp_path / "podtax.duckdb"  # held by another process: DuckDB locks it (one writer process per file)
    with subprocess.Popen([sys.executable, "-c", HOLD, str(db)], stdout=subprocess.PIPE, text=True) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            left_open = await _left_open(nats_url, db, "PODTAX_ANALYZER_DB")
        finally:
            holder.kill()
    assert left_open == [], left_open


async def test_a_database_cut_short_leaves_the_api_port_free(nats_url: str, tmp_path: Path) -> None:
    db = tmp_path / "podtax.duckdb"  # DuckDB opens it (its catalog is whole); cut_short says it is damaged
    store = Store(db)
    store.write_batch([_failure(i) for i in range(2000)])
    store.close()
    os.truncate(db, 300_000)
    assert await _left_open(nats_url, db, r"PODTAX_ANALYZER_DB: .* \(cut short: 300,000 bytes") == []


async def test_a_failure_before_the_api_serves_closes_the_socket_and_the_store(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the store opened and whole, then something else fails before uvicorn takes the socket (here the API's app)
    stores: list[Store] = []

    def failing_app(store: Store, *args: object) -> None:
        stores.append(store)
        raise RuntimeError("the API could not be made")

    monkeypatch.setattr(service, "create_app", failing_app)
    left_open = await _left_open(nats_url, tmp_path / "podtax.duckdb", "the API could not be made")
    assert left_open == [], left_open
    with pytest.raises(duckdb.ConnectionException):  # closed: the file is free for another process
        stores[0].con.execute("SELECT 1")
