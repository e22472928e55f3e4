"""`podtax import` warns of rows of one node, env and test that start at one time (a manifest giving the day only):
the runs measured each other, and the analyzer stores rows whose logs are the same bytes as one run (review r8: two
failed runs printing one 'FATAL' line at a bare date were one run, unwarned). The real entry point, --dry-run."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.cli.main import main

HEADER = "file,node,env,test,params,started_at,tool_version\n"
CPU = "sysbench-cpu,threads=1 max_prime=100000 events=200 time=0"


def _dry_run(tmp_path: Path, rows: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    for file in ("a.log", "b.log", "c.log"):
        (tmp_path / file).write_text("FATAL: Cannot allocate memory\n")
    (tmp_path / "m.csv").write_text(HEADER + "".join(f"{row}\n" for row in rows))
    assert main(["import", "--dry-run", "--campaign", "imp", str(tmp_path / "m.csv")]) == 0
    return " ".join(capsys.readouterr().err.split())


def test_rows_of_one_node_env_and_test_at_one_start_are_warned_of(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    said = _dry_run(tmp_path, [f"a.log,node-1,host,{CPU},2024-03-01,", f"b.log,Node-1,host,{CPU},2024-03-01,",
                               f"c.log,node-1,kubernetes,{CPU},2024-03-01,"], capsys)
    assert ("lines 2, 3: sysbench-cpu on node-1 (host) all start at 2024-03-01T00:00:00+00:00: runs that start "
            "together measured each other (flagged OVERLAP), and those whose logs are the same bytes are stored as "
            "one run; give each row the time its run started") in said
    assert "lines 2, 4" not in said and "(kubernetes) all start" not in said


def test_other_tests_or_starts_are_not_warned_of(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    said = _dry_run(tmp_path, [f"a.log,node-1,host,{CPU},2024-03-01,", "b.log,node-1,host,sysbench-memory,threads=1,"
                               "2024-03-01,", f"c.log,node-1,host,{CPU},2024-03-02,"], capsys)
    assert "all start at" not in said
