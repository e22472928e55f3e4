"""The list routes built every row as a model in memory before answering: GET /api/campaigns/{c}/phases grew the
analyzer by 264 MB at its default limit (100,000 rows) and its maximum, 1,000,000, exceeds the analyzer's 2 GiB
limit in deploy/k8s, so one read (open by default) could get the only writer killed; /api/runs and /api/results
(100,000 at most) by 174 MB, and concurrent reads add up (audit hS). They stream their rows a batch at a time
(rowstream). A real DuckDB file, the real app served by uvicorn, a streaming client; Python's own allocations traced."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator

import httpx
import numpy as np
import pytest
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.analysis.analysis_synth import CellSpec, SideSpec, insert_cells
from tests.report.conftest import serve
from tests.report.test_report_hostile import result_events

RUNS, PHASES = 40_000, 50_000


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = Store(tmp_path_factory.mktemp("rows") / "podtax.duckdb")
    insert_cells(store.cursor(), [CellSpec("n1", SideSpec(np.arange(1.0, RUNS / 2 + 1)),
                                           SideSpec(np.arange(1.0, RUNS / 2 + 1)), campaign="c1")])
    store.write_batch(result_events("cp", [1.0], []))
    store.cursor().execute("""
        INSERT INTO phases SELECT 'cp-0', 'cp', 'local', 'node-1', 'kubernetes', 'kubernetes', 'volume-churn',
               'count=100', 'claim-' || i, 'bound', i * 0.001, 0.5, false, i % 7 = 0 FROM range(?) t(i)""", [PHASES])
    try:
        with serve(create_app(store)) as u:
            yield u
    finally:
        store.close()


def _streamed(url: str, limit: int) -> tuple[int, int]:
    """(bytes answered, peak bytes traced meanwhile) of GET `url`, read a chunk at a time."""
    tracemalloc.start()
    try:
        size = 0
        with httpx.stream("GET", url, params={"limit": limit}, timeout=120) as resp:
            assert resp.status_code == 200
            for chunk in resp.iter_bytes():
                size += len(chunk)
        return size, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("path", ["/api/runs", "/api/results"])
def test_runs_and_results_are_streamed(url: str, path: str) -> None:
    first = httpx.get(f"{url}{path}", params={"limit": 2}).json()
    assert len(first) == 2 and first[0]["run_id"].startswith("c1-0-")  # runs in time order, as before
    assert first[0]["campaign"] == "c1" and first[0]["params"] == {"threads": 4, "time": 10}
    size, peak = _streamed(f"{url}{path}", RUNS)
    assert size > RUNS * 150  # every row was sent
    assert peak < 24 << 20, f"{peak / 2**20:.0f} MiB held to answer {RUNS} rows ({size / 2**20:.0f} MiB)"


def test_phase_rows_are_streamed(url: str) -> None:
    first = httpx.get(f"{url}/api/campaigns/cp/phases", params={"limit": 2}).json()
    assert first == [{"run_id": "cp-0", "cluster": "local", "node": "node-1", "env": "kubernetes",
                      "backend": "kubernetes", "test": "volume-churn", "params": "count=100", "object": f"claim-{i}",
                      "phase": "bound", "start_s": i * 0.001, "latency_s": 0.5, "lower_bound": False,
                      "upper_bound": i % 7 == 0, "status": "ok"} for i in range(2)]
    size, peak = _streamed(f"{url}/api/campaigns/cp/phases", PHASES)
    assert size > PHASES * 200  # every row was sent
    assert peak < 24 << 20, f"{peak / 2**20:.0f} MiB held to answer {PHASES} rows ({size / 2**20:.0f} MiB)"
