"""Importing again, into a database an older podtax made, a manifest that writes a node name with capitals.

Before 6de8b23 `podtax import` kept a row's node as the manifest wrote it (`Node-1`) and derived the run id from it;
since then the node is kept in lowercase (`node-1`). When the run id followed the lowercase name, the same manifest
imported again got new run ids, so the analyzer stored every run a second time (under node-1) beside the runs it
already held (under Node-1): each cell counted its runs twice. The run id stays the one the manifest's own
spelling gives, so the analyzer recognises the runs it has. The importer's events, the parser's derivation and the
analyzer's store on a real DuckDB file."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import duckdb
from podtax.cli import importer
from podtax.cli.manifest import read_manifest
from podtax_analyzer.store import Store
from podtax_parser.service import derive_all

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "debian12-x86_64" / "sysbench-cpu-prime100000-1t.log"
HEADER = "file,node,env,test,params,started_at,tool_version\n"
ROWS = "".join(f"{env}.log,Node-1,{env},sysbench-cpu,threads=1 max_prime=100000 events=200 time=0,"
               f"2024-03-01T1{k}:00:00Z,\n" for k, env in enumerate(("host", "kubernetes")))


def _older_podtax_id(campaign: str, file: str, node: str, env: str) -> str:
    """The run id podtax import gave a row before 6de8b23 (the node as written)."""
    return "import-" + hashlib.sha256("\x1f".join((campaign, file, node, env)).encode()).hexdigest()[:24]


def _store(db: Path, raws: list) -> None:
    """What the parser and the analyzer make of these raw-log events, written to the DuckDB file `db`."""
    outcomes, poison = derive_all(raws)
    assert not poison
    store = Store(db)
    try:
        store.write_batch([*raws, *outcomes])
    finally:
        store.close()


def test_a_reimport_into_an_older_database_stores_nothing_twice(tmp_path: Path) -> None:
    for env in ("host", "kubernetes"):
        shutil.copyfile(CORPUS, tmp_path / f"{env}.log")
    manifest = tmp_path / "m.csv"
    manifest.write_text(HEADER + ROWS)
    db = tmp_path / "podtax.duckdb"
    rows = read_manifest(manifest)
    older = []  # the events an older podtax published: the node as written, the run id from it
    for i, row in enumerate(rows):
        event = importer.build_event(row, "old", i)
        run_id = _older_podtax_id("old", row.file, "Node-1", row.env)
        run = event.data.run.model_copy(update={"node": "Node-1", "run_id": run_id})
        older.append(event.model_copy(update={"id": f"{run_id}.log",
                                              "data": event.data.model_copy(update={"run": run})}))
    _store(db, older)
    _store(db, [importer.build_event(row, "old", i) for i, row in enumerate(read_manifest(manifest))])
    con = duckdb.connect(str(db), read_only=True)
    try:
        runs = con.execute("SELECT node, env, run_id FROM runs ORDER BY env").fetchall()
        logs = con.execute("SELECT count(*) FROM raw_logs").fetchone()[0]
    finally:
        con.close()
    assert runs == [("Node-1", env, _older_podtax_id("old", f"{env}.log", "Node-1", env))
                    for env in ("host", "kubernetes")], runs
    assert logs == 2
