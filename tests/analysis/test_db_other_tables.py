"""`--db` naming a DuckDB file whose tables are not the analyzer's (another program's, or an empty database): a
usage mistake, one line naming the file and the fix, exit 2. Before, `podtax report --db` printed the last line of
the analyzer's traceback ('error:        ^^^^^^^^', exit 1) and `podtax simulate --db` a traceback (exit 1).
Real DuckDB files, real CLI entry points (report runs the analyzer's command in a child process)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pytest
from analysis_synth import CellSpec, SideSpec, insert_cells, lognormal, open_db
from podtax.cli.main import main
from podtax_analyzer.service import open_store
from podtax_analyzer.store import Store

WORKLOAD = ("duration_s: 600\nclasses:\n  - {test: sysbench-cpu, params: threads=1, rate_per_s: 0.01, runtime_s: 60,"
            " requests: {cpu: \"1\", memory: 1Gi}}\n")
TABLES = {
    "no-runs-table": ["CREATE TABLE things (x INTEGER)"],  # 'Catalog Error: Table with name runs does not exist!'
    "runs-of-another-shape": ["CREATE TABLE runs (x INTEGER)", "INSERT INTO runs VALUES (1)"],  # 'Binder Error'
}
COMMANDS = {
    "report": lambda db, wl: ["report", "demo", "--db", str(db)],
    "simulate": lambda db, wl: ["simulate", "--campaign", "demo", "--workload", str(wl), "--db", str(db)],
}


@pytest.mark.parametrize("tables", TABLES.values(), ids=TABLES.keys())
@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
def test_a_duckdb_file_of_other_tables_is_a_usage_mistake_in_one_line(
        tmp_path: Path, capfd: pytest.CaptureFixture[str], tables: list[str], command) -> None:
    db = tmp_path / "other.duckdb"
    con = duckdb.connect(str(db))
    for sql in tables:
        con.execute(sql)
    con.close()
    wl = tmp_path / "workload.yaml"
    wl.write_text(WORKLOAD)
    assert main(command(db, wl)) == 2
    err = capfd.readouterr().err.strip()
    assert "Traceback" not in err and "^^^" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert f"--db {db}: its tables are not the analyzer's (" in lines[0], err
    assert "give the analyzer's DuckDB file (PODTAX_ANALYZER_DB)" in lines[0], err


# A file of an older podtax version, as it was: the analyzer adds what it lacks when it opens it (schema.sql), but
# `--db` reads it read-only, as it is. It was told 'its tables are not the analyzer's ... give the analyzer's DuckDB
# file' (review r2 of 6e2730c), though it is the analyzer's own file of an older version.
OLDER = {
    "phases-without-bounds": ["ALTER TABLE phases DROP COLUMN lower_bound",  # before 0a6f3d33
                              "ALTER TABLE phases DROP COLUMN upper_bound"],
    "no-phases-table": ["DROP TABLE phases"],  # before d3635038
}
LACKS = {"phases-without-bounds": "phases.lower_bound, phases.upper_bound", "no-phases-table": "the table phases"}
SYNTH_WORKLOAD = ("duration_s: 600\nclasses:\n  - {test: sysbench-cpu, params: threads=4 time=10, rate_per_s: 0.01, "
                  "runtime_s: 60, requests: {cpu: \"1\", memory: 1Gi}}\n")
SYNTH_COMMANDS = {
    "report": lambda db, wl: ["report", "synthetic", "--db", str(db)],
    "simulate": lambda db, wl: ["simulate", "--campaign", "synthetic", "--workload", str(wl), "--db", str(db)],
}


@pytest.mark.parametrize("older", OLDER.keys())
@pytest.mark.parametrize("command", SYNTH_COMMANDS.values(), ids=SYNTH_COMMANDS.keys())
def test_a_file_of_an_older_podtax_version_says_so_and_how_to_bring_it_up_to_date(
        tmp_path: Path, capfd: pytest.CaptureFixture[str], older: str, command) -> None:
    db = tmp_path / "older.duckdb"
    con = open_db(db)
    rng = np.random.default_rng(2)
    insert_cells(con, [CellSpec(n, SideSpec(lognormal(rng, 1000, 0.01, 12)), SideSpec(lognormal(rng, s, 0.01, 12)),
                                metric="events_per_second") for n, s in (("fast", 1200), ("slow", 900))])
    for sql in OLDER[older]:
        con.execute(sql)
    con.close()
    wl = tmp_path / "workload.yaml"
    wl.write_text(SYNTH_WORKLOAD)
    assert main(command(db, wl)) == 1
    err = capfd.readouterr().err.strip()
    assert "Traceback" not in err and "not the analyzer's" not in err, err
    [line] = err.splitlines()
    assert (f"--db {db}: a file of an older podtax version, read as it is (it lacks {LACKS[older]}): start this "
            "version's analyzer on it once (PODTAX_ANALYZER_DB), which adds them, then run this again") in line, err
    held, store = open_store(db, None)  # as the analyzer opens it at start: schema.sql adds what it lacks
    store.close()
    if held is not None:
        held.release()
    assert main(command(db, wl)) == 0, capfd.readouterr().err


def _made_before_tool_arch(db: Path) -> None:
    """A file as the analyzer made it before 3a2d7335: the real Store's tables, runs without tool_arch."""
    Store(db).close()
    con = duckdb.connect(str(db))
    rng = np.random.default_rng(3)
    insert_cells(con, [CellSpec(n, SideSpec(lognormal(rng, 1000, 0.01, 12)), SideSpec(lognormal(rng, s, 0.01, 12)),
                                metric="events_per_second") for n, s in (("fast", 1200), ("slow", 900))])
    con.execute("ALTER TABLE runs DROP COLUMN tool_arch")
    con.close()


def _runs_columns(db: Path) -> list[str]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [r[0] for r in con.execute("DESCRIBE runs").fetchall()]
    finally:
        con.close()


@pytest.mark.parametrize("command", SYNTH_COMMANDS.values(), ids=SYNTH_COMMANDS.keys())
def test_a_file_made_before_runs_tool_arch_is_read_as_it_is_and_the_analyzer_adds_it(
        tmp_path: Path, capfd: pytest.CaptureFixture[str], command) -> None:
    """3a2d7335 read runs.tool_arch, so every file made before it failed `--db` (exit 1, 'a file of an older podtax
    version ... (it lacks runs.tool_arch)'; review r9): its runs name no architecture, so they are compared with none
    (read-only: schema.sql's ALTER does not run). The analyzer's start (open_store) adds the column."""
    db = tmp_path / "older.duckdb"
    _made_before_tool_arch(db)
    wl = tmp_path / "workload.yaml"
    wl.write_text(SYNTH_WORKLOAD)
    assert main(command(db, wl)) == 0, capfd.readouterr().err
    out, err = capfd.readouterr()
    assert "older podtax version" not in err and "Traceback" not in err, err
    assert "CONFOUNDED" not in out, out
    assert "tool_arch" not in _runs_columns(db)  # read as it is
    held, store = open_store(db, None)  # as the analyzer opens it at start: schema.sql adds runs.tool_arch
    store.close()
    if held is not None:
        held.release()
    assert "tool_arch" in _runs_columns(db)
    assert main(command(db, wl)) == 0, capfd.readouterr().err
