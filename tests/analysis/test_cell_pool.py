"""cell_pool.analyze_all: the cells spread over worker processes give exactly the serial analyses, in order;
small inputs stay in the calling thread; no worker outlives the call; it works from asyncio.to_thread."""

from __future__ import annotations

import asyncio
import importlib.machinery
import multiprocessing
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest
from analysis_synth import CellSpec, SideSpec, insert_cells, lognormal
from podtax_analyzer import cell_pool
from podtax_analyzer.cell_analysis import analyze
from podtax_analyzer.celldata import load_cells


@pytest.fixture
def cells(con):
    rng = np.random.default_rng(4)
    specs = []
    for i in range(cell_pool.MIN_CELLS + 6):
        host = lognormal(rng, 1000, 0.02, 14)
        if i % 9 == 0:
            host[3] = 1500.0  # an outlier now and then
        pod = lognormal(rng, 990, 0.02, 12)
        if i == 1:  # one run a side at the other side's level (two machines 9/1 and 1/9): Analysis.lone_outliers
            host, pod = np.append(host[:13], 350.0), np.append(pod[:11] * 0.35, 1000.0)
        specs.append(CellSpec(f"node-{i:03d}", SideSpec(host), SideSpec(pod)))
    # a metric its tool's window sets (templates.set_by_params): no verdict, in a worker or not (Analysis.set_by)
    specs.append(CellSpec("node-hd", SideSpec(np.full(6, 3.0)), SideSpec(np.full(6, 3.01)), test="hdparm",
                          params={}, metric="disk_read_time", unit="s", higher_is_better=False, tool="hdparm"))
    insert_cells(con, specs)
    return load_cells(con, "synthetic")


def _serial(cells):
    return [analyze(c, threshold=0.01, seed=5) for c in cells]


def _same(got, want) -> None:
    assert [a.cell.id for a in got] == [a.cell.id for a in want]
    for a, b in zip(got, want, strict=True):
        assert a.fields == b.fields
        assert a.outlier_at == b.outlier_at
        assert a.lone_outliers == b.lone_outliers
        assert a.set_by == b.set_by


def _server_children() -> list[int]:
    """Live (not zombie) processes forked by multiprocessing's fork server."""
    from multiprocessing import forkserver

    server = forkserver._forkserver._forkserver_pid
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if server and int(stat[1]) == server and stat[0] != "Z":
                out.append(int(d.name))
    return out


def test_the_pool_gives_the_serial_analyses_in_order_and_leaves_no_worker(cells, monkeypatch):
    monkeypatch.setenv(cell_pool.WORKERS_ENV, "2")
    got = cell_pool.analyze_all(cells, threshold=0.01, seed=5)
    _same(got, _serial(cells))
    assert any(a.outlier_at for a in got) and any(a.lone_outliers for a in got)
    for _ in range(100):  # the fork server reaps its children asynchronously
        if not _server_children():
            break
        time.sleep(0.05)
    assert _server_children() == []
    assert multiprocessing.active_children() == []


def test_the_pool_works_from_a_thread_of_an_event_loop(cells, monkeypatch):
    monkeypatch.setenv(cell_pool.WORKERS_ENV, "2")

    async def run():
        return await asyncio.to_thread(cell_pool.analyze_all, cells, threshold=0.01, seed=5)

    _same(asyncio.run(run()), _serial(cells))


class _NoPool:
    """Stand-in for ProcessPoolExecutor (labelled test double): fails if a pool is started."""

    def __init__(self, *args, **kwargs):
        raise AssertionError("a pool was started for a small input")


def test_small_inputs_and_one_worker_stay_in_the_calling_thread(cells, monkeypatch):
    monkeypatch.setattr(cell_pool, "ProcessPoolExecutor", _NoPool)
    monkeypatch.setenv(cell_pool.WORKERS_ENV, "2")
    small = cells[: cell_pool.MIN_CELLS - 1]
    _same(cell_pool.analyze_all(small, threshold=0.01, seed=5), _serial(small))
    monkeypatch.setenv(cell_pool.WORKERS_ENV, "1")
    _same(cell_pool.analyze_all(cells, threshold=0.01, seed=5), _serial(cells))


def test_workers_setting(monkeypatch):
    monkeypatch.setenv(cell_pool.WORKERS_ENV, "0")
    assert cell_pool.workers() == 0
    monkeypatch.setenv(cell_pool.WORKERS_ENV, "3")
    assert cell_pool.workers() == 3
    monkeypatch.setenv(cell_pool.WORKERS_ENV, "many")
    assert 1 <= cell_pool.workers() <= len(os.sched_getaffinity(0))
    monkeypatch.delenv(cell_pool.WORKERS_ENV)
    assert 1 <= cell_pool.workers() <= len(os.sched_getaffinity(0))


