"""Importing again, into a database an older podtax made, a manifest whose node names differ in case.

Three podtax generations derived an import's run id from the node spelled differently: before 6de8b23 as the
manifest wrote it (and stored `Node-1` so), 6de8b23 to 16ce8b7 in lowercase, since 7daa8f2 as written again (stored
lowercase). The same manifest imported by another generation, or written in lowercase as podtax's node-name warning
asks, gets other run ids: the analyzer stored each run a second time and each cell counted it twice (review r5,
H1: 4 runs instead of 2, flagged OVERLAP). The analyzer now recognises an imported run it holds by campaign,
imported file, env, node in any case, start time and log text (review r11: the file text alone merged other logs),
whatever its run id, and keeps the stored one. The importer's events, the
parser's derivation and the analyzer's store on a real DuckDB file."""

from __future__ import annotations

import hashlib
import logging
import shutil
from pathlib import Path

import duckdb
import pytest
from podtax.cli import importer
from podtax.cli.manifest import read_manifest
from podtax_analyzer.score_cache import ScoreCache
from podtax_analyzer.scores import node_scores
from podtax_analyzer.store import Store
from podtax_parser.service import derive_all

from tests.integration.importing import CORPUS, ENVS, HEADER


def _manifest(folder: Path, nodes: tuple[str, str], files: tuple[str, str] = ("host.log", "kubernetes.log")) -> Path:
    for file in files:
        shutil.copyfile(CORPUS, folder / file)
    path = folder / f"m-{'-'.join(nodes)}-{'-'.join(files)}.csv"
    path.write_text(HEADER + "".join(f"{file},{node},{env},sysbench-cpu,threads=1 max_prime=100000 events=200 "
                                     f"time=0,2024-03-01T1{k}:00:00Z,\n"
                                     for k, (file, node, env) in enumerate(zip(files, nodes, ENVS))))
    return path


def _id(campaign: str, file: str, node: str, env: str) -> str:
    return "import-" + hashlib.sha256("\x1f".join((campaign, file, node, env)).encode()).hexdigest()[:24]


def _events(manifest: Path, generation: str) -> list:
    """The raw-log events `generation` of podtax import built from `manifest`: 'pre' (before 6de8b23: the node and
    the id as written), '16ce8b7' (node and id lowercase), 'now' (node lowercase, id as written)."""
    out = []
    for i, row in enumerate(read_manifest(manifest)):
        event = importer.build_event(row, "old", i)
        written = row.spelled or row.node
        node, id_from = {"pre": (written, written), "16ce8b7": (row.node, row.node), "now": (row.node, written)}[
            generation]
        run_id = _id("old", row.file, id_from, row.env)
        run = event.data.run.model_copy(update={"node": node, "run_id": run_id})
        out.append(event.model_copy(update={"id": f"{run_id}.log", "data": event.data.model_copy(update={"run": run})}))
    return out


def _store(db: Path, raws: list, results_first: bool = False) -> None:
    """What the parser and the analyzer make of these raw-log events, written to the DuckDB file `db` (in one batch,
    or the results in a batch before their raw logs)."""
    outcomes, poison = derive_all(raws)
    assert not poison
    store = Store(db)
    try:
        for batch in ([outcomes, raws] if results_first else [[*raws, *outcomes]]):
            store.write_batch(batch)
    finally:
        store.close()


def _held(db: Path) -> tuple[list[tuple[str, str, str, list[str]]], int, int]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        runs = con.execute("SELECT node, env, run_id, flags FROM runs ORDER BY env, node").fetchall()
        logs = con.execute("SELECT count(*) FROM raw_logs").fetchone()[0]
        metrics = con.execute("SELECT count(DISTINCT run_id) FROM metrics").fetchone()[0]
    finally:
        con.close()
    return runs, logs, metrics


CASES = [  # (generation that stored first, its manifest's nodes, the current manifest's nodes)
    pytest.param("pre", ("Node-1", "Node-1"), ("Node-1", "Node-1"), id="pre-6de8b23-same-manifest"),
    pytest.param("16ce8b7", ("Node-1", "Node-1"), ("Node-1", "Node-1"), id="A-16ce8b7-same-manifest"),
    pytest.param("pre", ("Node-1", "Node-1"), ("node-1", "node-1"), id="B-pre-then-lowercase-as-warned"),
    pytest.param("16ce8b7", ("Node-1", "Node-1"), ("node-1", "node-1"), id="B-16ce8b7-then-lowercase"),
    pytest.param("pre", ("Node-1", "Node-1"), ("Node-1", "node-1"), id="C-pre-then-mixed"),
    pytest.param("16ce8b7", ("Node-1", "Node-1"), ("Node-1", "node-1"), id="C-16ce8b7-then-mixed"),
    pytest.param("now", ("node-1", "node-1"), ("Node-1", "Node-1"), id="now-lowercase-then-capitals"),
]


