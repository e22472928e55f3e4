"""The analyzer binds its API socket before it opens DuckDB (so a port in use is named at start); when the file could
not be opened (another process holds it, it is cut short) the bound socket was left open: the
port stayed held by a serve() that had ended until the socket was collected (review hR). Real nats-server, the
real serve()."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from podtax import config, natsserver
from podtax.bus import Bus
from podtax_analyzer.service import serve

HOLD = "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(300)"


async def test_a_database_that_cannot_be_opened_leaves_the_api_port_free(nats_url: str, tmp_path: Path) -> None:
    db = tmp_path / "podtax.duckdb"  # held by another process: DuckDB locks it (one writer process per file)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(db)], stdout=subprocess.PIPE, text=True)
    port = natsserver.free_port()
    settings = config.load(config.AnalyzerSettings, nats_url=nats_url, analyzer_db=db, analyzer_port=port)
    bus = await Bus.connect(nats_url, "test/analyzer")
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            with pytest.raises(config.ConfigError, match="PODTAX_ANALYZER_DB"):
                await serve(settings, bus, asyncio.Event())
            gc.collect()
    finally:
        await bus.close()
        holder.kill()
        holder.wait()
    # a socket left open is closed when collected, with this warning (a process that goes on holds the port till then)
    left_open = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning) and f", {port})" in
                 str(w.message)]
    assert left_open == [], left_open