def test_a_worker_starts_with_what_every_cell_needs_imported(cells, monkeypatch):
    """scipy.stats (imported lazily by the statistics) and, when this process's main module is a script, the
    analyzer's entry point (which the podtax-analyzer console script imports, and multiprocessing runs again in
    every worker) are imported once in the fork server: a worker of any call has them before its first task,
    instead of importing them (0.45-0.55 s of CPU each)."""
    monkeypatch.setenv(cell_pool.WORKERS_ENV, "2")
    cell_pool.analyze_all(cells, threshold=0.01, seed=5)  # starts the fork server, as the analyzer's first table
    ctx = multiprocessing.get_context("forkserver")  # the same fork server: one per process
    names = ("scipy.stats", "podtax_analyzer.comparisons", "podtax_analyzer.__main__", "podtax_analyzer.service")
    with cell_pool.ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        found = pool.submit(eval, f"[n for n in {names!r} if n in __import__('sys').modules]").result()
    script = "podtax_analyzer.__main__" in cell_pool.preload(sys.modules["__main__"])  # pytest's console script
    assert found == (list(names) if script else ["scipy.stats"])


@pytest.mark.parametrize(
    ("spec", "entry_point"),
    [
        (None, True),  # a main script (the podtax-analyzer console script): run again in every worker
        ("podtax_analyzer.__main__", False),  # python -m podtax_analyzer (podtax report --db): not run again
        ("pytest.__main__", False),
        ("some.tool", True),  # python -m some.tool: imported again by name in every worker
    ],
)
def test_the_entry_point_is_preloaded_only_where_workers_import_the_main_module(spec, entry_point):
    main = types.ModuleType("__main__")
    main.__spec__ = None if spec is None else importlib.machinery.ModuleSpec(spec, None)
    got = cell_pool.preload(main)
    assert got[:2] == ["podtax_analyzer.cell_analysis", "scipy.stats"]
    assert ("podtax_analyzer.__main__" in got) is entry_point
    assert ("podtax_analyzer.comparisons" in got) is entry_point


_M_PACKAGE = """
import os, sys
import podtax_analyzer.__main__  # noqa: F401  (python -m podtax_analyzer has it loaded as its main module)
from analysis_synth import open_db
from podtax_analyzer import cell_pool
from podtax_analyzer.celldata import load_cells
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
os.environ[cell_pool.WORKERS_ENV] = "2"
cell_pool.analyze_all(load_cells(open_db(sys.argv[1]), "synthetic"), threshold=0.01, seed=5)
with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("forkserver")) as pool:
    names = ("scipy.stats", "podtax_analyzer.comparisons", "podtax_analyzer.__main__")
    print(pool.submit(eval, f"[n for n in {names!r} if n in __import__('sys').modules]").result())
"""


def test_a_m_run_does_not_preload_the_entry_point(cells, con, db_path, tmp_path):
    """`python -m podtax_analyzer report` (what `podtax report --db` runs): multiprocessing does not run a
    package's __main__ again in the workers, so the fork server has no reason to import the whole service
    (measured: the first call took 1.7x as long with it). A real -m run of a package like it, in its own process."""
    con.close()  # the cells stay in the file, for the other process
    (tmp_path / "mrun").mkdir()
    (tmp_path / "mrun" / "__init__.py").write_text("")
    (tmp_path / "mrun" / "__main__.py").write_text(_M_PACKAGE)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(Path(__file__).parent), *sys.path])
    done = subprocess.run([sys.executable, "-m", "mrun", str(db_path)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['scipy.stats']"


_BOOM = """
import os, sys
if __name__ == "__main__":
    from analysis_synth import open_db
    from podtax_analyzer import cell_pool
    from podtax_analyzer.celldata import load_cells
    cells = load_cells(open_db(sys.argv[1]), "synthetic")
    os.environ[cell_pool.WORKERS_ENV] = "2"
    cell_pool._PRELOAD = cell_pool._PRELOAD + ["boommod"]  # FAULT INJECTION: a preload that fails
    for call in range(2):
        try:
            print(call, "ok", len(cell_pool.analyze_all(cells, threshold=0.01, seed=5)))
        except BaseException as exc:
            print(call, "raised", type(exc).__name__)
"""


def test_a_fork_server_that_died_at_its_preload_leaves_the_analysis_serial(cells, con, db_path, tmp_path):
    """FAULT INJECTION (labelled): a module the fork server preloads raises ValueError at import, which kills it
    (multiprocessing catches only ImportError there); the call that started it got EOFError from its socket,
    the next ConnectionRefusedError. Both must fall back to analyzing in the calling process."""
    con.close()  # the cells stay in the file, for the other process
    (tmp_path / "boommod.py").write_text('raise ValueError("boom at import")\n')
    (tmp_path / "boom.py").write_text(_BOOM)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(Path(__file__).parent), *sys.path])
    done = subprocess.run([sys.executable, str(tmp_path / "boom.py"), str(db_path)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    n = len(cells)
    assert done.stdout.splitlines() == [f"0 ok {n}", f"1 ok {n}"], done.stderr
    assert "worker processes unavailable" in done.stderr