@pytest.mark.parametrize("results_first", [False, True], ids=["one-batch", "results-first"])
@pytest.mark.parametrize(("generation", "first", "again"), CASES)
def test_a_reimport_stores_nothing_twice(generation: str, first: tuple[str, str], again: tuple[str, str],
                                         results_first: bool, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = tmp_path / "podtax.duckdb"
    older = _events(_manifest(tmp_path, first), generation)
    _store(db, older)
    before = _held(db)
    assert len(before[0]) == 2 and before[1:] == (2, 2), before
    with caplog.at_level(logging.WARNING, "podtax.analyzer.store"):
        _store(db, _events(_manifest(tmp_path, again), "now"), results_first)
        _store(db, _events(_manifest(tmp_path, again), "now"), results_first)  # a redelivery: logged once at most
    assert _held(db) == before  # the runs the older podtax stored, as it stored them (no OVERLAP flag)
    said = [r.getMessage() for r in caplog.records if "dropped as duplicates" in r.getMessage()]
    fresh = {e.data.run.run_id for e in _events(_manifest(tmp_path, again), "now")} - {e.data.run.run_id
                                                                                        for e in older}
    assert len(said) == (1 if fresh else 0), said
    if fresh:
        assert said[0].startswith(f"{len(fresh)} imported raw log(s) dropped"), said


def test_other_nodes_and_live_runs_are_kept_other_file_names_are_not(tmp_path: Path) -> None:
    """Another node, and a run podtax ran, are other runs; the same logs at the same start times under other file
    names are the same runs (pA2, session 52: they were kept, each counted twice)."""
    db = tmp_path / "podtax.duckdb"
    _store(db, _events(_manifest(tmp_path, ("Node-1", "Node-1")), "16ce8b7"))
    _store(db, _events(_manifest(tmp_path, ("Node-2", "Node-2")), "now"))  # another node
    _store(db, _events(_manifest(tmp_path, ("Node-1", "Node-1"), ("h2.log", "k2.log")), "now"))  # copies: dropped
    live = []
    for event in _events(_manifest(tmp_path, ("node-1", "node-1")), "now"):  # a run podtax ran: no imported file
        run = event.data.run.model_copy(update={"run_id": "live-" + event.data.run.run_id})
        live.append(event.model_copy(update={"id": f"{run.run_id}.log", "data": event.data.model_copy(
            update={"run": run, "imported_from": None})}))
    _store(db, live)
    runs, logs, metrics = _held(db)
    assert (len(runs), logs, metrics) == (6, 6, 6), runs
    assert sum(r[2].startswith("live-") for r in runs) == 2


def _day(folder: Path, log: str, node: str, started: str) -> list:
    """A manifest in its own folder naming `host.log` (the corpus log `log`), as the current podtax imports it."""
    folder.mkdir()
    shutil.copyfile(CORPUS.parent / log, folder / "host.log")
    (folder / "m.csv").write_text(HEADER + f"host.log,{node},host,sysbench-cpu,threads=1 max_prime=100000 events=200 "
                                           f"time=0,{started},\n")
    return _events(folder / "m.csv", "now")


ONE_T, TWO_T = "sysbench-cpu-prime100000-1t.log", "sysbench-cpu-prime100000-2t.log"


@pytest.mark.parametrize(("second_log", "second_start"), [
    pytest.param(TWO_T, "2024-03-02T10:00:00Z", id="other-log-other-day"),  # review r11, M1
    pytest.param(ONE_T, "2024-03-02T10:00:00Z", id="same-log-other-day"),
    pytest.param(TWO_T, "2024-03-01T10:00:00Z", id="other-log-same-start"),
])
def test_the_same_file_name_in_another_manifest_is_another_run(second_log: str, second_start: str,
                                                                tmp_path: Path) -> None:
    """day1/m.csv and day2/m.csv both name host.log (node-1, then Node-1): the same campaign, file text, env and
    node, but not the same capture, so both runs are kept (the second was dropped as a duplicate)."""
    db = tmp_path / "podtax.duckdb"
    _store(db, _day(tmp_path / "day1", ONE_T, "node-1", "2024-03-01T10:00:00Z"))
    _store(db, _day(tmp_path / "day2", second_log, "Node-1", second_start))
    runs, logs, metrics = _held(db)
    assert (len(runs), logs, metrics) == (2, 2, 2), runs


def _scores(scores: list) -> dict[tuple[str, ...], tuple[int, float]]:
    return {(s.cluster, s.node, s.env, s.test, s.params_key, s.metric): (s.n, s.median) for s in scores}


def test_a_result_stored_before_its_duplicate_raw_log_leaves_no_trace(tmp_path: Path) -> None:
    """Results first: the duplicate's result is stored (and flags the kept run OVERLAP, one node at one time), then
    its raw log shows it a duplicate and it is deleted. The kept run loses the flag naming it, and a score cache that
    counted it agrees with the database again (it kept counting it: n = 2 where the database holds 1 run)."""
    db = tmp_path / "podtax.duckdb"
    _store(db, _events(_manifest(tmp_path, ("Node-1", "Node-1")), "16ce8b7"))
    before = _held(db)
    raws = _events(_manifest(tmp_path, ("Node-1", "Node-1")), "now")
    outcomes, _ = derive_all(raws)
    store = Store(db)
    cache = ScoreCache()
    try:
        changed = store.write_batch(outcomes)
        assert _scores(cache.update(store, changed))  # it counts the duplicates for now
        changed = store.write_batch(raws)
        cache.update(store, changed)
        with store.cursor() as con:
            stored = _scores(node_scores(con))
        cached = {k: v for k, s in cache.keys.items() if (v := _scores([cache.score(k)]).get(k)) is not None}
    finally:
        store.close()
    assert cached == {k: v for k, v in stored.items() if k in cached} and cached, (cached, stored)
    assert {v[0] for v in stored.values()} == {1}
    assert {r[2] for r in before[0]} <= changed  # the kept runs' scores are published again
    assert _held(db) == before, _held(db)


@pytest.mark.parametrize("order", ["one-batch", "results-first", "raw-logs-first"])
@pytest.mark.parametrize("stored", ["failed", "no-runs-row"])
@pytest.mark.parametrize("generation", ["pre", "16ce8b7"])
def test_a_reimport_recovers_the_result_the_stored_copy_lacks(generation: str, stored: str, order: str,
                                                              tmp_path: Path) -> None:
    """Review r5 M: the stored copy of a capture failed to parse (an older parser) or lost its runs row; the user
    imports it again with a podtax that reads the log. The arriving copy is a duplicate and dropped, but its result
    is the capture's only one: it is stored under the kept run id and node (it was dropped, or deleted after being
    stored when the results came first: the capture had no result at all), whatever the order of arrival."""
    db = tmp_path / "podtax.duckdb"
    _store(db, _events(_manifest(tmp_path, ("Node-1", "Node-1")), generation))
    before = _held(db)
    again = ("node-1", "node-1") if generation == "pre" else ("Node-1", "Node-1")  # other run ids than stored
    con = duckdb.connect(str(db))
    try:
        con.execute("DELETE FROM metrics")
        con.execute("UPDATE runs SET status = 'failed', failure_stage = 'parse', failure_reason = 'parse'"
                    if stored == "failed" else "DELETE FROM runs")
    finally:
        con.close()
    for _ in range(2):  # a redelivery changes nothing
        raws = _events(_manifest(tmp_path, again), "now")
        outcomes, _ = derive_all(raws)
        store = Store(db)
        try:
            for batch in {"one-batch": [[*raws, *outcomes]], "results-first": [outcomes, raws],
                          "raw-logs-first": [raws, outcomes]}[order]:
                store.write_batch(batch)
        finally:
            store.close()
        assert _held(db) == before, _held(db)
        con = duckdb.connect(str(db), read_only=True)
        try:
            assert con.execute("SELECT DISTINCT status FROM runs").fetchall() == [("ok",)]
            assert con.execute("SELECT count(*) FROM imported_duplicates").fetchone()[0] == 2
        finally:
            con.close()
