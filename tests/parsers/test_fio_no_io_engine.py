"""fio's cpuio engine burns CPU and does no I/O (fio 3.33 on this project's Debian 12 VM, sweep hB). fio prints
`cpu (noop): ioengine=cpuio, cpuload=50, cpucycle=50000` on stdout, then a report whose `issued rwts: total=10,...`
counts its loops as reads without bytes: the JSON report's read block has `total_ios` 10, `io_bytes` 0, `runtime`
0, `iops` 0. The JSON was read as read_iops 0 and read_bw 0 KiB/s (a wrong figure: the slowest machine), the text
refused as damaged ("issued read I/O but has no `read:` line"), and a cpuio job beside an I/O job (CPU load under
the I/O) refused the text and added a zero-rate job to the JSON. The other captures were read right and were not
in the corpus: each figure equals the one the log prints."""

from __future__ import annotations

import pytest
from podtax.parsers import ParseFailure, fio, parse_text

from tests.parsers.test_found_captures import CORPUS, parse

CPUIO = "cpu (noop): ioengine=cpuio, cpuload=50, cpucycle=50000"


@pytest.mark.parametrize("name", ["fio-3.33-cpuio.json", "fio-3.33-cpuio-text.log"])
def test_a_cpuio_run_alone_is_refused_as_no_io_not_as_zero_or_damaged(name: str) -> None:
    with pytest.raises(ParseFailure) as failure:
        parse(name)
    assert failure.value.reason == "unknown-format"
    assert "does no I/O" in failure.value.detail and CPUIO in failure.value.detail
    assert "damaged" not in failure.value.detail


def test_a_cpuio_json_cut_from_its_noop_line_still_names_the_engine() -> None:
    text = (CORPUS / "fio-3.33-cpuio.json").read_text(encoding="utf-8")
    with pytest.raises(ParseFailure, match=r"does no I/O \(`ioengine=cpuio`\)"):
        fio.parse(text[text.index("{"):])


def test_an_io_job_beside_a_cpuio_job_in_text_reads_the_io_job_and_flags_the_load() -> None:
    parsed = parse("fio-3.33-io-beside-cpuio-text.log")
    values = parsed.values()
    assert {k: values[k] for k in ("read_iops", "read_bw", "read_clat_min", "read_clat_mean", "read_clat_max",
                                   "read_clat_p50", "read_clat_p99_99")} == {
        "read_iops": 10300, "read_bw": 40.4 * 1024, "read_clat_min": 13, "read_clat_mean": 95.96,
        "read_clat_max": 11840, "read_clat_p50": 65, "read_clat_p99_99": 10028}
    assert not any(k.startswith("burn") for k in values)
    assert parsed.echoed["ioengine"] == "psync"
    assert any(f.startswith("PARAM_MISMATCH: ioengine:") and "burn (noop)" in f for f in parsed.flags)


def test_an_io_job_beside_a_cpuio_job_in_json_has_no_zero_rate_job() -> None:
    parsed = parse("fio-3.33-io-beside-cpuio.json")
    values = parsed.values()
    assert values["read_iops"] == values["io_read_iops"] == 12508.491508
    assert values["read_bw"] == values["io_read_bw"] == 50033
    assert values["io_read_clat_mean"] == pytest.approx(79.226748742)
    assert values["io_read_clat_p50"] == pytest.approx(49.92)
    assert not any(k.startswith("burn") for k in values)
    assert "ioengine" not in parsed.echoed  # the io job echoes none (psync by default); cpuio's is not its
    assert any(f.startswith("PARAM_MISMATCH: ioengine:") for f in parsed.flags)


def test_a_job_without_its_direction_line_and_no_noop_header_is_still_damaged() -> None:
    text = (CORPUS / "fio-3.33-io-beside-cpuio-text.log").read_text(encoding="utf-8").replace(CPUIO.replace(
        "cpu", "burn", 1), "")
    with pytest.raises(ParseFailure, match="the log is damaged"):
        parse_text(text, "fio")


@pytest.mark.parametrize(("name", "expected"), [
    # `Description  : [host baseline run]` between the job line and its figures
    ("fio-3.33-description-text.log", {"read_iops": 6089, "read_bw": 23.8 * 1024, "read_clat_min": 48,
                                       "read_clat_mean": 163.34, "read_clat_max": 10262, "read_clat_p50": 69,
                                       "read_clat_p99_99": 10290}),
    # `BW=36.0TiB/s` and `clat (nsec)` of the null engine with 16 MiB blocks
    ("fio-3.33-null-16M-tib-text.log", {"read_iops": 2357e3, "read_bw": 36.0 * 1024 ** 3, "read_clat_min": 0.014,
                                        "read_clat_mean": 0.04952, "read_clat_max": 12078, "read_clat_p50": 0.017,
                                        "read_clat_p99_99": 0.163}),
    # `--percentile_list=50:99.5:99.999`: `| 50.000th=[   69], 99.500th=[ 4424], 99.999th=[10552]`
    ("fio-3.33-percentile-list-text.log", {"read_iops": 5474, "read_bw": 21.4 * 1024, "read_clat_min": 45,
                                           "read_clat_mean": 181.77, "read_clat_max": 10529, "read_clat_p50": 69,
                                           "read_clat_p99_5": 4424, "read_clat_p99_999": 10552}),
    # `--slat_percentiles=1 --lat_percentiles=1`: a `slat percentiles` block before clat's (not read as clat)
    ("fio-3.33-slat-percentiles-libaio-text.log", {"read_iops": 14.3e3, "read_bw": 55.8 * 1024,
                                                   "read_clat_min": 1.266, "read_clat_mean": 210.24347,
                                                   "read_clat_max": 4990.6, "read_clat_p1": 143, "read_clat_p50": 159,
                                                   "read_lat_p1": 192}),
    # `--ss=iops:50%`: stopped at steady state after 897 ms, a `steadystate  : attained=yes` line
    ("fio-3.33-steadystate-text.log", {"read_iops": 8141, "read_bw": 31.8 * 1024, "read_clat_min": 48,
                                       "read_clat_mean": 122.09, "read_clat_max": 7652, "read_clat_p50": 70,
                                       "read_clat_p99_99": 7635}),
])
def test_unusual_text_reports_read_as_printed(name: str, expected: dict[str, float]) -> None:
    values = parse(name).values()
    assert {k: values[k] for k in expected} == pytest.approx(expected)
    assert "read_slat_p1" not in values
