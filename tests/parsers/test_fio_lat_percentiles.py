"""fio with `--lat_percentiles=1 --clat_percentiles=0` prints percentiles of the total latency (submission and
completion) and none of the completion latency; the parsers read only clat percentiles, so such a run gave no
percentile at all. Now they are read as `<dir>_lat_p<percentile>`, never under a clat name. Real captures of
one run each, JSON and normal text (tests/corpus-found, README with the commands)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_run

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
CASES = {  # capture: its read lat percentiles p50, p99, p99.9 (µs), as fio printed them
    "fio-3.33-randread-lat-percentiles-only.json": (48.384, 85.504, 618.496),  # ns in the JSON
    "fio-3.33-randread-lat-percentiles-only-text.log": (55.0, 96.0, 265.0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_total_latency_percentiles_are_read_under_their_own_name(name: str) -> None:
    parsed = parse_run("fio", (FOUND / name).read_text())
    names = [m.name for m in parsed.metrics]
    assert [parsed.metric(f"read_lat_{p}").value for p in ("p50", "p99", "p99_9")] == pytest.approx(CASES[name])
    assert not [n for n in names if n.startswith("read_clat_p")], names  # fio printed no clat percentile
    assert len([n for n in names if n.startswith("read_lat_p")]) == 17  # 1.00th to 99.99th
    assert parsed.metric("read_clat_mean") is not None  # the clat line is still read
