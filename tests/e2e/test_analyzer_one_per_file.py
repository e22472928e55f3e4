"""Two analyzers starting at once on the same empty DuckDB file (as a failed first start leaves it). Each removed the
empty file before DuckDB opened it (test_analyzer_empty_file.py), so the second could remove it under the first:
then it said '[Errno 2] No such file or directory: ...: fix it' (10 of 100 rounds of two processes started on a
barrier), or, had the first's DuckDB just created the file, removed that one and ran on a database of its own. Now
an analyzer locks `<db>.lock` before it looks at the file and holds it until it stops: the second is refused at
start, naming the first's PID and what to do."""

from __future__ import annotations

import os
from pathlib import Path

from podtax import natsserver
from podtax.config import is_duckdb_file

from tests.e2e.test_analyzer_empty_file import SAID, analyzer, refusal, serves, stop


def _files(pid: int, db: Path) -> list[str]:
    """What the process's open files at `db` point to (a removed file ends with ' (deleted)')."""
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target == str(db) or target == f"{db} (deleted)":
            out.append(target)
    return out


def test_a_second_analyzer_on_the_same_file_is_refused_naming_the_first(tmp_path: Path, nats_url: str) -> None:
    db = tmp_path / "podtax.duckdb"
    db.touch()  # what a first start that failed as DuckDB created the file leaves
    ports = [natsserver.free_port(), natsserver.free_port()]
    procs = [analyzer(db, nats_url, port) for port in ports]
    try:
        up = [serves(proc, port) for proc, port in zip(procs, ports)]
        assert sorted(up) == [False, True], [stop(p) for p in procs]
        first, second = (procs[0], procs[1]) if up[0] else (procs[1], procs[0])
        assert refusal(second) == SAID.format(db=db) + (
            f"another analyzer holds it (PID {first.pid}; lock file {db}.lock): only one analyzer may use a file; "
            "stop it, or name another file (podtax up: another --data-dir)")
        assert _files(first.pid, db) == [str(db)]  # the file at the path, not one removed under it
        assert is_duckdb_file(db)
        third = analyzer(db, nats_url, natsserver.free_port())  # once it serves, the same
        assert refusal(third).startswith(SAID.format(db=db) + f"another analyzer holds it (PID {first.pid};")
    finally:
        errs = [stop(p) for p in procs]
    assert all("Traceback" not in e for e in errs), errs
