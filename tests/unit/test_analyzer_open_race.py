"""Two analyzers opening the same empty DuckDB file at once (as a failed first start leaves it), in two real
processes released together on a barrier, round after round on a new empty file. Each removed the empty file before
DuckDB opened it (service.empty_left), so in 10 of 100 rounds the second removed it under the first and said
'[Errno 2] No such file or directory: ...: fix it' (had the first's DuckDB just created the file, it removed that
one and went on with a database of its own). Now the lock beside the file comes first (service.open_store): every
round one opens it, the other is refused naming the first's PID, and the file at the path is a database."""

from __future__ import annotations

import multiprocessing as mp
import os
from pathlib import Path
from typing import Any

from podtax.config import is_duckdb_file

ROUNDS = 40


def _opener(paths: list[Path], barrier: Any, out: Any) -> None:
    from podtax.config import ConfigError
    from podtax_analyzer.service import open_store

    for path in paths:
        barrier.wait(60)
        held, store = None, None
        try:
            held, store = open_store(path, None)
            out.put((str(path), os.getpid(), "opened", ""))
        except ConfigError as exc:
            out.put((str(path), os.getpid(), "refused", str(exc)))
        except Exception as exc:  # noqa: BLE001 - said to the test
            out.put((str(path), os.getpid(), "failed", f"{type(exc).__name__}: {exc}"))
        barrier.wait(60)  # both have tried before either lets go
        if store is not None:
            store.close()
        if held is not None:
            held.release()


def test_two_analyzers_opening_one_empty_file_at_once(tmp_path: Path) -> None:
    paths = []
    for i in range(ROUNDS):
        (tmp_path / str(i)).mkdir()
        paths.append(tmp_path / str(i) / "podtax.duckdb")
        paths[-1].touch()
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_opener, args=(paths, barrier, out)) for _ in range(2)]
    for p in procs:
        p.start()
    try:
        got = [out.get(timeout=120) for _ in range(2 * ROUNDS)]
    finally:
        for p in procs:
            p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    bad = []
    for path in paths:
        outcomes = sorted((what, pid, text) for where, pid, what, text in got if where == str(path))
        if [what for what, *_ in outcomes] != ["opened", "refused"]:
            bad.append(outcomes)
            continue
        (_, first, _), (_, _, refusal) = outcomes
        if f"(PID {first}" not in refusal or "fix it" in refusal:  # names the first, says what to do
            bad.append(outcomes)
        assert is_duckdb_file(path)
    assert bad == [], f"{len(bad)} of {ROUNDS} rounds: {bad[:3]}"
