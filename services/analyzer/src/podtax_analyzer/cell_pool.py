"""The cells of a comparison are independent: analyze them on every core.

``analyze_all`` returns exactly what ``[analyze(c, ...) for c in cells]`` returns, in the same order:
each cell's bootstrap is seeded from the seed and the cell's id (never from the worker), and the chunks
come back in order. Below ``MIN_CELLS`` cells, with under two idle cores, or with ``PODTAX_ANALYZER_WORKERS``
set to 0 or 1, it runs in the calling thread: starting workers costs about 0.1 s, more than it saves
there, and on cores that other processes keep busy they only add that cost.

The workers are forked from multiprocessing's fork server (a single-threaded process started once, with the
analysis modules, scipy.stats and, for a main script, the analyzer's entry point already imported: preload()),
never from the caller, which may run DuckDB's and asyncio's threads; each call starts its workers and joins them
before it returns, so no process outlives it (the fork server itself ends with the caller). Where no process can be
started (a daemon process, no /dev/shm) the cells are analyzed in the calling thread, and so they are inside
a worker. As with any multiprocessing start method but fork, a worker imports the caller's main script (not
a ``-m`` module), so a script calling this must keep its work under ``if __name__ == "__main__":``.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from types import ModuleType

from podtax import templates
from podtax.cores import affinity_cores, usable_cores

from podtax_analyzer.cell_analysis import Analysis, analyze
from podtax_analyzer.celldata import CellData

MIN_CELLS = 64
CHUNKS_PER_WORKER = 4
WORKERS_ENV = "PODTAX_ANALYZER_WORKERS"
# Imported once in the fork server rather than by every worker of every call (each was 0.45-0.55 s of CPU a worker,
# measured; the pool then paid nothing): scipy.stats, which the statistics import lazily (an analyzer that only stores
# never loads its ~65 MB); and what the caller's main script imports, which multiprocessing runs again in each worker
# (as __mp_main__, to find functions defined there): the podtax-analyzer console script imports
# podtax_analyzer.__main__, i.e. the whole service (the API's comparisons and `podtax-analyzer report` both).
# Under `python -m podtax_analyzer` (`podtax report --db` runs that) multiprocessing does not run the main module
# again, so the entry point is preloaded only for a main script (measured, a -m run's first call: 1.54 s with it
# preloaded for nothing, 1.07 s without; the fork server's own CPU 1.47 -> 0.93 s).
_PRELOAD = ["podtax_analyzer.cell_analysis", "scipy.stats"]
_MAIN_PRELOAD = ["podtax_analyzer.comparisons", "podtax_analyzer.__main__"]

log = logging.getLogger(__name__)


def workers() -> int:
    """Worker processes to use: PODTAX_ANALYZER_WORKERS when set (0 or 1 = none), else one per core that
    other processes leave idle, at most the usable cores (podtax.cores: the affinity, capped by a cgroup CPU
    quota such as the pod's cpu limit). The idle cores are the affinity's less the 1-minute load average less two
    (this process and its own last workers count in it: measured on 2 cores, the pool stopped paying at a load of
    about 3): the load average is the whole node's, so it is set against the node's cores the affinity lists, not
    against the quota (a pod limited to 2 cores on a 64-core node with a load of 10 still has 2 idle cores)."""
    raw = os.environ.get(WORKERS_ENV, "").strip()
    if raw:
        try:
            return max(0, int(raw))
        except ValueError:
            log.warning("%s=%r is not a number of workers; using the idle cores", WORKERS_ENV, raw)
    cores = affinity_cores()
    try:
        idle = cores - max(0.0, os.getloadavg()[0] - 2.0)
    except OSError:  # no load average on this system: assume the cores are free
        idle = float(cores)
    return max(1, min(usable_cores(), int(idle + 0.5)))


def preload(main: ModuleType) -> list[str]:
    """Modules the fork server imports for the caller whose main module is ``main``: the entry point too unless
    multiprocessing will not run ``main`` again in the workers (a ``-m`` run of a package's ``__main__``)."""
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name.endswith(".__main__"):
        return list(_PRELOAD)
    return _PRELOAD + _MAIN_PRELOAD


Rest = tuple[dict, dict, list, templates.Fixed | None, str | None]  # an Analysis's fields after its cell, in order


def _chunk(cells: list[CellData], threshold: float, seed: int) -> list[Rest]:
    """Each cell's Analysis but the cell (the parent has it): every other field of Analysis, in its order. Before,
    `set_by` was left out, so a metric the parameters set got an ordinary verdict when its cells went to workers."""
    out = []
    for c in cells:
        a = analyze(c, threshold=threshold, seed=seed)
        out.append((a.fields, a.flag_details, a.outlier_at, a.set_by, a.lone_outliers))
    return out


def _split(cells: list[CellData], parts: int) -> list[list[CellData]]:
    size = -(-len(cells) // parts)
    return [cells[i:i + size] for i in range(0, len(cells), size)]


def analyze_all(cells: list[CellData], *, threshold: float, seed: int) -> list[Analysis]:
    """analyze() of every cell, in order, spread over worker processes when it pays (module doc)."""
    n = workers()
    in_worker = multiprocessing.parent_process() is not None or sys.modules["__main__"].__name__ == "__mp_main__"
    if n < 2 or len(cells) < MIN_CELLS or in_worker:
        return [analyze(c, threshold=threshold, seed=seed) for c in cells]
    try:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(preload(sys.modules["__main__"]))
        chunks = _split(cells, n * CHUNKS_PER_WORKER)
        with ProcessPoolExecutor(max_workers=n, mp_context=ctx) as pool:
            done = list(pool.map(_chunk, chunks, [threshold] * len(chunks), [seed] * len(chunks)))
    # No process can be started here; or the fork server died (a preloaded module raised something other than
    # ImportError: its socket closes, EOFError). BrokenPipeError and ConnectionRefusedError are OSErrors.
    except (OSError, EOFError, AssertionError, RuntimeError) as exc:
        log.warning("analyzing %d cells in one process: worker processes unavailable (%s)", len(cells), exc)
        return [analyze(c, threshold=threshold, seed=seed) for c in cells]
    results = [r for chunk in done for r in chunk]
    return [Analysis(c, *rest) for c, rest in zip(cells, results, strict=True)]
