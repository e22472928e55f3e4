"""`podtax retire` against the running analyzer: the scores bucket the scheduler reads follows. After the user retires
n1's runs before it changed, its published score counts only the runs since (not CONFOUNDED), the score of n3, every
run of which is older, leaves the bucket, and `--undo` puts both back: the bucket equals scores.node_scores over the
DuckDB file each time. The real analyzer service, NATS, the CLI's main(argv) over HTTP with the bearer token."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest
from podtax import natsserver
from podtax.bus import Bus

from tests.analysis.test_retired_runs import CHANGED, history
from tests.integration.harness import run_cli, services, wait_for
from tests.integration.test_score_publication import _until_equal

TOKEN = "retire-publication-token"


async def _listening(port: int) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            await asyncio.to_thread(httpx.get, f"http://127.0.0.1:{port}/healthz", timeout=5)
            return
        except httpx.TransportError:  # not listening yet
            assert time.monotonic() < deadline, "the analyzer's API never answered"
            await asyncio.sleep(0.2)


def _nodes(published: dict[str, dict]) -> dict[str, tuple[int, list[str]]]:
    return {doc["node"]: (doc["n"], doc["flags"]) for doc in published.values()}


async def test_retire_and_undo_republish_the_nodes_scores(nats_url: str, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    port = natsserver.free_port()
    monkeypatch.setenv("PODTAX_API_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("PODTAX_API_TOKEN", TOKEN)
    runs = history()
    async with services(nats_url, tmp_path) as s:
        await s.analyzer(port=port, api_token=TOKEN)
        bus = await Bus.connect(nats_url, "test")
        try:
            await bus.publish_many(runs)
            await wait_for(lambda: s.query("SELECT count(*) FROM runs")[0][0] == len(runs), 30, "the runs")
            first = _nodes(await _until_equal(bus, s.db, "the runs' scores"))
            await _listening(port)
            assert await run_cli("retire", "n1", "--before", CHANGED.isoformat()) == 0
            assert await run_cli("retire", "n3", "--before", CHANGED.isoformat()) == 0
            retired = _nodes(await _until_equal(bus, s.db, "after the retirements"))
            assert s.query("SELECT count(*) FROM runs")[0][0] == len(runs)  # no run deleted
            assert await run_cli("retire", "n1", "--undo") == 0
            assert await run_cli("retire", "n3", "--undo") == 0
            undone = _nodes(await _until_equal(bus, s.db, "after the undos"))
        finally:
            await bus.close()
    assert first["n1"][0] == 14 and "CONFOUNDED" in first["n1"][1], first
    assert retired["n1"] == (8, []) and "n3" not in retired and retired["n2"] == first["n2"], retired
    assert undone == first
