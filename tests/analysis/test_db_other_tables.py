"""`--db` naming a DuckDB file whose tables are not the analyzer's (another program's, or an empty database): a
usage mistake, one line naming the file and the fix, exit 2. Before, `podtax report --db` printed the last line of
the analyzer's traceback ('error:        ^^^^^^^^', exit 1) and `podtax simulate --db` a traceback (exit 1).
Real DuckDB files, real CLI entry points (report runs the analyzer's command in a child process)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from podtax.cli.main import main

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
