"""fio's JSON and normal text of ONE run give the same metric names and units (left-out of stop 35: was the
text's total-latency line, `lat (usec): min=..., avg=...`, stored by the JSON reader only?). Checked on real
`--output-format=json,normal` captures (tests/corpus-found, README): neither reader stores the total latency's
min/mean/max (both use it only to check clat, INCONSISTENT_LATENCY); both store its percentiles with
`--lat_percentiles=1` (`<dir>_lat_p<n>`), and the clat figures, per-job prefixes and group totals alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import fio, fio_text

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
CAPTURES = ["fio-3.33-randrw-libaio-lat-percentiles-json-normal.log", "fio-3.33-two-groups-json-normal.log"]


def _split(text: str) -> tuple[str, str]:
    """The JSON report (from its `{` line to its `}` line) and the text around it (header lines, then the report)."""
    start, end = text.index("\n{\n") + 1, text.index("\n}\n") + 3
    return text[start:end], text[:start] + text[end:]


@pytest.mark.parametrize("name", CAPTURES)
def test_json_and_text_of_one_run_name_the_same_metrics(name: str) -> None:
    report, normal = _split((FOUND / name).read_text(encoding="utf-8"))
    from_json, from_text = fio.parse(report), fio_text.parse(normal)
    units = {m.name: m.unit for m in from_json.metrics}
    assert {m.name: m.unit for m in from_text.metrics} == units
    assert len(units) >= 48
    for m in from_text.metrics:  # the same run: the text is the JSON rounded (IOPS=13.6k, percentiles in whole µs)
        exact = from_json.metric(m.name).value
        assert m.value == pytest.approx(exact, rel=0.01, abs=1.0), m.name


def test_the_total_latency_is_kept_as_percentiles_only() -> None:
    report, normal = _split((FOUND / CAPTURES[0]).read_text(encoding="utf-8"))
    for parsed in (fio.parse(report), fio_text.parse(normal)):
        lat = sorted(m.name for m in parsed.metrics if "_lat_" in m.name and "_clat_" not in m.name)
        assert "read_lat_p99" in lat and "write_lat_p50" in lat
        assert all("_lat_p" in n for n in lat), lat


def test_json_and_text_of_one_run_flag_staggered_jobs_alike() -> None:
    """Two size-bound jobs of one group ran 10 and 8 ms (audit hT, a real capture of fio 3.33 here): the text's
    group summary (16 MiB over 10 ms, 1638400 KiB/s) is below the sum of the jobs' rates (1843200), flagged
    STAGGERED; the JSON of the same run gave the same sum unflagged. Both flag it now, with the same figure."""
    text = (FOUND / "fio-3.33-two-jobs-one-group-json-normal.log").read_text(encoding="utf-8")
    report, normal = _split(text)
    for parsed in (fio.parse(report), fio_text.parse(normal)):
        assert parsed.values()["read_bw"] == 1843200
        staggered = [f for f in parsed.flags if f.startswith("STAGGERED: ")]
        assert len(staggered) == 1 and "bw=1638400 KiB/s" in staggered[0], parsed.flags
