"""A database that already holds an imported run twice (podtax 6de8b23 to 7daa8f2: the same manifest imported as
`Node-1` by an older podtax and again as `node-1`, two run ids; the analyzer drops such a copy on arrival only since
65f442e) is left as it is, and its report counted the capture on two nodes (a cell each, one run a side each) and the
scheduler ranked node-1 by the copy; the report now says so. `podtax imports-twice` lists them and changes nothing;
with --apply it takes each once: the copy spelled Node-1 goes (runs, metrics, raw log: the kept run's log byte for
byte), the report has one cell with both sides, and the scores bucket holds no score of the copy. The real CLI
against the running analyzer and nats-server, on a DuckDB file holding the rows both generations stored."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import duckdb
import httpx
import pytest
from podtax import natsserver
from podtax.bus import Bus

from tests.integration.harness import run_cli, services
from tests.integration.test_import_old_node_case import _events, _manifest, _store
from tests.integration.test_score_publication import _until_equal

TOKEN = "a-test-token-of-16-or-more"


def _stored_twice(tmp: Path, generations: tuple[str, str] = ("pre", "16ce8b7")) -> Path:
    """The analyzer's file as podtax stored the same manifest before 6de8b23 (Node-1) and in 6de8b23 to 16ce8b7
    (node-1, ids from it): the second generation's rows are written beside the first's, as that analyzer did."""
    db, other = tmp / "podtax.duckdb", tmp / "other.duckdb"
    _store(db, _events(_manifest(tmp, ("Node-1", "Node-1")), generations[0]))
    _store(other, _events(_manifest(tmp, ("Node-1", "Node-1")), generations[1]))
    return _beside(db, [other])


def _beside(db: Path, others: list[Path]) -> Path:
    """`db` with the rows of `others` written beside its own, as one analyzer storing them all did."""
    con = duckdb.connect(str(db))
    try:
        for k, other in enumerate(others):
            con.execute(f"ATTACH '{other.as_posix()}' AS o{k} (READ_ONLY)")
            for table in ("raw_logs", "runs", "metrics"):
                con.execute(f"INSERT INTO {table} SELECT * FROM o{k}.{table}")
    finally:
        con.close()
    return db


async def _cells(port: int) -> tuple[list[tuple[str, int, int]], list[str]]:
    """The campaign's cells (node, host runs, pod runs) and its warnings, asked from a thread: the analyzer serves
    on this loop."""
    url = f"http://127.0.0.1:{port}/api/campaigns/old/comparisons"
    deadline = time.monotonic() + 30
    while True:
        try:
            resp = await asyncio.to_thread(httpx.get, url, timeout=60)
            break
        except httpx.TransportError:  # not listening yet
            assert time.monotonic() < deadline, "the analyzer's API never answered"
            await asyncio.sleep(0.2)
    resp.raise_for_status()
    report = resp.json()
    return sorted((c["node"], c["n_host"], c["n_pod"]) for c in report["cells"]
                  if c["metric"] == "events_per_second"), report["warnings"]


async def test_imports_twice_lists_then_takes_each_once(nats_url: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    db = _stored_twice(tmp_path)
    port = natsserver.free_port()
    monkeypatch.setenv("PODTAX_API_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("PODTAX_API_TOKEN", TOKEN)
    async with services(nats_url, tmp_path) as s:
        assert s.db == db
        await s.analyzer(port=port, api_token=TOKEN)
        cells, warnings = await _cells(port)
        assert cells == [("Node-1", 1, 1), ("node-1", 1, 1)]  # one capture, counted on two nodes ...
        assert [w for w in warnings if "stored twice" in w and "podtax imports-twice --campaign old" in w], warnings

        capsys.readouterr()
        assert await run_cli("imports-twice") == 0  # a dry run: lists, changes nothing
        said = capsys.readouterr().out
        assert "2 imported run(s) are stored twice" in said and "--apply" in said, said
        assert s.query("SELECT count(*) FROM runs")[0][0] == 4

        assert await run_cli("imports-twice", "--apply") == 0
        said = capsys.readouterr().out
        assert "took 2 imported run(s) once" in said and "reparse" not in said, said  # nothing moved
        assert await _cells(port) == ([("node-1", 1, 1)], [])  # one cell, both sides, nothing to warn of
        assert s.query("SELECT DISTINCT node FROM raw_logs") == [("node-1",)]
        assert s.query("SELECT count(*) FROM imported_duplicates")[0][0] == 2
        bus = await Bus.connect(nats_url, "test")
        try:
            published = await _until_equal(bus, s.db, "after imports-twice --apply")
        finally:
            await bus.close()
        assert {doc["node"] for doc in published.values()} == {"node-1"}

        assert await run_cli("imports-twice") == 0  # nothing left
        assert "no imported run is stored twice" in capsys.readouterr().out



async def test_imports_twice_keeps_the_result_the_dropped_copy_held(nats_url: str, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The copy kept is chosen by the node's spelling (node-1), but the capture's only result may be the other
    copy's (the kept copy's parse failed, or its result was lost): --apply deleted it, and the group had no result.
    Now the dropped copy's outcome goes to the run kept (the logs are the same bytes): here node-1's host copy failed
    and its pod copy has no runs row."""
    db = _stored_twice(tmp_path)
    con = duckdb.connect(str(db))
    try:
        host, pod = (con.execute("SELECT run_id FROM raw_logs WHERE node = 'node-1' AND env = ?", [env]).fetchone()[0]
                     for env in ("host", "kubernetes"))
        con.execute("UPDATE runs SET status = 'failed', failure_reason = 'parse' WHERE run_id = ?", [host])
        con.execute("DELETE FROM metrics WHERE run_id IN (?, ?)", [host, pod])
        con.execute("DELETE FROM runs WHERE run_id = ?", [pod])
        results = con.execute("SELECT count(*) FROM metrics").fetchone()[0]
    finally:
        con.close()
    port = natsserver.free_port()
    monkeypatch.setenv("PODTAX_API_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("PODTAX_API_TOKEN", TOKEN)
    async with services(nats_url, tmp_path) as s:
        await s.analyzer(port=port, api_token=TOKEN)
        assert (await _cells(port))[0] == [("Node-1", 1, 1)]
        assert await run_cli("imports-twice", "--apply") == 0
        said = capsys.readouterr().out
        cells = await _cells(port)
        runs = s.query("SELECT run_id, node, env, status FROM runs ORDER BY env")
        metrics = s.query("SELECT count(*) FROM metrics")[0][0]
    assert cells == ([("node-1", 1, 1)], []), cells  # before: ([], [])
    assert runs == [(host, "node-1", "host", "ok"), (pod, "node-1", "kubernetes", "ok")], runs
    assert metrics == results, (metrics, results)
    # review r5 L3: the moved rows carry the names and flags of the parser that stored them (an older podtax)
    assert "took 2 imported run(s) once" in said, said
    assert "2 kept run(s) took their copy's outcome" in said and "podtax reparse --campaign old" in said, said


async def _report_and_cli(nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str]) -> tuple[list[tuple[str, int, int]], list[str], str]:
    """The campaign's cells and warnings from the analyzer on tmp_path's file, and what `podtax imports-twice` says."""
    port = natsserver.free_port()
    monkeypatch.setenv("PODTAX_API_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("PODTAX_API_TOKEN", TOKEN)
    async with services(nats_url, tmp_path) as s:
        await s.analyzer(port=port, api_token=TOKEN)
        cells, warnings = await _cells(port)
        capsys.readouterr()
        assert await run_cli("imports-twice") == 0
        return cells, warnings, capsys.readouterr().out


async def test_copies_under_one_spelling_are_said_counted_twice_on_that_node(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """6de8b23 to 16ce8b7 (id and node in lowercase) and 7daa8f2 to 65f442e (node in lowercase, id from the node as
    written) both stored node-1: the report and the CLI said "counted on two nodes ... under node node-1 and
    node-1". Now: counted twice on node node-1."""
    _stored_twice(tmp_path, ("16ce8b7", "now"))
    cells, warnings, said = await _report_and_cli(nats_url, tmp_path, monkeypatch, capsys)
    assert cells == [("node-1", 2, 2)], cells
    [warning] = [w for w in warnings if "stored twice" in w]
    assert "counted twice on node node-1: an older podtax stored the same capture twice under that node" in warning
    assert "two nodes" not in warning and "node-1 and node-1" not in warning, warning
    assert "2 imported run(s) are stored twice and counted twice on node node-1;" in said, said


def _both_kinds(tmp: Path) -> Path:
    """node-1's captures stored as Node-1 (before 6de8b23) and node-1 (6de8b23 to 16ce8b7), node-2's twice as node-2
    (6de8b23 to 16ce8b7 and 7daa8f2 to 65f442e): copies of both kinds in one campaign."""
    stores = []
    for k, (nodes, generation, files) in enumerate([(("Node-1", "Node-1"), "pre", ("a.log", "b.log")),
                                                    (("Node-1", "Node-1"), "16ce8b7", ("a.log", "b.log")),
                                                    (("Node-2", "Node-2"), "16ce8b7", ("c.log", "d.log")),
                                                    (("Node-2", "Node-2"), "now", ("c.log", "d.log"))]):
        folder = tmp / f"g{k}"
        folder.mkdir()
        stores.append(folder / "podtax.duckdb")
        _store(stores[-1], _events(_manifest(folder, nodes, files), generation))
    return _beside(stores[0].rename(tmp / "podtax.duckdb"), stores[1:])


async def test_copies_of_both_kinds_are_said_alike_by_the_report_and_the_cli(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Review r5 L1: with copies under two spellings (node-1) and under one spelling twice (node-2), the report's
    warning described only the first copy listed ('counted twice on node node-2') where the CLI said 'counted on two
    nodes or twice on node node-2'. Both say the latter now."""
    _both_kinds(tmp_path)
    _, warnings, said = await _report_and_cli(nats_url, tmp_path, monkeypatch, capsys)
    [warning] = [w for w in warnings if "stored twice" in w]
    assert "4 imported run(s) are stored twice and counted on two nodes or twice on node node-2;" in said, said
    assert "4 imported run(s) of this campaign are stored twice, counted on two nodes or twice on node node-2" in \
        warning, warning
