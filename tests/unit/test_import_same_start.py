"""`podtax import` warns of rows that log one capture: one node (in any case), env, test, params and start, and the
same log bytes (a manifest giving the day only; a failure's one line): the analyzer stores them as one run and drops
the others (review r8: two failed runs printing one 'FATAL' line at a bare date were one run, unwarned). Rows of one
start whose params or bytes differ stay runs of their own, not named in that warning (review r10: it named rows never at
risk), but in another: their runs start together and the analyzer flags them OVERLAP (review r13: they got none).
The real entry point, --dry-run."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.cli.main import main

HEADER = "file,node,env,test,params,started_at,tool_version\n"
CPU = "sysbench-cpu,threads=1 max_prime=100000 events=200 time=0"
FATAL = "FATAL: Cannot allocate memory\n"


def _dry_run(tmp_path: Path, rows: list[str], capsys: pytest.CaptureFixture[str],
             logs: dict[str, str] | None = None) -> str:
    for file, text in (logs or {f: FATAL for f in ("a.log", "b.log", "c.log")}).items():
        (tmp_path / file).write_text(text)
    (tmp_path / "m.csv").write_text(HEADER + "".join(f"{row}\n" for row in rows))
    assert main(["import", "--dry-run", "--campaign", "imp", str(tmp_path / "m.csv")]) == 0
    return " ".join(capsys.readouterr().err.split())


def test_rows_of_one_capture_are_warned_of(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    said = _dry_run(tmp_path, [f"a.log,node-1,host,{CPU},2024-03-01,", f"b.log,Node-1,host,{CPU},2024-03-01,",
                               f"c.log,node-1,kubernetes,{CPU},2024-03-01,"], capsys)
    assert ("lines 2, 3: sysbench-cpu on node-1 (host) log the same bytes at one start (2024-03-01T00:00:00+00:00): "
            "stored as one run (1 dropped); give each row the time its run started") in said
    assert "lines 2, 4" not in said and "(kubernetes) log the same" not in said


def test_only_the_rows_with_the_same_bytes_and_params_are_named(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    other = "sysbench-cpu,threads=1 max_prime=20000 events=200 time=0"
    said = _dry_run(tmp_path, [f"a.log,node-1,host,{CPU},2024-03-01,", f"b.log,node-1,host,{CPU},2024-03-01,",
                               f"c.log,node-1,host,{CPU},2024-03-01,", f"d.log,node-1,host,{CPU},2024-03-01,",
                               f"e.log,node-1,host,{other},2024-03-01,"], capsys,
                    {"a.log": FATAL, "b.log": FATAL + "\n", "c.log": "FATAL: another error\n", "d.log": FATAL,
                     "e.log": FATAL})
    assert ("lines 2, 5: sysbench-cpu on node-1 (host) log the same bytes at one start (2024-03-01T00:00:00+00:00): "
            "stored as one run (1 dropped)") in said
    assert "lines 2, 3:" not in said and "lines 2, 5, 6" not in said and said.count("log the same bytes") == 1
    assert ("lines 2, 3, 4, 6: sysbench-cpu on node-1 (host) start at one time (2024-03-01T00:00:00+00:00): the "
            "analyzer flags them OVERLAP and gives no ratio; give each row the time its run started") in said
    assert said.count("start at one time") == 1


def test_rows_whose_logs_differ_at_one_start_are_warned_of_overlap(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Review r13: two runs of one node, env and test at a date-only start whose logs differ in one figure got
    no warning at all, though the analyzer flags them OVERLAP and withholds the ratio."""
    run = "CPU speed:\n    events per second:   {}\n"
    said = _dry_run(tmp_path, [f"a.log,node-1,host,{CPU},2024-03-01,", f"b.log,Node-1,host,{CPU},2024-03-01,",
                               f"c.log,node-1,kubernetes,{CPU},2024-03-01,"], capsys,
                    {"a.log": run.format("183.01"), "b.log": run.format("181.50"), "c.log": run.format("183.01")})
    assert ("lines 2, 3: sysbench-cpu on node-1 (host) start at one time (2024-03-01T00:00:00+00:00): the analyzer "
            "flags them OVERLAP and gives no ratio; give each row the time its run started") in said
    assert "log the same bytes" not in said and "(kubernetes) start at" not in said


def test_other_tests_or_starts_are_not_warned_of(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    said = _dry_run(tmp_path, [f"a.log,node-1,host,{CPU},2024-03-01,", "b.log,node-1,host,sysbench-memory,threads=1,"
                               "2024-03-01,", f"c.log,node-1,host,{CPU},2024-03-02,"], capsys)
    assert "log the same bytes" not in said and "start at one time" not in said
