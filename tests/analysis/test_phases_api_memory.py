"""GET /api/campaigns/{c}/phases built every row as a model in memory before answering: 100,000 rows (its default
limit) took 260 MB more, and its maximum, 1,000,000, more than the analyzer's 2 GiB limit in deploy/k8s, so one read
(open by default) could have the only writer killed (audit hS). The rows are now streamed in batches. A real DuckDB
file, the real app served by uvicorn, a streaming client; Python's own allocations traced."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import httpx
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import serve
from tests.report.test_report_hostile import result_events

ROWS = 50_000


def test_phase_rows_are_streamed(tmp_path: Path) -> None:
    store = Store(tmp_path / "podtax.duckdb")
    try:
        store.write_batch(result_events("cp", [1.0], []))
        store.cursor().execute("""
            INSERT INTO phases SELECT 'cp-0', 'cp', 'local', 'node-1', 'kubernetes', 'kubernetes', 'volume-churn',
                   'count=100', 'claim-' || i, 'bound', i * 0.001, 0.5, false, i % 7 = 0 FROM range(?) t(i)""", [ROWS])
        with serve(create_app(store)) as url:
            first = httpx.get(f"{url}/api/campaigns/cp/phases", params={"limit": 2}).json()
            tracemalloc.start()
            try:
                size = 0
                with httpx.stream("GET", f"{url}/api/campaigns/cp/phases", timeout=120) as resp:
                    assert resp.status_code == 200
                    for chunk in resp.iter_bytes():
                        size += len(chunk)
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
    finally:
        store.close()
    assert first == [{"run_id": "cp-0", "cluster": "local", "node": "node-1", "env": "kubernetes",
                      "backend": "kubernetes", "test": "volume-churn", "params": "count=100", "object": f"claim-{i}",
                      "phase": "bound", "start_s": i * 0.001, "latency_s": 0.5, "lower_bound": False,
                      "upper_bound": i % 7 == 0, "status": "ok"} for i in range(2)]
    assert size > ROWS * 200  # every row was sent
    assert peak < 32 << 20, f"{peak / 2**20:.0f} MiB held to answer {ROWS} rows ({size / 2**20:.0f} MiB)"
