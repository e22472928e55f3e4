"""cell_pool.analyze_all: the cells spread over worker processes give exactly the serial analyses, in order;
small inputs stay in the calling thread; no worker outlives the call; it works from asyncio.to_thread."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import time
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
        specs.append(CellSpec(f"node-{i:03d}", SideSpec(host), SideSpec(lognormal(rng, 990, 0.02, 12))))
    insert_cells(con, specs)
    return load_cells(con, "synthetic")


def _serial(cells):
    return [analyze(c, threshold=0.01, seed=5) for c in cells]


def _same(got, want) -> None:
    assert [a.cell.id for a in got] == [a.cell.id for a in want]
    for a, b in zip(got, want, strict=True):
        assert a.fields == b.fields
        assert a.outlier_at == b.outlier_at


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
    assert any(a.outlier_at for a in got)
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
    """scipy.stats (imported lazily by the statistics) and the analyzer's entry point (which the podtax-analyzer
    console script imports, and multiprocessing runs again in every worker) are imported once in the fork server:
    a worker of any call has them before its first task, instead of importing them (0.45-0.55 s of CPU each)."""
    monkeypatch.setenv(cell_pool.WORKERS_ENV, "2")
    cell_pool.analyze_all(cells, threshold=0.01, seed=5)  # starts the fork server, as the analyzer's first table
    ctx = multiprocessing.get_context("forkserver")  # the same fork server: one per process
    names = ("scipy.stats", "podtax_analyzer.comparisons", "podtax_analyzer.__main__", "podtax_analyzer.service")
    with cell_pool.ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        found = pool.submit(eval, f"[n for n in {names!r} if n in __import__('sys').modules]").result()
    assert found == list(names)
